// Cost-ordered sizing across variants (issue 47): a policy decides the total capacity a
// service needs; AllocateByCost turns it into replicas per variant. The rule follows llm-d's
// workload-variant autoscaler: grow the variant with the lowest price per unit of capacity
// first, shrink the one with the highest first, within per-GPU-type limits and a budget in
// price per hour. A GPU type with no free GPU is skipped, not waited on. A share of the
// needed capacity may be held on on-demand variants (SkyServe's on-demand base), so that a
// wave of spot preemptions cannot take the service below it.
//
// Pure function on values; thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpuscale::scale {

struct VariantOffer {
  std::string gpu_type;       // the key into the limits' maps
  int gpus_per_replica = 1;   // >= 1
  double capacity = 0;        // per replica, in the policy's unit (requests/s, tokens/s); > 0
  double price_per_hour = 0;  // per replica; >= 0
  bool spot = false;
  int replicas = 0;  // held now (placed or starting); >= 0

  double PricePerCapacity() const { return price_per_hour / capacity; }
};

struct AllocationLimits {
  // GPUs of each type free now and not held by this service; a type absent here has none.
  std::map<std::string, int> free_gpus;
  // The most GPUs of each type the service may hold; a type absent here has no limit.
  std::map<std::string, int> max_gpus;
  double budget_per_hour = 0;       // over all replicas; 0: no budget
  double on_demand_base_ratio = 0;  // 0..1 of the needed capacity kept on on-demand variants
};

struct Allocation {
  std::vector<int> replicas;  // per offer, in the offers' order
  double capacity = 0;
  double price_per_hour = 0;
  // The needed capacity could not be reached: no free GPU, a limit or the budget stopped it.
  bool short_of_capacity = false;
};

// Replicas per offer for `needed_capacity`. Starting from each offer's current replicas:
// (1) over the budget or a type's limit, replicas are removed most expensive per capacity
// first; (2) below the need, replicas are added cheapest per capacity first (on-demand ones
// while the on-demand share is below its base), each only where a free GPU, the type's limit
// and the budget allow; (3) above the need, replicas are removed most expensive per capacity
// first while the rest still meets the need and the on-demand base. Ties go to the larger
// capacity, then to the earlier offer. Deterministic.
// REQUIRES: every capacity > 0, gpus_per_replica >= 1.
Allocation AllocateByCost(double needed_capacity, const std::vector<VariantOffer>& offers,
                          const AllocationLimits& limits);

// The offer the next replica should use when one more is wanted: the cheapest per capacity
// that a free GPU, its type's limit and the budget allow, preferring on-demand ones while the
// on-demand capacity is below `limits.on_demand_base_ratio` of `needed_capacity`; -1 when
// none fits.
int CheapestFittingOffer(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas,
                         const AllocationLimits& limits, double needed_capacity);

// The offer whose replica should go first when one fewer is wanted: the most expensive per
// capacity among those with replicas; -1 when none has any.
int MostExpensiveOffer(const std::vector<VariantOffer>& offers, const std::vector<int>& replicas);

}  // namespace gpuscale::scale
