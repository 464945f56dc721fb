#include "config/sim_variant_config.h"

#include <fmt/format.h>

#include <cctype>

#include "config/profile_file.h"
#include "sim/replica_model_calibrated.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using yaml::CheckKnownKeys;
using yaml::FieldError;
using yaml::Join;
using yaml::ReadBool;
using yaml::ReadDouble;
using yaml::ReadInt;
using yaml::ReadString;

// The GPU type as the simulator's presets spell it (h100, a100); configs may write H100.
std::string LowerType(std::string type) {
  for (char& ch : type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return type;
}

// A variant's `profile:`: a capacity profile that must have been measured on the variant's
// GPU type and shape, or its capacity describes another replica.
Status ReadVariantProfile(const YAML::Node& n, const std::string& path, sim::VariantSpec& v) {
  GS_ASSIGN_OR_RETURN(std::string file, ReadString(n, "profile", path, ""));
  if (file.empty()) return OkStatus();
  auto profile = LoadProfileFile(file);
  if (!profile) return FieldError(n["profile"], Join(path, "profile"), profile.error().message);
  const auto& m = profile->replica_model;
  if (m && (LowerType(m->gpu) != v.gpu_type || m->tensor_parallel != v.gpus_per_replica)) {
    return FieldError(n["profile"], Join(path, "profile"),
                      fmt::format("measured on {} x{}, but the variant is {} x{}", m->gpu,
                                  m->tensor_parallel, v.gpu_type, v.gpus_per_replica));
  }
  v.capacity_tokens_per_second = profile->capacity_tokens_per_second;
  return OkStatus();
}

// One entry of `service.variants`. Names, GPU types and prices are checked here, where the
// line is known; sim::ValidateVariantPlan checks the rest again for configs built in code.
Result<sim::VariantSpec> ParseVariant(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) return FieldError(n, path, "expected a mapping");
  GS_RETURN_IF_ERROR(CheckKnownKeys(
      n, path,
      {"name", "gpu_type", "gpus_per_replica", "price_per_gpu_hour", "spot", "spot_discount_ratio",
       "preemption_notice_seconds", "preemptions_per_hour", "profile"}));
  sim::VariantSpec v;
  GS_ASSIGN_OR_RETURN(v.name, ReadString(n, "name", path));
  GS_ASSIGN_OR_RETURN(std::string type, ReadString(n, "gpu_type", path));
  v.gpu_type = LowerType(type);
  if (sim::FindGpuSpec(v.gpu_type) == nullptr) {
    return FieldError(
        n["gpu_type"], Join(path, "gpu_type"),
        fmt::format("unknown GPU type '{}': the simulator has calibrated H100 and A100", type));
  }
  GS_ASSIGN_OR_RETURN(v.gpus_per_replica, ReadInt(n, "gpus_per_replica", path, 1));
  GS_ASSIGN_OR_RETURN(v.price_per_gpu_hour, ReadDouble(n, "price_per_gpu_hour", path));
  if (!(v.price_per_gpu_hour > 0)) {
    return FieldError(n["price_per_gpu_hour"], Join(path, "price_per_gpu_hour"), "must be > 0");
  }
  GS_ASSIGN_OR_RETURN(v.spot, ReadBool(n, "spot", path, false));
  for (const char* key :
       {"spot_discount_ratio", "preemption_notice_seconds", "preemptions_per_hour"}) {
    if (!v.spot && n[key].IsDefined()) {
      return FieldError(n[key], Join(path, key), "only a spot variant (spot: true) takes it");
    }
  }
  // A discount prices the spot variant off the on-demand list price given beside it.
  GS_ASSIGN_OR_RETURN(double discount, ReadDouble(n, "spot_discount_ratio", path, 0.0));
  if (!(discount >= 0 && discount < 1)) {
    return FieldError(n["spot_discount_ratio"], Join(path, "spot_discount_ratio"),
                      "must be in [0, 1)");
  }
  v.price_per_gpu_hour *= 1 - discount;
  GS_ASSIGN_OR_RETURN(
      double notice, ReadDouble(n, "preemption_notice_seconds", path, v.preemption_notice.count()));
  if (!(notice >= 0)) {
    return FieldError(n["preemption_notice_seconds"], Join(path, "preemption_notice_seconds"),
                      "must be >= 0");
  }
  v.preemption_notice = Seconds{notice};
  GS_ASSIGN_OR_RETURN(v.preemptions_per_hour,
                      ReadDouble(n, "preemptions_per_hour", path, v.preemptions_per_hour));
  if (!(v.preemptions_per_hour >= 0)) {
    return FieldError(n["preemptions_per_hour"], Join(path, "preemptions_per_hour"),
                      "must be >= 0");
  }
  GS_RETURN_IF_ERROR(ReadVariantProfile(n, path, v));
  return v;
}

