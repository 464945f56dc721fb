#include <fmt/format.h>

#include <set>

#include "sim/replica_model_calibrated.h"
#include "sim/role_capacity.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

std::vector<VariantSpec> EffectiveVariants(const SimulationConfig& config) {
  if (!config.service.fleet.variants.empty()) return config.service.fleet.variants;
  VariantSpec v;
  v.name = "default";
  v.gpu_type = config.model.gpu;
  v.gpus_per_replica = config.service.gpus_per_replica;
  return {v};
}

double ModelCapacity(const ReplicaModel& model, const SloSpec& slo) {
  const auto mixes = DecodeCapacities(model, slo.tpot_seconds);
  double sum = 0;
  for (const auto& m : mixes) sum += m.capacity_tokens_per_second;
  return mixes.empty() ? 0 : sum / static_cast<double>(mixes.size());
}

ReplicaModelConfig VariantModelConfig(const ReplicaModelConfig& model, const VariantSpec& variant) {
  ReplicaModelConfig m = model;
  m.gpu = variant.gpu_type;
  m.tensor_parallel = variant.gpus_per_replica;
  return m;
}

Status ValidateVariantPlan(const VariantPlan& plan, int gpus_per_node) {
  std::set<std::string> names;
  for (size_t i = 0; i < plan.variants.size(); ++i) {
    const VariantSpec& v = plan.variants[i];
    const std::string path = fmt::format("service.variants[{}]", i);
    if (v.name.empty()) return InvalidArgument("required field is missing", path + ".name");
    if (!names.insert(v.name).second) {
      return InvalidArgument(fmt::format("duplicate variant name '{}'", v.name), path + ".name");
    }
    if (FindGpuSpec(v.gpu_type) == nullptr) {
      return InvalidArgument(
          fmt::format("unknown GPU type '{}': the simulator has calibrated h100 and a100",
                      v.gpu_type),
          path + ".gpu_type");
    }
    if (v.gpus_per_replica < 1 || v.gpus_per_replica > gpus_per_node) {
      return InvalidArgument(
          fmt::format("must be in [1, cluster.gpus_per_node = {}]", gpus_per_node),
          path + ".gpus_per_replica");
    }
    if (!(v.price_per_gpu_hour > 0)) {
      return InvalidArgument("must be > 0", path + ".price_per_gpu_hour");
    }
    if (v.spot && !(v.preemption_notice.count() >= 0)) {
      return InvalidArgument("must be >= 0", path + ".preemption_notice_seconds");
    }
    if (v.spot && !(v.preemptions_per_hour >= 0)) {
      return InvalidArgument("must be >= 0", path + ".preemptions_per_hour");
    }
  }
  for (const GpuTypeLimit& l : plan.gpu_limits) {
    if (l.max_gpus < 0) {
      return InvalidArgument("must be >= 0", "service.gpu_limits." + l.gpu_type);
    }
  }
  if (!(plan.budget_per_hour >= 0))
    return InvalidArgument("must be >= 0", "service.budget_per_hour");
  if (!(plan.on_demand_base_ratio >= 0 && plan.on_demand_base_ratio <= 1)) {
    return InvalidArgument("must be in [0, 1]", "service.on_demand_base_ratio");
  }
  return OkStatus();
}

}  // namespace gpuscale::sim
