#include "sim/sim_orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "scale/variant_allocator.h"

namespace gpuscale::sim {

using scale::ReplicaPhase;

gpu::GpuSnapshot MakeSimInventory(const ClusterSpec& cluster) {
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "simulated";
  for (int n = 0; n < cluster.nodes; ++n) {
    for (int g = 0; g < cluster.gpus_per_node; ++g) {
      gpu::GpuInfo info;
      info.index = g;
      info.node = fmt::format("node-{}", n);
      info.uuid = fmt::format("GPU-sim-{}-{}", n, g);
      info.name = cluster.gpu_type;
      info.memory_total_mb = cluster.gpu_memory_mb;
      info.memory_used_mb = 0;
      info.memory_free_mb = cluster.gpu_memory_mb;
      info.utilization_percent = 0;
      snapshot.gpus.push_back(std::move(info));
    }
  }
  return snapshot;
}

int64_t LongPromptLimit(const ReplicaModel& model, double ttft_s, double share) {
  const double budget = share * ttft_s;
  int64_t lo = 0, hi = int64_t{1} << 22;  // 4M tokens: past any context window
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (model.PrefillSeconds(mid) <= budget) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

void SetLongPromptLimits(std::vector<VariantRuntime>& variants, double ttft_s, double share) {
  int64_t longest = 0;
  std::vector<int64_t> limits;
  for (const VariantRuntime& v : variants) {
    limits.push_back(share > 0 ? LongPromptLimit(*v.model, ttft_s, share) : 0);
    longest = std::max(longest, limits.back());
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    variants[i].max_prompt_tokens = limits[i] == longest ? 0 : limits[i];
  }
}

SimOrchestrator::SimOrchestrator(const SimulationConfig& config, const ReplicaModel& model,
                                 std::vector<RequestRecord>& requests, SharedGpus* shared, int pool)
    : config_(config),
      requests_(requests),
      preemption_rng_(config.faults.preemption_seed),
      shared_(shared),
      pool_(pool) {
  VariantSpec implicit;
  implicit.name = "default";
  implicit.gpu_type = config.cluster.gpu_type;
  implicit.gpus_per_replica = std::max(config.service.gpus_per_replica, 1);
  if (shared_ == nullptr) {
    pools_.push_back(std::make_unique<TypePool>());
    pools_.back()->gpu_type = implicit.gpu_type;
    pools_.back()->inventory = MakeSimInventory(config.cluster);
  }
  variants_.push_back({implicit, &model, 1});
  usage_closed_.resize(1);
}

void SimOrchestrator::SetVariants(std::vector<VariantRuntime> variants) {
  variants_ = std::move(variants);
  mixed_ = true;
  usage_closed_.assign(variants_.size(), {});
  pools_.clear();
  for (const VariantRuntime& v : variants_) {
    if (std::any_of(pools_.begin(), pools_.end(),
                    [&](const auto& p) { return p->gpu_type == v.spec.gpu_type; })) {
      continue;
    }
    ClusterSpec typed = config_.cluster;
    typed.gpu_type = v.spec.gpu_type;
    pools_.push_back(std::make_unique<TypePool>());
    pools_.back()->gpu_type = v.spec.gpu_type;
    pools_.back()->inventory = MakeSimInventory(typed);
  }
}

SimOrchestrator::TypePool& SimOrchestrator::PoolOf(int variant) {
  for (auto& p : pools_) {
    if (p->gpu_type == variants_[variant].spec.gpu_type) return *p;
  }
  return *pools_.front();  // unreachable: SetVariants made a pool per type
}

// The allocator's next step (scale/variant_allocator.h) over the replicas placed now; the
// need it weighs the on-demand base against is what is held plus one largest replica.
int SimOrchestrator::ChooseVariant() const {
  if (!mixed_) return 0;
  std::vector<scale::VariantOffer> offers;
  std::vector<int> held(variants_.size(), 0);
  for (int slot : live_) {
    if (slots_[slot].placed_at >= 0) ++held[slots_[slot].variant];
  }
  scale::AllocationLimits limits;
  double capacity = 0, largest = 0;
  for (size_t i = 0; i < variants_.size(); ++i) {
    const VariantSpec& v = variants_[i].spec;
    offers.push_back({v.gpu_type, v.gpus_per_replica, variants_[i].capacity,
                      v.PricePerReplicaHour(), v.spot, held[i]});
    capacity += held[i] * variants_[i].capacity;
    largest = std::max(largest, variants_[i].capacity);
  }
  for (const auto& p : pools_) {
    limits.free_gpus[p->gpu_type] = static_cast<int>(p->inventory.gpus.size()) - p->used;
  }
  const VariantPlan& fleet = config_.service.fleet;
  for (const GpuTypeLimit& l : fleet.gpu_limits) limits.max_gpus[l.gpu_type] = l.max_gpus;
  limits.budget_per_hour = fleet.budget_per_hour;
  limits.on_demand_base_ratio = fleet.on_demand_base_ratio;
  return scale::CheapestFittingOffer(offers, held, limits, capacity + largest);
}

std::vector<scale::ReplicaStatus> SimOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  out.reserve(live_.size());
  for (int slot : live_) {
    const auto& s = slots_[slot];
    if (s.preempted) continue;  // on its way out: the controller replaces it
    scale::ReplicaStatus status{s.id, s.phase, Seconds{s.phase_since},
                                s.engine ? s.engine->Outstanding() : 0};
    if (mixed_ && s.variant >= 0) {
      const VariantRuntime& v = variants_[s.variant];
      status.capacity = v.capacity;
      status.drain_rank = v.spec.PricePerReplicaHour() / v.capacity;
    }
    out.push_back(std::move(status));
  }
  return out;
}

int SimOrchestrator::Find(const std::string& id) const {
  for (int slot : live_) {
    if (slots_[slot].id == id) return slot;
  }
  return -1;
}

int SimOrchestrator::Count(ReplicaPhase phase) const {
  return static_cast<int>(std::count_if(live_.begin(), live_.end(),
                                         [&](int s) { return slots_[s].phase == phase; }));
}

bool SimOrchestrator::TryPlace(int slot, double now) {
  auto& s = slots_[slot];
  const int variant = ChooseVariant();
  if (variant < 0) return false;
  const int gpus = variants_[variant].spec.gpus_per_replica;
  alloc::SelectionRequest request;
  request.gpu_count = gpus;
  if (shared_ == nullptr) {
    TypePool& pool = PoolOf(variant);
    if (!pool.ledger.Allocate(pool.inventory, request, s.id, Seconds{now})) return false;
    pool.used += gpus;
  } else {
    // The budget first: a grant it refuses must not take GPUs from the ledger.
    if (!shared_->budget.Acquire(pool_, gpus)) return false;
    if (!shared_->ledger.Allocate(shared_->inventory, request, s.id, Seconds{now})) {
      shared_->budget.Release(pool_, gpus);
      return false;
    }
  }
  s.variant = variant;
  gpus_in_use_ += gpus;
  ++usage_closed_[variant].placed;
  s.phase = ReplicaPhase::kStarting;
  s.phase_since = now;
  s.placed_at = now;
  s.engine =
      std::make_unique<SimReplica>(*variants_[variant].model, requests_, prefix_block_tokens_);
  SchedulePreemption(slot, now);
  ++placed_;
  placed_new_.push_back(slot);
  return true;
}

Result<scale::ReplicaStatus> SimOrchestrator::Start(Seconds now) {
  int slot = static_cast<int>(slots_.size());
  slots_.push_back({});
  slots_[slot].id = fmt::format("{}-{}", config_.service.name, slot);
  slots_[slot].phase_since = now.count();
  live_.push_back(slot);
  ++started_;
  TryPlace(slot, now.count());
  const auto& s = slots_[slot];
  return scale::ReplicaStatus{s.id, s.phase, Seconds{s.phase_since}, 0};
}

bool SimOrchestrator::StartWarm(double now) {
  auto status = Start(Seconds{now});
  int slot = static_cast<int>(slots_.size()) - 1;
  --started_;  // initial replicas are not scale-ups
  if (status->phase != ReplicaPhase::kStarting) return false;
  placed_new_.pop_back();
  MarkReady(slot, now);
  slots_[slot].warm_since = -std::numeric_limits<double>::infinity();
  return true;
}

Status SimOrchestrator::Place(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kPending) {
    return FailedPrecondition(fmt::format("replica '{}' is not pending", id));
  }
  if (!TryPlace(slot, now.count())) {
    return ResourceExhausted(fmt::format("no free GPUs of any variant for replica '{}'", id));
  }
  return OkStatus();
}

