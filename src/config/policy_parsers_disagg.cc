// ParseDisaggPolicy: the `disagg:` block of a policy file (scale/disagg_policy.h documents the
// algorithm). One block per pool of a disaggregated service:
//
//   disagg:
//     role: prefill                   # required: prefill | decode
//     capacity_tokens_per_second: 0   # per replica at the role's target (> 0; prefill: prompt
//                                     # tokens/s, decode: generated tokens/s). Required, but in
//                                     # `gpuscale simulate`, where absent means the calibrated
//                                     # replica model's profile (sim/role_capacity.h)
//     target_attainment: 0.99         # (0, 1]
//     target_utilization: 0.8         # (0, 1]
//     forecast_horizon_seconds: 75    # >= 0
//     burst_z: 2                      # >= 0
//     scale_down_delay_seconds: 300   # >= 0
//     max_scale_down_step: 1          # >= 1
//     kv_target_ratio: 0.85           # decode: [0, 1], 0 = no KV floor
//     learn_capacity: true
//     recurring_bursts: true
#include <fmt/format.h>

#include "config/policy_config.h"
#include "config/read_ranged.h"
#include "scale/disagg_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

constexpr double kBig = 1e9;

Status ReadRole(const YAML::Node& block, const std::string& path, scale::DisaggPolicyConfig& c) {
  if (!block["role"].IsDefined()) {
    return yaml::FieldError(block, yaml::Join(path, "role"), "required: prefill or decode");
  }
  GS_ASSIGN_OR_RETURN(std::string role, yaml::ReadString(block, "role", path));
  if (role != "prefill" && role != "decode") {
    return yaml::FieldError(block["role"], yaml::Join(path, "role"),
                            fmt::format("expected prefill or decode, got '{}'", role));
  }
  c.role = role == "prefill" ? scale::PoolRole::kPrefill : scale::PoolRole::kDecode;
  return OkStatus();
}

Status ReadDynamics(const YAML::Node& block, const std::string& path,
                    scale::DisaggPolicyConfig& c) {
  GS_ASSIGN_OR_RETURN(c.target_attainment, ReadRanged(block, "target_attainment", path,
                                                      c.target_attainment, 0, true, 1));
  GS_ASSIGN_OR_RETURN(c.target_utilization, ReadRanged(block, "target_utilization", path,
                                                       c.target_utilization, 0, true, 1));
  GS_ASSIGN_OR_RETURN(double horizon, ReadRanged(block, "forecast_horizon_seconds", path,
                                                 c.forecast_horizon.count(), 0, false, kBig));
  c.forecast_horizon = Seconds{horizon};
  GS_ASSIGN_OR_RETURN(c.burst_z, ReadRanged(block, "burst_z", path, c.burst_z, 0, false, kBig));
  GS_ASSIGN_OR_RETURN(double delay, ReadRanged(block, "scale_down_delay_seconds", path,
                                               c.scale_down_delay.count(), 0, false, kBig));
  c.scale_down_delay = Seconds{delay};
  GS_ASSIGN_OR_RETURN(c.max_scale_down_step,
                      ReadAtLeast(block, "max_scale_down_step", path, c.max_scale_down_step, 1));
  GS_ASSIGN_OR_RETURN(c.kv_target_ratio,
                      ReadRanged(block, "kv_target_ratio", path, c.kv_target_ratio, 0, false, 1));
  GS_ASSIGN_OR_RETURN(c.learn_capacity,
                      yaml::ReadBool(block, "learn_capacity", path, c.learn_capacity));
  GS_ASSIGN_OR_RETURN(c.recurring_bursts,
                      yaml::ReadBool(block, "recurring_bursts", path, c.recurring_bursts));
  return OkStatus();
}

}  // namespace

Result<scale::DisaggPolicyConfig> ParseDisaggPolicyConfig(const YAML::Node& block,
                                                          const std::string& path,
                                                          const CommonPolicyFields& common) {
  if (!block.IsDefined() || block.IsNull()) {
    return InvalidArgument("required: a mapping with role", path);
  }
  if (!block.IsMap()) return yaml::FieldError(block, path, "expected a mapping");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      block, path,
      {"role", "capacity_tokens_per_second", "target_attainment", "target_utilization",
       "forecast_horizon_seconds", "burst_z", "scale_down_delay_seconds", "max_scale_down_step",
       "kv_target_ratio", "learn_capacity", "recurring_bursts"}));
  scale::DisaggPolicyConfig c;
  c.min_replicas = common.min_replicas;
  c.max_replicas = common.max_replicas;
  GS_RETURN_IF_ERROR(ReadRole(block, path, c));
  GS_ASSIGN_OR_RETURN(c.capacity_tokens_per_second,
                      ReadRanged(block, "capacity_tokens_per_second", path, 0, 0, false, kBig));
  GS_RETURN_IF_ERROR(ReadDynamics(block, path, c));
  return c;
}

Result<std::unique_ptr<scale::Policy>> ParseDisaggPolicy(const YAML::Node& block,
                                                         const std::string& path,
                                                         const CommonPolicyFields& common) {
  GS_ASSIGN_OR_RETURN(scale::DisaggPolicyConfig c, ParseDisaggPolicyConfig(block, path, common));
  if (!(c.capacity_tokens_per_second > 0)) {
    const YAML::Node field = block["capacity_tokens_per_second"];
    return yaml::FieldError(field.IsDefined() ? field : block,
                            yaml::Join(path, "capacity_tokens_per_second"),
                            "must be > 0 (a load test's or profile's figure for one replica of "
                            "this role)");
  }
  return std::unique_ptr<scale::Policy>(std::make_unique<scale::DisaggPolicy>(std::move(c)));
}

Status FitDisaggRole(YAML::Node envelope, scale::PoolRole role) {
  if (!envelope.IsMap() || !envelope["family"].IsDefined() ||
      envelope["family"].Scalar() != "disagg" || !envelope["disagg"].IsMap()) {
    return OkStatus();  // another family, or a malformed block: ParsePolicy says what is wrong
  }
  YAML::Node block = envelope["disagg"];
  const std::string pool(scale::PoolRoleName(role));
  if (!block["role"].IsDefined()) {
    block["role"] = pool;
    return OkStatus();
  }
  if (block["role"].IsScalar() && block["role"].Scalar() != pool &&
      (block["role"].Scalar() == "prefill" || block["role"].Scalar() == "decode")) {
    return yaml::FieldError(block["role"], "disagg.role",
                            fmt::format("is {} in the {} pool", block["role"].Scalar(), pool));
  }
  return OkStatus();
}

}  // namespace gpuscale::config
