// The `ratio` family: Scaler's "vanilla" task-to-worker ratio controller (one of Scaler's
// scaling policies). Tasks are queued + running requests over all demands; workers are the
// workers of the reported groups, or current_replicas * workers_per_group when no groups are
// reported. When tasks / workers > upper_task_ratio one worker group (replica) is added; when
// it is < lower_task_ratio one is removed, unless the removal would push the ratio straight
// back above upper_task_ratio (which would flap), or the task counts are untrusted this tick
// (metrics error, negative counts): gpuscale never scales in on missing data.
//
// Ownership: owns its config; stateless between calls. Not thread-safe (see Policy).
#pragma once

#include <string_view>

#include "scale/policy.h"

namespace gpuscale::scale {

struct RatioPolicyConfig {
  int min_replicas = 1;
  int max_replicas = 1;
  double upper_task_ratio = 10;  // tasks per worker above which a group is added
  double lower_task_ratio = 1;   // tasks per worker below which a group is removed
  int workers_per_group = 1;     // used when the input reports no groups
};

class RatioPolicy final : public Policy {
 public:
  explicit RatioPolicy(RatioPolicyConfig config) : config_(config) {}

  std::string_view Family() const override { return "ratio"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  Decision Evaluate(const ScalingInput& input) override;

  const RatioPolicyConfig& config() const { return config_; }

 private:
  RatioPolicyConfig config_;
};

}  // namespace gpuscale::scale
