// One metric of a target policy and the replica count it asks for: Kubernetes HPA's replica
// calculator (kubernetes pkg/controller/podautoscaler/replica_calculator.go) applied to
// gpuscale's MetricValue, plus the value KEDA compares with its activation threshold.
//
// Value semantics follow the HPA MetricTarget types:
//   kValue        desired = ceil(current * metric / target)     (Object/External `Value`)
//   kAverageValue desired = ceil(total / target)                 (Pods / External `AverageValue`)
//   kUtilization  like kAverageValue with per-replica percentages (Resource `Utilization`)
// A change within `tolerance` of the target (|ratio - 1| <= tolerance) keeps `current`.
//
// Pure functions and plain structs; thread-compatible.
#pragma once

#include <string>

#include "scale/policy.h"

namespace gpuscale::scale {

enum class MetricTargetType { kValue, kAverageValue, kUtilization };

struct TargetMetric {
  std::string name;  // key in ScalingInput::metrics (a KEDA trigger's `name`)
  MetricTargetType type = MetricTargetType::kAverageValue;
  double target = 1;  // value, average value or average utilization; > 0
  // How per-replica values collapse when no service-level value was reported.
  Aggregation aggregation = Aggregation::kAverage;
  // KEDA: the service is active while the metric is strictly above this (default 0); only
  // consulted for scaling to and from zero replicas.
  double activation_threshold = 0;
  std::string query;  // PromQL the daemon runs for this metric; empty = scraped by name
};

struct TargetReading {
  enum class Status {
    kOk,      // `proposal` is valid
    kNoData,  // nothing to decide on (no ready replica reported a value); not an error
    kFailed,  // absent, NaN or negative: a metric error (counts toward KEDA fallback)
  };
  Status status = Status::kFailed;
  double value = 0;  // the service-level value (compared with activation_threshold)
  int proposal = 0;  // replicas this metric asks for
  std::string note;  // e.g. "queue = 200 vs value 100 (ratio 2.00) -> 6"
};

// Computes one metric's proposal for `current` replicas. `value` is null when the metric
// was not reported. Per-replica values that are NaN, infinite or negative are ignored (that
// replica counts as missing); a bad service_value makes the reading kFailed.
// With per-replica AverageValue/Utilization metrics, replicas without a value count as 0
// when scaling up and as exactly on target when scaling down (HPA's missing-pods rule), so
// missing data never causes a scale-down.
TargetReading ReadMetric(const TargetMetric& metric, const MetricValue* value, int current,
                         double tolerance);

std::string_view MetricTargetTypeName(MetricTargetType type);

}  // namespace gpuscale::scale
