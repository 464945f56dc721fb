// The `kpa` policy family: Knative Serving's Knative Pod Autoscaler, re-implemented after
// knative/serving pkg/autoscaler/scaling/autoscaler.go (Scale) and the KPA scale-to-zero
// handling (pkg/reconciler/autoscaling/kpa/scaler.go).
//
// Each tick the policy adds the service's total concurrency (the sum of the configured
// metrics, e.g. running + waiting requests) to a history and averages it over a stable
// window (default 60 s) and a panic window (default 10 % of it). Desired replicas are
// ceil(average / (target_concurrency * target_utilization)), limited per tick to
// [floor(ready / max_scale_down_rate), ceil(ready * max_scale_up_rate)]. When the panic-window
// demand reaches panic_threshold (200 %) of the ready replicas the policy panics: it follows
// the larger of the two windows and never scales down, until a whole stable window passes
// without crossing the threshold. With min_replicas 0, a zero recommendation removes the
// last replica only after scale_to_zero_grace_period_seconds.
//
// Owns its history, so one instance serves one service; not thread-safe.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scale/policy.h"

namespace gpuscale::scale {

// Field defaults are Knative's config-autoscaler defaults.
struct KpaPolicyConfig {
  int min_replicas = 0;
  int max_replicas = 1;
  double target_concurrency = 100;            // per replica; container-concurrency-target-default
  double target_utilization_percentage = 70;  // container-concurrency-target-percentage
  // Summed into the service's concurrency: service_value as-is, else the per-replica sum.
  std::vector<std::string> concurrency_metrics = {"vllm:num_requests_running",
                                                  "vllm:num_requests_waiting"};
  double stable_window_seconds = 60;
  double panic_window_percentage = 10;  // of the stable window
  double panic_threshold_percentage = 200;
  double max_scale_up_rate = 1000;
  double max_scale_down_rate = 2;
  double scale_to_zero_grace_period_seconds = 30;
};

class KpaPolicy final : public Policy {
 public:
  explicit KpaPolicy(KpaPolicyConfig config) : config_(std::move(config)) {}

  std::string_view Family() const override { return "kpa"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  // A missing, NaN or negative concurrency metric keeps the current count (Knative returns
  // an invalid scale result and leaves the revision alone).
  Decision Evaluate(const ScalingInput& input) override;
  std::vector<std::string> MetricNames() const override { return config_.concurrency_metrics; }

  bool panicking() const { return panic_since_seconds_.has_value(); }
  const KpaPolicyConfig& config() const { return config_; }

 private:
  struct Sample {
    double at_seconds;
    double concurrency;
  };

  std::optional<double> ReadConcurrency(const ScalingInput& input, std::string* why) const;
  double WindowAverage(double now, double window_seconds) const;
  int Recommend(double now, int ready_replicas, std::string* load);
  int UpdatePanic(double now, int ready, int stable_pods, int panic_pods, double panic_demand);
  int ApplyScaleToZero(double now, int current, int desired, std::string* reason);

  KpaPolicyConfig config_;
  std::deque<Sample> samples_;
  std::optional<double> panic_since_seconds_;  // last time over the panic threshold
  int max_panic_pods_ = 0;
  std::optional<double> zero_since_seconds_;  // first tick that recommended zero
};

}  // namespace gpuscale::scale
