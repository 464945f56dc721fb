#include "scale/target_metric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "scale/enum_names.h"
#include "scale/policy_util.h"

namespace gpuscale::scale {
namespace {

// HPA works in milli-units, so 0.6 / 0.2 * 1 is exactly 3; with doubles it may come out a
// hair above 3. Shaving a tiny epsilon keeps ceil() from adding a phantom replica.
int CeilReplicas(double x) {
  if (!(x > 0)) return 0;
  const double c = std::ceil(x - 1e-9);
  return c >= 1e9 ? 1'000'000'000 : static_cast<int>(c);
}

bool WithinTolerance(double ratio, double tolerance) { return std::abs(1.0 - ratio) <= tolerance; }

double Aggregate(const std::vector<double>& values, Aggregation aggregation) {
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  switch (aggregation) {
    case Aggregation::kSum:
      return sum;
    case Aggregation::kMax:
      return *std::max_element(values.begin(), values.end());
    case Aggregation::kMin:
      return *std::min_element(values.begin(), values.end());
    case Aggregation::kAverage:
      break;
  }
  return sum / static_cast<double>(values.size());
}

// HPA getUsageRatioReplicaCount (Value targets): scales the replica count by the ratio.
int ProposeForRatio(double ratio, int current, double tolerance) {
  if (current == 0) return CeilReplicas(ratio);
  if (WithinTolerance(ratio, tolerance)) return current;
  return CeilReplicas(ratio * current);
}

// HPA GetExternalPerPodMetricReplicas (AverageValue of a service-level total).
int ProposeForTotal(double total, double target, int current, double tolerance) {
  if (current == 0) return CeilReplicas(total / target);
  if (WithinTolerance(total / (target * current), tolerance)) return current;
  return CeilReplicas(total / target);
}

// HPA calcPlainMetricReplicas (Pods/Resource metrics): `level` per reporting replica,
// `reporting` replicas reported, the rest of `current` are missing.
int ProposeForPerReplica(double level, int reporting, double target, int current,
                         double tolerance) {
  const double ratio = level / target;
  const int missing = std::max(0, current - reporting);
  if (missing == 0) {
    if (WithinTolerance(ratio, tolerance)) return current;
    return CeilReplicas(ratio * reporting);
  }
  // Missing replicas: assume on target when scaling down, idle when scaling up; both
  // dampen the change, and a flip of direction means "do nothing".
  double sum = level * reporting;
  if (ratio < 1.0) sum += missing * target;
  const int all = reporting + missing;
  const double new_ratio = sum / (target * all);
  if (WithinTolerance(new_ratio, tolerance) || (ratio < 1.0 && new_ratio > 1.0) ||
      (ratio > 1.0 && new_ratio < 1.0)) {
    return current;
  }
  const int proposal = CeilReplicas(new_ratio * all);
  if ((new_ratio < 1.0 && proposal > current) || (new_ratio > 1.0 && proposal < current)) {
    return current;
  }
  return proposal;
}

TargetReading Failed(const TargetMetric& metric, std::string why) {
  TargetReading r;
  r.status = TargetReading::Status::kFailed;
  r.note = fmt::format("{}: {}", metric.name, why);
  return r;
}

}  // namespace

std::string_view MetricTargetTypeName(MetricTargetType type) {
  switch (type) {
    case MetricTargetType::kValue:
      return "value";
    case MetricTargetType::kAverageValue:
      return "average_value";
    case MetricTargetType::kUtilization:
      return "average_utilization";
  }
  return "value";
}

namespace {

TargetReading FromService(const TargetMetric& metric, double value, int current, double tolerance) {
  if (!IsUsableSample(value)) return Failed(metric, fmt::format("invalid value {}", value));
  TargetReading r;
  r.status = TargetReading::Status::kOk;
  r.value = value;
  // A service-level Utilization is already an average over replicas: scale like Value.
  r.proposal = metric.type == MetricTargetType::kAverageValue
                   ? ProposeForTotal(value, metric.target, current, tolerance)
                   : ProposeForRatio(value / metric.target, current, tolerance);
  r.note = fmt::format("{} = {:g} (service) vs {} {:g} -> {}", metric.name, value,
                       MetricTargetTypeName(metric.type), metric.target, r.proposal);
  return r;
}

TargetReading FromReplicas(const TargetMetric& metric, const std::vector<double>& reported,
                           int current, double tolerance) {
  std::vector<double> values;
  for (double v : reported) {
    if (IsUsableSample(v)) values.push_back(v);
  }
  if (values.empty()) {
    if (!reported.empty()) return Failed(metric, "no valid per-replica value");
    TargetReading r;
    r.status = TargetReading::Status::kNoData;
    r.note = fmt::format("{}: no ready replica reported a value", metric.name);
    return r;
  }
  TargetReading r;
  r.status = TargetReading::Status::kOk;
  r.value = Aggregate(values, metric.aggregation);
  const int reporting = static_cast<int>(values.size());
  if (metric.type == MetricTargetType::kValue) {
    r.proposal = ProposeForRatio(r.value / metric.target, current, tolerance);
  } else if (metric.aggregation == Aggregation::kSum) {
    r.proposal = ProposeForTotal(r.value, metric.target, current, tolerance);
  } else {
    r.proposal = ProposeForPerReplica(r.value, reporting, metric.target, current, tolerance);
  }
  r.note = fmt::format("{} = {:g} ({} of {} replicas) vs {} {:g} -> {}", metric.name, r.value,
                       AggregationName(metric.aggregation), reporting,
                       MetricTargetTypeName(metric.type), metric.target, r.proposal);
  return r;
}

}  // namespace

TargetReading ReadMetric(const TargetMetric& metric, const MetricValue* value, int current,
                         double tolerance) {
  if (value == nullptr) return Failed(metric, "not reported this tick");
  current = std::max(current, 0);
  if (value->service_value) return FromService(metric, *value->service_value, current, tolerance);
  return FromReplicas(metric, value->per_replica, current, tolerance);
}

}  // namespace gpuscale::scale
