#include "scale/disagg_policy.h"

#include <fmt/format.h>

#include <cmath>

#include "scale/metric_names.h"
#include "scale/policy_util.h"

namespace gpuscale::scale {

std::string_view PoolRoleName(PoolRole role) {
  return role == PoolRole::kPrefill ? "prefill" : "decode";
}

SloPolicyConfig DisaggPolicy::InnerConfig(const DisaggPolicyConfig& c) {
  SloPolicyConfig s;
  s.min_replicas = c.min_replicas;
  s.max_replicas = c.max_replicas;
  s.target_attainment = c.target_attainment;
  // Token mode counting the role's tokens: a prefill replica makes one token per request (a
  // weight of 1 adds a token to each prompt), a decode replica prefills nothing.
  s.output_token_weight = 1;
  s.prompt_token_weight = c.role == PoolRole::kPrefill ? 1 : 0;
  s.initial_capacity_tokens_per_second = c.capacity_tokens_per_second;
  s.mix_capacities = c.mix_capacities;
  s.target_utilization = c.target_utilization;
  s.forecast_horizon = c.forecast_horizon;
  s.burst_z = c.burst_z;
  s.scale_down_delay = c.scale_down_delay;
  s.max_scale_down_step = c.max_scale_down_step;
  s.learn_capacity = c.learn_capacity;
  s.recurring_bursts = c.recurring_bursts;
  return s;
}

DisaggPolicy::DisaggPolicy(DisaggPolicyConfig config)
    : config_(std::move(config)), inner_(InnerConfig(config_)) {}

std::vector<std::string> DisaggPolicy::MetricNames() const {
  std::vector<std::string> out;
  for (std::string& name : inner_.MetricNames()) {
    if (config_.role == PoolRole::kDecode || name != metric_names::kTpotViolationRatio) {
      out.push_back(std::move(name));
    }
  }
  if (config_.role == PoolRole::kDecode) out.emplace_back(metric_names::kKvUsage);
  return out;
}

int DisaggPolicy::KvFloor(const ScalingInput& input) const {
  if (config_.role != PoolRole::kDecode || !(config_.kv_target_ratio > 0)) return 0;
  const MetricReading kv =
      ReadMetric(input, std::string(metric_names::kKvUsage), Aggregation::kSum);
  if (!kv.value) return 0;
  // vLLM's gauge is a 0..1 ratio; the sum over replicas is the cache the pool's sequences fill.
  return static_cast<int>(std::ceil(*kv.value / config_.kv_target_ratio - 1e-9));
}

Decision DisaggPolicy::Evaluate(const ScalingInput& input) {
  // Decode latency is not the prefill pool's to answer for. The decode pool answers for both
  // of its replicas' ratios: TPOT, and TTFT, which on a decode replica is the wait for a
  // decode slot after the KV arrived (a late second token for the user; vLLM's TTFT
  // histogram on a decode worker measures the same).
  ScalingInput role_input = input;
  if (config_.role == PoolRole::kPrefill) {
    role_input.metrics.erase(std::string(metric_names::kTpotViolationRatio));
  }
  Decision d = inner_.Evaluate(role_input);
  d.reason = fmt::format("{}: {}", PoolRoleName(config_.role), d.reason);
  const int floor = ClampReplicas(KvFloor(input), config_.min_replicas, config_.max_replicas);
  if (floor > d.desired_replicas) {
    d.reason = fmt::format("{}: KV cache use needs {} replicas at {} per replica (over: {})",
                           PoolRoleName(config_.role), floor, FormatNumber(config_.kv_target_ratio),
                           d.reason);
    d.desired_replicas = floor;
  }
  return d;
}

}  // namespace gpuscale::scale