void SimOrchestrator::SetReady(int slot, bool ready) {
  auto it = std::find(ready_.begin(), ready_.end(), slot);
  if (ready && it == ready_.end()) {
    ready_.insert(std::upper_bound(ready_.begin(), ready_.end(), slot), slot);
  } else if (!ready && it != ready_.end()) {
    ready_.erase(it);
  }
}

void SimOrchestrator::MarkReady(int slot, double now) {
  auto& s = slots_[slot];
  if (s.gone || s.phase != ReplicaPhase::kStarting) return;
  s.phase = ReplicaPhase::kReady;
  s.phase_since = now;
  s.warm_since = now;
  SetReady(slot, true);
}

Status SimOrchestrator::Drain(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kReady) {
    return FailedPrecondition(fmt::format("replica '{}' is not ready", id));
  }
  slots_[slot].phase = ReplicaPhase::kDraining;
  slots_[slot].phase_since = now.count();
  SetReady(slot, false);
  return OkStatus();
}

Status SimOrchestrator::Resume(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  if (slots_[slot].phase != ReplicaPhase::kDraining) {
    return FailedPrecondition(fmt::format("replica '{}' is not draining", id));
  }
  slots_[slot].phase = ReplicaPhase::kReady;
  slots_[slot].phase_since = now.count();
  SetReady(slot, true);
  resumed_.push_back(slot);
  return OkStatus();
}

