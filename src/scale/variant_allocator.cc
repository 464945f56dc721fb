#include "scale/variant_allocator.h"

#include <cstddef>

namespace gpuscale::scale {
namespace {

struct Totals {
  double capacity = 0;
  double on_demand_capacity = 0;
  double price_per_hour = 0;
  std::map<std::string, int> gpus;  // held per type
};

Totals Sum(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas) {
  Totals t;
  for (size_t i = 0; i < offers.size(); ++i) {
    t.capacity += replicas[i] * offers[i].capacity;
    if (!offers[i].spot) t.on_demand_capacity += replicas[i] * offers[i].capacity;
    t.price_per_hour += replicas[i] * offers[i].price_per_hour;
    t.gpus[offers[i].gpu_type] += replicas[i] * offers[i].gpus_per_replica;
  }
  return t;
}

// `a` is cheaper per capacity than `b` (ties: larger capacity, then earlier offer).
bool Cheaper(const std::vector<VariantOffer>& offers, size_t a, size_t b) {
  const double pa = offers[a].PricePerCapacity(), pb = offers[b].PricePerCapacity();
  if (pa != pb) return pa < pb;
  if (offers[a].capacity != offers[b].capacity) return offers[a].capacity > offers[b].capacity;
  return a < b;
}

int Lookup(const std::map<std::string, int>& m, const std::string& key, int fallback) {
  const auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

// One more replica of offer i fits the free GPUs (less those this allocation already took),
// the type's limit and the budget.
bool Fits(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas, size_t i,
          const AllocationLimits& limits, const Totals& t) {
  const VariantOffer& o = offers[i];
  int taken = 0;  // GPUs of this type added beyond what the offers held at the start
  for (size_t j = 0; j < offers.size(); ++j) {
    if (offers[j].gpu_type == o.gpu_type) {
      taken += (replicas[j] - offers[j].replicas) * offers[j].gpus_per_replica;
    }
  }
  if (Lookup(limits.free_gpus, o.gpu_type, 0) - taken < o.gpus_per_replica) return false;
  const int held = Lookup(t.gpus, o.gpu_type, 0);
  if (held + o.gpus_per_replica > Lookup(limits.max_gpus, o.gpu_type, held + o.gpus_per_replica)) {
    return false;
  }
  return limits.budget_per_hour <= 0 ||
         t.price_per_hour + o.price_per_hour <= limits.budget_per_hour + 1e-9;
}

bool OverLimits(const std::vector<VariantOffer>& offers, const Totals& t,
                const AllocationLimits& limits, size_t i) {
  const std::string& type = offers[i].gpu_type;
  const int held = Lookup(t.gpus, type, 0);
  if (held > Lookup(limits.max_gpus, type, held)) return true;
  return limits.budget_per_hour > 0 && t.price_per_hour > limits.budget_per_hour + 1e-9;
}

}  // namespace

int CheapestFittingOffer(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas,
                         const AllocationLimits& limits, double needed_capacity) {
  const Totals t = Sum(offers, replicas);
  const bool base_short = t.on_demand_capacity < limits.on_demand_base_ratio * needed_capacity;
  for (const bool on_demand_only : {true, false}) {
    if (on_demand_only && !base_short) continue;
    int best = -1;
    for (size_t i = 0; i < offers.size(); ++i) {
      if (on_demand_only && offers[i].spot) continue;
      if (!Fits(offers, replicas, i, limits, t)) continue;
      if (best < 0 || Cheaper(offers, i, static_cast<size_t>(best))) best = static_cast<int>(i);
    }
    if (best >= 0) return best;
  }
  return -1;
}

int MostExpensiveOffer(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas) {
  int worst = -1;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (replicas[i] <= 0) continue;
    if (worst < 0 || Cheaper(offers, static_cast<size_t>(worst), i)) worst = static_cast<int>(i);
  }
  return worst;
}

Allocation AllocateByCost(double needed_capacity, const std::vector<VariantOffer>& offers,
                          const AllocationLimits& limits) {
  std::vector<int> n;
  for (const VariantOffer& o : offers) n.push_back(o.replicas);
  // (1) Back within the budget and the limits, most expensive per capacity first.
  for (bool removed = true; removed;) {
    removed = false;
    const Totals t = Sum(offers, n);
    std::vector<int> over(offers.size(), 0);
    for (size_t i = 0; i < offers.size(); ++i)
      over[i] = OverLimits(offers, t, limits, i) ? n[i] : 0;
    if (const int i = MostExpensiveOffer(offers, over); i >= 0) {
      --n[static_cast<size_t>(i)];
      removed = true;
    }
  }
  // (2) Grow, cheapest first.
  while (Sum(offers, n).capacity < needed_capacity) {
    const int i = CheapestFittingOffer(offers, n, limits, needed_capacity);
    if (i < 0) break;
    ++n[static_cast<size_t>(i)];
  }
  // (3) Shrink, most expensive first, while the rest still meets the need and the base.
  std::vector<int> candidates = n;
  while (true) {
    const int i = MostExpensiveOffer(offers, candidates);
    if (i < 0) break;
    const size_t k = static_cast<size_t>(i);
    const Totals t = Sum(offers, n);
    const bool keeps_need = t.capacity - offers[k].capacity >= needed_capacity;
    const bool keeps_base = offers[k].spot || t.on_demand_capacity - offers[k].capacity >=
                                                  limits.on_demand_base_ratio * needed_capacity;
    if (keeps_need && keeps_base) {
      --n[k];
      --candidates[k];
    } else {
      candidates[k] = 0;  // this variant cannot give up a replica; try the next cheaper
    }
  }
  const Totals t = Sum(offers, n);
  return {n, t.capacity, t.price_per_hour, t.capacity < needed_capacity};
}

}  // namespace gpuscale::scale
