#include "alloc/pool_budget.h"

#include <fmt/format.h>

#include <numeric>
#include <utility>

namespace gpuscale::alloc {

PoolBudget::PoolBudget(int budget, std::vector<PoolReserve> pools)
    : budget_(budget), pools_(std::move(pools)), held_(pools_.size(), 0) {}

Result<PoolBudget> PoolBudget::Make(int budget_gpus, std::vector<PoolReserve> pools) {
  if (budget_gpus < 1) return InvalidArgument("must be >= 1", "gpu_budget");
  int minimums = 0;
  for (const PoolReserve& p : pools) {
    if (p.min_gpus < 0) return InvalidArgument("must be >= 0", p.name + ".min_replicas");
    minimums += p.min_gpus;
  }
  if (minimums > budget_gpus) {
    return InvalidArgument(fmt::format("{} GPUs cannot hold the pools' minimums ({} GPUs together)",
                                       budget_gpus, minimums),
                           "gpu_budget");
  }
  return PoolBudget(budget_gpus, std::move(pools));
}

int PoolBudget::total_held() const { return std::accumulate(held_.begin(), held_.end(), 0); }

Status PoolBudget::Acquire(int pool, int gpus) {
  const int after = total_held() + gpus;
  if (after > budget_) {
    return ResourceExhausted(fmt::format("{} more GPUs for {} would hold {} of the {} GPU budget",
                                         gpus, pools_[pool].name, after, budget_));
  }
  for (size_t other = 0; other < pools_.size(); ++other) {
    if (static_cast<int>(other) == pool) continue;
    const int owed = pools_[other].min_gpus - held_[other];
    if (owed > 0 && budget_ - after < owed) {
      return ResourceExhausted(
          fmt::format("{} more GPUs for {} would leave {} of the {} GPUs {} needs for its minimum",
                      gpus, pools_[pool].name, budget_ - after, owed, pools_[other].name));
    }
  }
  held_[pool] += gpus;
  return OkStatus();
}

void PoolBudget::Release(int pool, int gpus) { held_[pool] -= gpus; }

void PoolBudget::Restore(int pool, int gpus) { held_[pool] += gpus; }

}  // namespace gpuscale::alloc
