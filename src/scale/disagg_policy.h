// The `disagg` family: sizes one pool of a prefill/decode disaggregated service (issue 24;
// sim/disagg.h) from the work of its role, as Dynamo's planner does:
//  - prefill: the prompt-token rate against the prompt tokens/s one replica sustains within
//    the TTFT target; TTFT violations (queue + prefill) tell it the capacity was too high;
//  - decode: the generated-token rate against the tokens/s one replica sustains within the
//    TPOT (inter-token latency) target, and at least enough replicas to keep each one's KV
//    cache use under kv_target_ratio (active sequences x context); TPOT violations teach, and
//    so do its replicas' TTFT violations: on a decode replica TTFT is the wait for a decode
//    slot after the KV arrived, which the user sees as a late second token.
// Each pool has its own instance, so the pools' ratio follows the prompt/output mix: a shift
// to longer prompts raises the prefill pool's demand alone, to longer outputs the decode
// pool's.
//
// Why a family of its own rather than `slo` with a role key: the forecast, capacity
// learning, burst memory and scale-down hysteresis are the `slo` policy's, reused by
// composition (an SloPolicy in token mode counting only the role's tokens, fed only the
// role's violation ratios), while what differs per role (which tokens are work, which latency
// target a pool answers to, the decode pool's KV floor) stays out of a config surface that
// aggregated services share; `family: disagg` on an aggregated service is then a visible
// mistake rather than a silent role-less `slo`.
//
// Capacities come from a profile (mix_capacities, e.g. the calibrated replica model's in the
// simulator: sim/role_capacity.h) and are then learned online as `slo` learns them.
// Pure; not thread-safe (see Policy).
#pragma once

#include <string_view>
#include <vector>

#include "scale/policy.h"
#include "scale/slo_policy.h"

namespace gpuscale::scale {

enum class PoolRole { kPrefill, kDecode };
std::string_view PoolRoleName(PoolRole role);

struct DisaggPolicyConfig {
  PoolRole role = PoolRole::kPrefill;
  int min_replicas = 1;
  int max_replicas = 1;
  double target_attainment = 0.99;
  // Per replica at the role's latency target: prompt tokens/s (prefill) or generated
  // tokens/s (decode), before learning. > 0.
  double capacity_tokens_per_second = 0;
  // The same per mix of mean prompt and output lengths (prefill: output 1); empty: one figure
  // for every mix. A decode replica's capacity falls with the context it holds.
  std::vector<MixCapacity> mix_capacities = {};
  double target_utilization = 0.8;  // of the capacity; the rest absorbs noise and queueing
  Seconds forecast_horizon{75};     // ~ cold start + one control interval
  double burst_z = 2.0;             // burst headroom in Poisson standard deviations
  Seconds scale_down_delay{300};
  int max_scale_down_step = 1;
  // Decode: the KV cache use per ready replica the pool is sized to stay under (0: no floor).
  double kv_target_ratio = 0.85;
  bool learn_capacity = true;
  bool recurring_bursts = true;
};

class DisaggPolicy final : public Policy {
 public:
  // REQUIRES: config.capacity_tokens_per_second > 0 (the parser checks it).
  explicit DisaggPolicy(DisaggPolicyConfig config);

  std::string_view Family() const override { return "disagg"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;
  std::vector<std::string> MetricNames() const override;

  const DisaggPolicyConfig& config() const { return config_; }
  double capacity() const { return inner_.capacity(); }

 private:
  static SloPolicyConfig InnerConfig(const DisaggPolicyConfig& c);
  // Decode: replicas that keep the KV use per replica under kv_target_ratio; 0 without data.
  int KvFloor(const ScalingInput& input) const;

  DisaggPolicyConfig config_;
  SloPolicy inner_;
};

}  // namespace gpuscale::scale