// `gpu_limits: {H100: 8, A100: 16}`: the most GPUs of each type the service may hold.
Status ParseGpuLimits(const YAML::Node& n, sim::VariantPlan& plan) {
  const char* p = "service.gpu_limits";
  if (!n) return OkStatus();
  if (!n.IsMap()) return FieldError(n, p, "expected a mapping");
  for (const auto& entry : n) {
    GS_ASSIGN_OR_RETURN(std::string type, yaml::KeyName(entry.first, p));
    const std::string path = Join(p, type);
    YAML::Node holder;
    holder["v"] = entry.second;
    GS_ASSIGN_OR_RETURN(int gpus, ReadInt(holder, "v", path));
    if (gpus < 0) return FieldError(entry.second, path, "must be >= 0");
    if (sim::FindGpuSpec(LowerType(type)) == nullptr) {
      return FieldError(entry.first, path, fmt::format("unknown GPU type '{}'", type));
    }
    plan.gpu_limits.push_back({LowerType(type), gpus});
  }
  return OkStatus();
}

}  // namespace

Status ParseVariants(const YAML::Node& n, sim::ServiceSpec& s) {
  sim::VariantPlan& plan = s.fleet;
  if (const YAML::Node list = n["variants"]; list.IsDefined()) {
    if (!list.IsSequence() || list.size() == 0) {
      return FieldError(list, "service.variants", "expected a non-empty list");
    }
    if (n["gpus_per_replica"].IsDefined()) {
      return FieldError(n["gpus_per_replica"], "service.gpus_per_replica",
                        "give gpus_per_replica per variant when the service lists variants");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = yaml::Index("service.variants", i);
      GS_ASSIGN_OR_RETURN(sim::VariantSpec v, ParseVariant(list[i], path));
      for (const auto& other : plan.variants) {
        if (other.name == v.name) {
          return FieldError(list[i]["name"], Join(path, "name"),
                            fmt::format("duplicate variant name '{}'", v.name));
        }
      }
      plan.variants.push_back(std::move(v));
    }
    // Shown in GPU names and used where one shape is asked for: the first variant's.
    s.gpus_per_replica = plan.variants.front().gpus_per_replica;
  }
  for (const char* key :
       {"gpu_limits", "budget_per_hour", "on_demand_base_ratio", "long_prompt_ttft_share"}) {
    if (!plan.variants.size() && n[key].IsDefined()) {
      return FieldError(n[key], Join("service", key), "needs service.variants");
    }
  }
  GS_RETURN_IF_ERROR(ParseGpuLimits(n["gpu_limits"], plan));
  GS_ASSIGN_OR_RETURN(plan.budget_per_hour, ReadDouble(n, "budget_per_hour", "service", 0.0));
  if (!(plan.budget_per_hour >= 0)) {
    return FieldError(n["budget_per_hour"], "service.budget_per_hour", "must be >= 0");
  }
  GS_ASSIGN_OR_RETURN(plan.on_demand_base_ratio,
                      ReadDouble(n, "on_demand_base_ratio", "service", 0.0));
  if (!(plan.on_demand_base_ratio >= 0 && plan.on_demand_base_ratio <= 1)) {
    return FieldError(n["on_demand_base_ratio"], "service.on_demand_base_ratio",
                      "must be in [0, 1]");
  }
  GS_ASSIGN_OR_RETURN(plan.long_prompt_ttft_share,
                      ReadDouble(n, "long_prompt_ttft_share", "service", 0.5));
  if (!(plan.long_prompt_ttft_share >= 0 && plan.long_prompt_ttft_share <= 1)) {
    return FieldError(n["long_prompt_ttft_share"], "service.long_prompt_ttft_share",
                      "must be in [0, 1]");
  }
  return OkStatus();
}

}  // namespace gpuscale::config
