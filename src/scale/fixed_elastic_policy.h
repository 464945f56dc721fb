// The `fixed_elastic` family: Scaler's hybrid controller (its fixed_elastic scaling policy). A
// primary adapter (the one with max_worker_groups == 1) gets one group, started once and never
// shut down; a secondary adapter (max_worker_groups > 1) adds groups when tasks / workers over
// all groups > upper_task_ratio and removes its own groups when the ratio < lower_task_ratio.
// Scale-in only ever shuts down secondary groups, never on untrusted task counts, and not when
// the removal would push the ratio straight back over upper_task_ratio.
//
// When the input lists no adapters, two implicit ones are used: "primary" (1 group) and
// "secondary" (max_replicas - 1 groups, at least 2), one worker per group. min/max_replicas
// bound the total group count. The Decision carries explicit GroupActions.
//
// "Started once": the primary start is requested at most once per policy instance; if the
// primary group later disappears, restarting it is the orchestrator's job, not a scaling
// decision.
//
// Input contract: `groups` lists every group the adapters accepted, including ones still
// starting (as Scaler's adapters answer a start with the new group's id).
//
// Ownership: owns its config and whether the primary was requested. Not thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "scale/policy.h"

namespace gpuscale::scale {

struct FixedElasticPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  double upper_task_ratio = 10;  // as the vanilla ratio controller
  double lower_task_ratio = 1;
};

class FixedElasticPolicy final : public Policy {
 public:
  explicit FixedElasticPolicy(FixedElasticPolicyConfig config);

  std::string_view Family() const override { return "fixed_elastic"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;

  const FixedElasticPolicyConfig& config() const { return config_; }

 private:
  FixedElasticPolicyConfig config_;
  std::vector<AdapterCapacity> implicit_adapters_;  // used when the input lists none
  bool primary_requested_ = false;
};

}  // namespace gpuscale::scale
