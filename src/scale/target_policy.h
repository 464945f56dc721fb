// The `target` policy family: Kubernetes HPA target tracking with KEDA's extras, as users of
// the Corrino (OCI AI Blueprints) autoscaling recipes get them from a ScaledObject.
//
// Each tick: every metric proposes a replica count (scale/target_metric.h, HPA's replica
// calculator) and the largest proposal wins; the HPA behavior (stabilization windows and
// rate policies, scale/hpa_behavior.h) turns it into the count to apply. KEDA adds:
//   - min_replicas 0: scale from zero when any metric is above its activation_threshold
//     (checked every polling_interval_seconds), and back to zero once every metric has
//     been inactive for cooldown_period_seconds; between 1 and max the HPA part runs.
//   - fallback: after more than failure_threshold consecutive errors of one metric, that
//     metric proposes `fallback.replicas` (KEDA pkg/fallback: NumberOfFailures > threshold).
// Missing or invalid metrics never lower the count. An explicit fallback may, but only on a
// tick without metrics_error; the daemon sets metrics_error when a read fails (a Prometheus
// query error, a failed scrape, a metric no ready replica exports), so for those failures a
// fallback only raises the count.
//
// Owns its windows and counters, so one instance serves one service; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scale/hpa_behavior.h"
#include "scale/policy.h"
#include "scale/target_metric.h"

namespace gpuscale::scale {

struct KedaFallback {
  int failure_threshold = 3;  // consecutive failed reads tolerated before falling back; >= 0
  int replicas = 1;           // what a failing metric then proposes; >= 0
};

struct TargetPolicyConfig {
  int min_replicas = 1;  // 0 enables KEDA scale-to-zero
  int max_replicas = 1;
  std::vector<TargetMetric> metrics;  // at least one
  double tolerance = 0.1;             // HPA --horizontal-pod-autoscaler-tolerance
  Behavior behavior = DefaultBehavior();
  double polling_interval_seconds = 30;  // KEDA pollingInterval default
  double cooldown_period_seconds = 300;  // KEDA cooldownPeriod default
  std::optional<KedaFallback> fallback;
};

class TargetPolicy final : public Policy {
 public:
  explicit TargetPolicy(TargetPolicyConfig config);

  std::string_view Family() const override { return "target"; }
  int MinReplicas() const override { return config_.min_replicas; }
  int MaxReplicas() const override { return config_.max_replicas; }
  // A metric that is absent from input.metrics counts as a failed read; with
  // input.metrics_error set the policy does not scale down this tick.
  Decision Evaluate(const ScalingInput& input) override;
  std::vector<std::string> MetricNames() const override;
  // Metrics with a `query` (prometheus triggers).
  std::vector<std::pair<std::string, std::string>> PromQueries() const override;

  // The metrics (with their PromQL queries) the daemon must deliver each tick.
  const TargetPolicyConfig& config() const { return config_; }

 private:
  struct Readings {
    std::vector<TargetReading> metrics;
    int winner = -1;           // index of the largest usable proposal, -1 when none
    bool any_active = false;   // some metric above its activation threshold
    bool any_missing = false;  // failed (without fallback) or no data
    bool fallback_active = false;
  };

  Readings ReadAll(const ScalingInput& input, int current);
  std::optional<Decision> ScaleToOrFromZero(const ScalingInput& input, int current,
                                            const Readings& readings);
  Decision FromZero(double now, bool poll_due, const Readings& readings) const;
  Decision RunHpa(const ScalingInput& input, int current, const Readings& readings);
  std::string HeldByMissingMetrics(const Readings& readings, bool metrics_error) const;

  TargetPolicyConfig config_;
  BehaviorLimiter limiter_;
  std::vector<int> consecutive_failures_;  // per metric, parallel to config_.metrics
  std::optional<double> last_active_seconds_;
  std::optional<double> last_poll_seconds_;
};

}  // namespace gpuscale::scale
