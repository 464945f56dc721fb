// The `capability` family: Scaler's capability-aware controller (one of Scaler's scaling
// policies). Tasks are grouped by the capability set they require, worker groups by the set
// they provide; a group serves a task when the task's set is a subset of the group's. For every
// required set S with tasks: tasks(S) / capable_workers(S) > upper_task_ratio (or no capable
// worker at all) starts one group for S on the first adapter that provides S and has room. For
// every provided set W: tasks(W) / workers(W) < lower_task_ratio shuts down W's last group,
// where tasks(W) counts the tasks W can serve that no less specialised running set (a strict
// subset of W) can serve, unless it is the last group able to serve some pending task, or its
// removal would push some set straight over upper_task_ratio (an immediate scale-up), or the
// task counts are untrusted this tick (metrics error, negative counts).
//
// The Decision carries explicit GroupActions (start with capabilities / shutdown by id);
// desired_replicas is the group count after them. min/max_replicas bound the group count.
// When the input lists no adapters, one implicit adapter "default" provides any set with
// one worker per group.
//
// Ownership: owns its config; stateless between calls. Not thread-safe (see Policy).
#pragma once

#include <string_view>

#include "scale/policy.h"

namespace gpuscale::scale {

struct CapabilityPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  double upper_task_ratio = 5;    // tasks per capable worker above which a group starts
  double lower_task_ratio = 0.5;  // tasks per worker below which a group shuts down
};

class CapabilityPolicy final : public Policy {
 public:
  explicit CapabilityPolicy(CapabilityPolicyConfig config);

  std::string_view Family() const override { return "capability"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;

  const CapabilityPolicyConfig& config() const { return config_; }

 private:
  CapabilityPolicyConfig config_;
  AdapterCapacity implicit_adapter_;  // "default", used when the input lists no adapters
};

}  // namespace gpuscale::scale
