// ParseSloPolicy: the `slo:` block of a policy file (scale/slo_policy.h documents the
// algorithm). Every field is optional:
//
//   slo:
//     profile: PATH                   # a capacity profile (gpuscale profile): token mode
//                                     # with its fitted weight and capacity; excludes the
//                                     # two fields below it names, sets target_attainment
//     target_attainment: 0.99         # share of requests meeting the SLO, (0, 1]
//     initial_capacity_rps: 10        # per-replica requests/s at the SLO, > 0 (learned after)
//     output_token_weight: 0          # >= 0; > 0 counts load in prompt-token equivalents
//     initial_capacity_tokens_per_second: 0  # > 0 when output_token_weight > 0
//     target_utilization: 0.85        # (0, 1]
//     forecast_horizon_seconds: 75    # >= 0, about cold start + control interval
//     trend_window_seconds: 120       # >= 0, history that must confirm a rising trend
//     burst_z: 2                      # >= 0
//     scale_down_delay_seconds: 300   # >= 0
//     max_scale_down_step: 1          # >= 1
//     spare_replicas: 0               # >= 0, warm replicas beyond the forecast need
//     follow_short_rate: true         # false: forecast from the 2-minute rate, no trend
//     learn_capacity: true
//     min_capacity_ratio: 0.25        # (0, 1]; cuts never take capacity below this x initial
//     probe_load_ratio: 0.9           # (0, 1]; 1 = no probing above loads seen to hold
//     ready_grace_seconds: 45         # >= 0; violations after a replica turns ready, ignored
//     recurring_bursts: true          # keep ready for bursts that came back (burst_memory.h)
//     burst_lead_seconds: 90          # >= 0; ready this long before an expected burst
#include <fmt/format.h>

#include <cmath>

#include "config/policy_config.h"
#include "config/policy_profile.h"
#include "config/read_ranged.h"
#include "scale/slo_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {

namespace {

// The capacity and load-unit fields: initial_capacity_rps, output_token_weight and
// initial_capacity_tokens_per_second (required > 0 once output_token_weight > 0).
Status ReadCapacity(const YAML::Node& block, const std::string& path, scale::SloPolicyConfig& c) {
  constexpr double kBig = 1e9;
  GS_ASSIGN_OR_RETURN(c.initial_capacity_rps, ReadRanged(block, "initial_capacity_rps", path,
                                                         c.initial_capacity_rps, 0, true, kBig));
  GS_ASSIGN_OR_RETURN(c.output_token_weight, ReadRanged(block, "output_token_weight", path,
                                                        c.output_token_weight, 0, false, kBig));
  GS_ASSIGN_OR_RETURN(c.initial_capacity_tokens_per_second,
                      ReadRanged(block, "initial_capacity_tokens_per_second", path,
                                 c.initial_capacity_tokens_per_second, 0, false, kBig));
  if (c.output_token_weight > 0 && c.initial_capacity_tokens_per_second <= 0) {
    const std::string key = "initial_capacity_tokens_per_second";
    return yaml::FieldError(block[key].IsDefined() ? block[key] : block, yaml::Join(path, key),
                            "must be > 0 when output_token_weight is set (token mode)");
  }
  return OkStatus();
}

// `profile: PATH` (config/policy_profile.h): token mode with the profile's fit, and its
// target ratio as target_attainment. The weight and the capacity are one least-squares fit,
// so neither may be set beside the profile: one from the fit and one typed in would not
// describe the same replica (an error rather than a silent override). target_attainment may
// be given only if equal to the profile's: a capacity holds at one target.
Status ReadProfile(const YAML::Node& block, const std::string& path, scale::SloPolicyConfig& c) {
  const YAML::Node named = block["profile"];
  if (!named.IsDefined()) return OkStatus();
  const std::string profile_field = yaml::Join(path, "profile");
  for (const char* key : {"output_token_weight", "initial_capacity_tokens_per_second"}) {
    if (!block[key].IsDefined()) continue;
    return yaml::FieldError(
        block[key], yaml::Join(path, key),
        fmt::format("is set beside {} (line {}), whose fit gives the weight and capacity "
                    "together; remove one of them",
                    profile_field, yaml::LineOf(named)));
  }
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile p, LoadNamedProfile(block, path));
  if (p.role != profile::ProfileRole::kAggregated) {
    return yaml::FieldError(
        named, profile_field,
        fmt::format("names a {0} role profile (one pool's replica of a disaggregated service), "
                    "which the disagg policy reads (disagg: {{role: {0}, profile: ...}}); the "
                    "slo policy needs an aggregated replica's profile: gpuscale profile "
                    "without --role",
                    profile::ProfileRoleName(p.role)));
  }
  if (!(p.output_token_weight > 0)) {
    return yaml::FieldError(named, profile_field,
                            "the profile's fit.output_token_weight is 0, and token mode needs a "
                            "weight > 0; set output_token_weight and "
                            "initial_capacity_tokens_per_second instead");
  }
  c.output_token_weight = p.output_token_weight;
  c.initial_capacity_tokens_per_second = p.capacity_tokens_per_second;
  // Each mix's own capacity: the policy counts a mix served below the fit's line as more load.
  c.mix_capacities.clear();
  for (const profile::MixProfile& m : p.mixes) {
    if (m.capacity_tokens_per_second > 0) {
      c.mix_capacities.push_back({static_cast<double>(m.mix.prompt_tokens),
                                  static_cast<double>(m.mix.output_tokens),
                                  m.capacity_tokens_per_second});
    }
  }
  // Range first: ReadProfileTarget compares the value only.
  if (Result<double> ranged =
          ReadRanged(block, "target_attainment", path, c.target_attainment, 0, true, 1);
      !ranged) {
    return Unexpected<Error>(ranged.error());
  }
  return ReadProfileTarget(block, path, p, c.target_attainment);
}

