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
// GPU type and shape, or its capacity describes another replica. A daemon's type key
// ("H100-80GB") matches a profile measured on the preset it starts with ("h100").
Status ReadVariantProfile(const YAML::Node& n, const std::string& path, sim::VariantSpec& v) {
  GS_ASSIGN_OR_RETURN(std::string file, ReadString(n, "profile", path, ""));
  if (file.empty()) return OkStatus();
  auto profile = LoadProfileFile(file);
  if (!profile) return FieldError(n["profile"], Join(path, "profile"), profile.error().message);
  const auto& m = profile->replica_model;
  if (m && (LowerType(v.gpu_type).rfind(LowerType(m->gpu), 0) != 0 ||
            m->tensor_parallel != v.gpus_per_replica)) {
    return FieldError(n["profile"], Join(path, "profile"),
                      fmt::format("measured on {} x{}, but the variant is {} x{}", m->gpu,
                                  m->tensor_parallel, v.gpu_type, v.gpus_per_replica));
  }
  v.capacity_tokens_per_second = profile->capacity_tokens_per_second;
  return OkStatus();
}

// `gpu_type`: a calibrated preset for the simulator (lower-cased), a type key as written for
// the daemon (gpu/gpu_type.h: whether the inventory has it is known only when it runs).
Status ReadVariantType(const YAML::Node& n, const std::string& path, VariantDialect dialect,
                       sim::VariantSpec& v) {
  GS_ASSIGN_OR_RETURN(std::string type, ReadString(n, "gpu_type", path));
  if (dialect == VariantDialect::kDaemon) {
    if (type.empty() || type.find_first_of(" \t") != std::string::npos) {
      return FieldError(n["gpu_type"], Join(path, "gpu_type"),
                        fmt::format("expected a GPU type key such as H100-80GB (`gpuscale gpus` "
                                    "shows each GPU's type), got '{}'",
                                    type));
    }
    v.gpu_type = type;
    return OkStatus();
  }
  v.gpu_type = LowerType(type);
  if (sim::FindGpuSpec(v.gpu_type) == nullptr) {
    return FieldError(
        n["gpu_type"], Join(path, "gpu_type"),
        fmt::format("unknown GPU type '{}': the simulator has calibrated H100 and A100", type));
  }
  return OkStatus();
}

// The simulator's price keys: a list price and a spot discount off it.
Status ReadVariantPrice(const YAML::Node& n, const std::string& path, sim::VariantSpec& v) {
  GS_ASSIGN_OR_RETURN(v.price_per_gpu_hour, ReadDouble(n, "price_per_gpu_hour", path));
  if (!(v.price_per_gpu_hour > 0)) {
    return FieldError(n["price_per_gpu_hour"], Join(path, "price_per_gpu_hour"), "must be > 0");
  }
  GS_ASSIGN_OR_RETURN(double discount, ReadDouble(n, "spot_discount_ratio", path, 0.0));
  if (!(discount >= 0 && discount < 1)) {
    return FieldError(n["spot_discount_ratio"], Join(path, "spot_discount_ratio"),
                      "must be in [0, 1)");
  }
  v.price_per_gpu_hour *= 1 - discount;
  return OkStatus();
}

// The spot keys: a spot flag, and the notice (both dialects) and the seeded preemption rate
// (simulator) that only a spot variant takes.
Status ReadVariantSpot(const YAML::Node& n, const std::string& path, sim::VariantSpec& v) {
  GS_ASSIGN_OR_RETURN(v.spot, ReadBool(n, "spot", path, false));
  for (const char* key :
       {"spot_discount_ratio", "preemption_notice_seconds", "preemptions_per_hour"}) {
    if (!v.spot && n[key].IsDefined()) {
      return FieldError(n[key], Join(path, key), "only a spot variant (spot: true) takes it");
    }
  }
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
  return OkStatus();
}

// One entry of a variants list. Names, GPU types and prices are checked here, where the
// line is known; sim::ValidateVariantPlan checks the rest again for configs built in code.
Result<sim::VariantSpec> ParseVariant(const YAML::Node& n, const std::string& path,
                                      VariantDialect dialect) {
  if (!n.IsMap()) return FieldError(n, path, "expected a mapping");
  const bool sim = dialect == VariantDialect::kSimulator;
  GS_RETURN_IF_ERROR(CheckKnownKeys(
      n, path,
      sim ? std::initializer_list<std::string_view>{"name", "gpu_type", "gpus_per_replica",
                                                    "price_per_gpu_hour", "spot",
                                                    "spot_discount_ratio",
                                                    "preemption_notice_seconds",
                                                    "preemptions_per_hour", "profile"}
          : std::initializer_list<std::string_view>{"name", "gpu_type", "gpus_per_replica",
                                                    "capacity", "spot", "preemption_notice_seconds",
                                                    "profile"}));
  sim::VariantSpec v;
  GS_ASSIGN_OR_RETURN(v.name, ReadString(n, "name", path));
  GS_RETURN_IF_ERROR(ReadVariantType(n, path, dialect, v));
  GS_ASSIGN_OR_RETURN(v.gpus_per_replica, ReadInt(n, "gpus_per_replica", path, 1));
  if (v.gpus_per_replica < 1) {
    return FieldError(n["gpus_per_replica"], Join(path, "gpus_per_replica"), "must be >= 1");
  }
  if (sim) GS_RETURN_IF_ERROR(ReadVariantPrice(n, path, v));
  GS_RETURN_IF_ERROR(ReadVariantSpot(n, path, v));
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

Result<std::vector<sim::VariantSpec>> ParseVariantList(const YAML::Node& list,
                                                       const std::string& path,
                                                       VariantDialect dialect) {
  if (!list.IsSequence() || list.size() == 0) {
    return FieldError(list, path, "expected a non-empty list");
  }
  std::vector<sim::VariantSpec> variants;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string entry = yaml::Index(path, i);
    GS_ASSIGN_OR_RETURN(sim::VariantSpec v, ParseVariant(list[i], entry, dialect));
    for (const auto& other : variants) {
      if (other.name == v.name) {
        return FieldError(list[i]["name"], Join(entry, "name"),
                          fmt::format("duplicate variant name '{}'", v.name));
      }
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

Status ParseVariants(const YAML::Node& n, sim::ServiceSpec& s) {
  sim::VariantPlan& plan = s.fleet;
  if (const YAML::Node list = n["variants"]; list.IsDefined()) {
    if (n["gpus_per_replica"].IsDefined()) {
      return FieldError(n["gpus_per_replica"], "service.gpus_per_replica",
                        "give gpus_per_replica per variant when the service lists variants");
    }
    GS_ASSIGN_OR_RETURN(plan.variants,
                        ParseVariantList(list, "service.variants", VariantDialect::kSimulator));
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
