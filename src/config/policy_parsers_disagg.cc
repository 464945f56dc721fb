// ParseDisaggPolicy: the `disagg:` block of a policy file (scale/disagg_policy.h documents the
// algorithm). One block per pool of a disaggregated service:
//
//   disagg:
//     role: prefill                   # required: prefill | decode
//     profile: PATH                   # a role profile of this role (gpuscale profile --role):
//                                     # each mix's capacity; excludes the field below, sets
//                                     # target_attainment (config/policy_profile.h)
//     capacity_tokens_per_second: 0   # per replica at the role's target (> 0; prefill: prompt
//                                     # tokens/s, decode: generated tokens/s). Required without
//                                     # a profile, but in `gpuscale simulate`, where absent
//                                     # means the calibrated replica model's figures
//                                     # (sim/role_capacity.h)
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
#include "config/policy_profile.h"
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

// The disagg policy's pool role as a profile's.
profile::ProfileRole ProfileRoleOf(scale::PoolRole role) {
  return role == scale::PoolRole::kPrefill ? profile::ProfileRole::kPrefill
                                           : profile::ProfileRole::kDecode;
}

// A profile that is not this pool's role profile: aggregated, or the other role's.
Status CheckProfileRole(const YAML::Node& named, const std::string& field,
                        const profile::CapacityProfile& p, scale::PoolRole role) {
  const std::string_view pool = scale::PoolRoleName(role);
  if (p.role == profile::ProfileRole::kAggregated) {
    return yaml::FieldError(
        named, field,
        fmt::format("names an aggregated replica's profile (no role:), whose capacity counts "
                    "prefill and decode together; the {0} pool needs a {0} role profile: "
                    "gpuscale profile --role {0} (docs/profiles.md)",
                    pool));
  }
  if (p.role == ProfileRoleOf(role)) return OkStatus();
  return yaml::FieldError(
      named, field,
      fmt::format("names a {} role profile, but this policy sizes the {} pool; name the "
                  "profile made with gpuscale profile --role {}",
                  profile::ProfileRoleName(p.role), pool, pool));
}

// `profile: PATH`: the role profile's mixes are the policy's capacities (the first one its
// reference capacity, as in the simulator without a profile), its target ratio the policy's
// target_attainment. A capacity typed in beside it would describe another replica.
Status ReadDisaggProfile(const YAML::Node& block, const std::string& path,
                         scale::DisaggPolicyConfig& c) {
  const YAML::Node named = block["profile"];
  if (!named.IsDefined()) return OkStatus();
  const std::string field = yaml::Join(path, "profile");
  if (const YAML::Node typed = block["capacity_tokens_per_second"]; typed.IsDefined()) {
    return yaml::FieldError(typed, yaml::Join(path, "capacity_tokens_per_second"),
                            fmt::format("is set beside {} (line {}), whose mixes give the "
                                        "capacities; remove one of them",
                                        field, yaml::LineOf(named)));
  }
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile p, LoadNamedProfile(block, path));
  GS_RETURN_IF_ERROR(CheckProfileRole(named, field, p, c.role));
  c.mix_capacities.clear();
  for (const profile::MixProfile& m : p.mixes) {
    c.mix_capacities.push_back({static_cast<double>(m.mix.prompt_tokens),
                                static_cast<double>(m.mix.output_tokens),
                                m.capacity_tokens_per_second});
  }
  c.capacity_tokens_per_second = c.mix_capacities.front().capacity_tokens_per_second;
  return ReadProfileTarget(block, path, p, c.target_attainment);
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
      {"role", "profile", "capacity_tokens_per_second", "target_attainment", "target_utilization",
       "forecast_horizon_seconds", "burst_z", "scale_down_delay_seconds", "max_scale_down_step",
       "kv_target_ratio", "learn_capacity", "recurring_bursts"}));
  scale::DisaggPolicyConfig c;
  c.min_replicas = common.min_replicas;
  c.max_replicas = common.max_replicas;
  GS_RETURN_IF_ERROR(ReadRole(block, path, c));
  GS_ASSIGN_OR_RETURN(c.capacity_tokens_per_second,
                      ReadRanged(block, "capacity_tokens_per_second", path, 0, 0, false, kBig));
  GS_RETURN_IF_ERROR(ReadDynamics(block, path, c));
  GS_RETURN_IF_ERROR(ReadDisaggProfile(block, path, c));
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
                            "must be > 0 (a load test's figure for one replica of this role), "
                            "or name the role profile instead: profile: FILE (gpuscale profile "
                            "--role)");
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