// The forecast and scale-in fields.
Status ReadDynamics(const YAML::Node& block, const std::string& path, scale::SloPolicyConfig& c) {
  constexpr double kBig = 1e9;
  GS_ASSIGN_OR_RETURN(c.target_utilization, ReadRanged(block, "target_utilization", path,
                                                       c.target_utilization, 0, true, 1));
  GS_ASSIGN_OR_RETURN(double horizon, ReadRanged(block, "forecast_horizon_seconds", path,
                                                 c.forecast_horizon.count(), 0, false, kBig));
  c.forecast_horizon = Seconds{horizon};
  GS_ASSIGN_OR_RETURN(double trend_window, ReadRanged(block, "trend_window_seconds", path,
                                                      c.trend_window.count(), 0, false, kBig));
  c.trend_window = Seconds{trend_window};
  GS_ASSIGN_OR_RETURN(c.burst_z, ReadRanged(block, "burst_z", path, c.burst_z, 0, false, 100));
  GS_ASSIGN_OR_RETURN(double delay, ReadRanged(block, "scale_down_delay_seconds", path,
                                               c.scale_down_delay.count(), 0, false, kBig));
  c.scale_down_delay = Seconds{delay};
  GS_ASSIGN_OR_RETURN(c.max_scale_down_step,
                      ReadAtLeast(block, "max_scale_down_step", path, c.max_scale_down_step, 1));
  GS_ASSIGN_OR_RETURN(c.spare_replicas,
                      ReadAtLeast(block, "spare_replicas", path, c.spare_replicas, 0));
  GS_ASSIGN_OR_RETURN(double grace, ReadRanged(block, "ready_grace_seconds", path,
                                               c.ready_grace.count(), 0, false, kBig));
  c.ready_grace = Seconds{grace};
  GS_ASSIGN_OR_RETURN(double lead, ReadRanged(block, "burst_lead_seconds", path,
                                              c.burst_lead.count(), 0, false, kBig));
  c.burst_lead = Seconds{lead};
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<scale::Policy>> ParseSloPolicy(const YAML::Node& block,
                                                      const std::string& path,
                                                      const CommonPolicyFields& common) {
  scale::SloPolicyConfig c;
  c.min_replicas = common.min_replicas;
  c.max_replicas = common.max_replicas;
  if (block && !block.IsNull()) {
    if (!block.IsMap()) return yaml::FieldError(block, path, "expected a mapping");
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
        block, path,
        {"target_attainment", "initial_capacity_rps", "output_token_weight",
         "initial_capacity_tokens_per_second", "target_utilization", "forecast_horizon_seconds",
         "trend_window_seconds", "burst_z", "scale_down_delay_seconds", "max_scale_down_step",
         "spare_replicas", "follow_short_rate", "learn_capacity", "probe_load_ratio",
         "min_capacity_ratio", "ready_grace_seconds", "recurring_bursts", "burst_lead_seconds",
         "profile"}));
    GS_RETURN_IF_ERROR(ReadProfile(block, path, c));
    GS_ASSIGN_OR_RETURN(c.target_attainment, ReadRanged(block, "target_attainment", path,
                                                        c.target_attainment, 0, true, 1));
    GS_RETURN_IF_ERROR(ReadCapacity(block, path, c));
    GS_RETURN_IF_ERROR(ReadDynamics(block, path, c));
    GS_ASSIGN_OR_RETURN(c.follow_short_rate,
                        yaml::ReadBool(block, "follow_short_rate", path, c.follow_short_rate));
    GS_ASSIGN_OR_RETURN(c.learn_capacity,
                        yaml::ReadBool(block, "learn_capacity", path, c.learn_capacity));
    GS_ASSIGN_OR_RETURN(c.recurring_bursts,
                        yaml::ReadBool(block, "recurring_bursts", path, c.recurring_bursts));
    GS_ASSIGN_OR_RETURN(c.probe_load_ratio, ReadRanged(block, "probe_load_ratio", path,
                                                       c.probe_load_ratio, 0, true, 1));
    GS_ASSIGN_OR_RETURN(c.min_capacity_ratio, ReadRanged(block, "min_capacity_ratio", path,
                                                         c.min_capacity_ratio, 0, true, 1));
  }
  return std::unique_ptr<scale::Policy>(std::make_unique<scale::SloPolicy>(c));
}

}  // namespace gpuscale::config