void SimOrchestrator::Release(int slot, double now) {
  auto& s = slots_[slot];
  if (s.placed_at >= 0) {
    const int gpus = GpusOf(slot);
    usage_closed_[s.variant].gpu_seconds += (now - s.placed_at) * gpus;
    if (shared_ == nullptr) {
      TypePool& pool = PoolOf(s.variant);
      pool.ledger.ReleaseOwner(s.id);
      pool.used -= gpus;
    } else {
      shared_->ledger.ReleaseOwner(s.id);
      shared_->budget.Release(pool_, gpus);
    }
    gpus_in_use_ -= gpus;
    --placed_;
  }
  if (s.engine) aborted_ += s.engine->AbortAll();
  s.engine.reset();
  s.gone = true;
  ++s.version;
  SetReady(slot, false);
  live_.erase(std::find(live_.begin(), live_.end(), slot));
  removed_.push_back(slot);
}

Status SimOrchestrator::Stop(const std::string& id, Seconds now) {
  int slot = Find(id);
  if (slot < 0) return NotFound(fmt::format("no replica '{}'", id));
  Release(slot, now.count());
  ++stopped_;
  return OkStatus();
}

void SimOrchestrator::Crash(int slot, double now) {
  if (!slots_[slot].gone) Release(slot, now);
}

std::vector<VariantUsage> SimOrchestrator::Usage(double now) const {
  std::vector<VariantUsage> usage = usage_closed_;
  for (int slot : live_) {
    if (slots_[slot].placed_at >= 0) {
      usage[slots_[slot].variant].gpu_seconds += (now - slots_[slot].placed_at) * GpusOf(slot);
    }
  }
  return usage;
}

double SimOrchestrator::GpuSeconds(double now) const {
  double total = 0;
  for (const VariantUsage& u : Usage(now)) total += u.gpu_seconds;
  return total;
}

// A Poisson process per spot replica: the time to its notice is exponential with the
// variant's rate, drawn when it is placed (one draw per placement, in event order, so a seed
// gives the same preemptions).
void SimOrchestrator::SchedulePreemption(int slot, double now) {
  const VariantSpec& v = variants_[slots_[slot].variant].spec;
  if (!v.spot || !(v.preemptions_per_hour > 0)) return;
  const double u = std::uniform_real_distribution<double>(0, 1)(preemption_rng_);
  preemptions_.push({now - std::log1p(-u) * 3600.0 / v.preemptions_per_hour, slot, false});
}

double SimOrchestrator::NextPreemptionTime() const {
  return preemptions_.empty() ? std::numeric_limits<double>::infinity() : preemptions_.top().time;
}

void SimOrchestrator::HandlePreemption(double now) {
  const PreemptionEvent e = preemptions_.top();
  preemptions_.pop();
  auto& s = slots_[e.slot];
  if (s.gone) return;
  if (e.reclaim) {
    const int64_t lost = s.engine ? s.engine->Outstanding() : 0;
    usage_closed_[s.variant].lost_to_preemption += lost;
    Release(e.slot, now);
    return;
  }
  s.preempted = true;
  ++usage_closed_[s.variant].preempted;
  s.phase = ReplicaPhase::kDraining;
  s.phase_since = now;
  SetReady(e.slot, false);
  preemptions_.push({now + variants_[s.variant].spec.preemption_notice.count(), e.slot, true});
  ReleaseIfPreemptedAndIdle(e.slot, now);
}

void SimOrchestrator::ReleaseIfPreemptedAndIdle(int slot, double now) {
  auto& s = slots_[slot];
  if (!s.gone && s.preempted && (!s.engine || s.engine->Outstanding() == 0)) Release(slot, now);
}

std::vector<int> SimOrchestrator::TakePlaced() { return std::exchange(placed_new_, {}); }
std::vector<int> SimOrchestrator::TakeRemoved() { return std::exchange(removed_, {}); }
std::vector<int> SimOrchestrator::TakeResumed() { return std::exchange(resumed_, {}); }

}  // namespace gpuscale::sim
