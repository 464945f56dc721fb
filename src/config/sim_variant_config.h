// The `service.variants` block of a simulation config (config/sim_config.h) and the cost
// envelope beside it -> sim::VariantPlan (sim/variant.h):
//
//   service:
//     variants:
//       - {name: h100, gpu_type: H100, gpus_per_replica: 2, price_per_gpu_hour: 3.93}
//       - {name: a100-spot, gpu_type: A100, gpus_per_replica: 4, price_per_gpu_hour: 2.74,
//          spot: true, spot_discount_ratio: 0.6,      # price = 2.74 x (1 - 0.6)
//          preemption_notice_seconds: 120, preemptions_per_hour: 0.05}
//       - {name: a100, gpu_type: A100, gpus_per_replica: 4, price_per_gpu_hour: 2.74,
//          profile: a100x4.yaml}                       # measured capacity (optional)
//     gpu_limits: {H100: 8, A100: 16}   # most GPUs per type (absent: the cluster's)
//     budget_per_hour: 60               # price per hour over all replicas (absent or 0: none)
//     on_demand_base_ratio: 0.3         # share of capacity kept on on-demand variants
//
// GPU types are case-insensitive and must be a calibrated preset (h100, a100). A service with
// variants gives gpus_per_replica per variant, not beside them. Errors name the field and
// line: `service.variants[1].gpu_type: unknown GPU type 'L4': ... (line 7)`; also a duplicate
// name, a missing or non-positive price, a spot-only key on an on-demand variant, a
// `profile:` measured on another GPU type or shape (a relative path resolves against the
// working directory).
#pragma once

#include <yaml-cpp/yaml.h>

#include "core/result.h"
#include "sim/simulation.h"

namespace gpuscale::config {

// Who reads a variants list: the simulator (GPU types are calibrated presets, each entry
// carries its price and spot discount, and a spot one its seeded preemption rate) or the
// daemon's service spec (serve_config: GPU types are inventory type keys kept as written, the
// price comes from the inventory, and an entry may give a relative `capacity`, which the
// daemon reads itself). Both share name, gpu_type, gpus_per_replica (>= 1), spot,
// preemption_notice_seconds (spot only) and profile.
enum class VariantDialect { kSimulator, kDaemon };

// The entries of a variants list at `path` ("service.variants", "services[0].variants").
// Errors name the entry's field and line, as above; also an empty list or a duplicate name.
Result<std::vector<sim::VariantSpec>> ParseVariantList(const YAML::Node& list,
                                                       const std::string& path,
                                                       VariantDialect dialect);

// Reads `n`'s (the `service` mapping's) variant keys into s.fleet; with variants,
// s.gpus_per_replica becomes the first variant's.
Status ParseVariants(const YAML::Node& n, sim::ServiceSpec& s);

}  // namespace gpuscale::config
