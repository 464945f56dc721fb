// Family parsers for the Kubernetes-style families: `target` (HPA + KEDA) and `kpa`
// (Knative). docs/policies.md has the schemas. Every error names the field path
// and line, e.g. `target.behavior.scale_up.policies[0].type: expected one of Pods, Percent,
// got 'pods' (line 12)`. Ranges follow the upstream validation (HPA: windows <= 3600 s,
// periods 1..1800 s; Knative: stable window 6..3600 s, panic threshold 110..1000 %).
#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/policy_config.h"
#include "config/read_named.h"
#include "scale/enum_names.h"
#include "scale/kpa_policy.h"
#include "scale/metric_names.h"
#include "scale/target_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

// Reads parent[key] as a number in [lo, hi] (hi optional); `fallback` when absent.
Result<double> ReadRange(const YAML::Node& parent, std::string_view key, const std::string& path,
                         std::optional<double> fallback, double lo, std::optional<double> hi,
                         bool lo_exclusive = false) {
  GS_ASSIGN_OR_RETURN(double v, yaml::ReadDouble(parent, key, path, fallback));
  const bool low = lo_exclusive ? v <= lo : v < lo;
  if (low || (hi && v > *hi)) {
    const std::string want = hi ? fmt::format("between {:g} and {:g}", lo, *hi)
                                : fmt::format("{} {:g}", lo_exclusive ? ">" : ">=", lo);
    return yaml::FieldError(parent[std::string(key)], yaml::Join(path, key),
                            fmt::format("must be {}, got {:g}", want, v));
  }
  return v;
}

Result<int> ReadIntRange(const YAML::Node& parent, std::string_view key, const std::string& path,
                         std::optional<int> fallback, int lo, std::optional<int> hi) {
  GS_ASSIGN_OR_RETURN(int v, yaml::ReadInt(parent, key, path, fallback));
  if (v < lo || (hi && v > *hi)) {
    const std::string want =
        hi ? fmt::format("between {} and {}", lo, *hi) : fmt::format(">= {}", lo);
    return yaml::FieldError(parent[std::string(key)], yaml::Join(path, key),
                            fmt::format("must be {}, got {}", want, v));
  }
  return v;
}

// A sequence field; an absent key gives an empty (undefined) node.
Result<YAML::Node> ReadList(const YAML::Node& parent, std::string_view key,
                            const std::string& path) {
  YAML::Node node = parent[std::string(key)];
  if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  if (!node.IsSequence()) return yaml::FieldError(node, yaml::Join(path, key), "expected a list");
  return node;
}

Status CheckBounds(const std::string& path, const CommonPolicyFields& common) {
  if (common.min_replicas < 0) return InvalidArgument("must be >= 0", "min_replicas");
  if (common.max_replicas < common.min_replicas) {
    return InvalidArgument(fmt::format("must be >= min_replicas ({}), got {} (family {})",
                                       common.min_replicas, common.max_replicas, path),
                           "max_replicas");
  }
  return OkStatus();
}

// One HPA-style entry of `metrics`: the target value's key follows the type, as in
// Kubernetes' MetricTarget (value / averageValue / averageUtilization).
Result<scale::TargetMetric> ParseHpaMetric(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(node, path,
                           {"name", "type", "value", "average_value", "average_utilization",
                            "aggregation", "activation_threshold", "query"}));
  using T = scale::MetricTargetType;
  static constexpr scale::Spelling<T> types[] = {
      {T::kValue, "Value"}, {T::kAverageValue, "AverageValue"}, {T::kUtilization, "Utilization"}};
  scale::TargetMetric m;
  GS_ASSIGN_OR_RETURN(m.name, yaml::ReadString(node, "name", path));
  if (m.name.empty()) return yaml::FieldError(node["name"], yaml::Join(path, "name"), "is empty");
  GS_ASSIGN_OR_RETURN(m.type, ReadNamed(node, "type", path, types, {T::kAverageValue}));
  const std::string_view key = scale::MetricTargetTypeName(m.type);
  for (std::string_view other : {"value", "average_value", "average_utilization"}) {
    if (other != key && node[std::string(other)].IsDefined()) {
      return yaml::FieldError(
          node[std::string(other)], yaml::Join(path, other),
          fmt::format("does not go with type {}; use {}",
                      node["type"].IsDefined() ? node["type"].Scalar() : "AverageValue", key));
    }
  }
  GS_ASSIGN_OR_RETURN(m.target, ReadRange(node, key, path, std::nullopt, 0, std::nullopt, true));
  GS_ASSIGN_OR_RETURN(m.aggregation,
                      ReadNamed(node, "aggregation", path, scale::AggregationSpellings(),
                                {scale::Aggregation::kAverage}));
  GS_ASSIGN_OR_RETURN(m.activation_threshold,
                      ReadRange(node, "activation_threshold", path, 0.0, 0, std::nullopt));
  GS_ASSIGN_OR_RETURN(m.query, yaml::ReadString(node, "query", path, std::string()));
  return m;
}

// One KEDA-style prometheus trigger; its result arrives as the metric named `name`
// (default: the query text itself, which the daemon runs verbatim).
Result<scale::TargetMetric> ParseTrigger(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path,
                                          {"type", "name", "query", "threshold",
                                           "activation_threshold", "metric_type", "aggregation"}));
  using T = scale::MetricTargetType;
  static constexpr scale::Spelling<int> trigger_types[] = {{0, "prometheus"}};
  static constexpr scale::Spelling<T> metric_types[] = {{T::kAverageValue, "AverageValue"},
                                                        {T::kValue, "Value"}};
  GS_RETURN_IF_ERROR(ReadNamed(node, "type", path, trigger_types, {0}));
  scale::TargetMetric m;
  GS_ASSIGN_OR_RETURN(m.query, yaml::ReadString(node, "query", path));
  if (m.query.empty()) {
    return yaml::FieldError(node["query"], yaml::Join(path, "query"), "is empty");
  }
  GS_ASSIGN_OR_RETURN(m.name, yaml::ReadString(node, "name", path, m.query));
  GS_ASSIGN_OR_RETURN(m.type,
                      ReadNamed(node, "metric_type", path, metric_types, {T::kAverageValue}));
  GS_ASSIGN_OR_RETURN(m.target,
                      ReadRange(node, "threshold", path, std::nullopt, 0, std::nullopt, true));
  GS_ASSIGN_OR_RETURN(m.activation_threshold,
                      ReadRange(node, "activation_threshold", path, 0.0, 0, std::nullopt));
  GS_ASSIGN_OR_RETURN(m.aggregation,
                      ReadNamed(node, "aggregation", path, scale::AggregationSpellings(),
                                {scale::Aggregation::kAverage}));
  return m;
}

Result<scale::ScalingPolicy> ParseRatePolicy(const YAML::Node& node, const std::string& path) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path, {"type", "value", "period_seconds"}));
  using P = scale::ScalingPolicyType;
  static constexpr scale::Spelling<P> types[] = {{P::kPods, "Pods"}, {P::kPercent, "Percent"}};
  scale::ScalingPolicy p;
  GS_ASSIGN_OR_RETURN(p.type, ReadNamed(node, "type", path, types, std::nullopt));
  GS_ASSIGN_OR_RETURN(p.value, ReadIntRange(node, "value", path, std::nullopt, 1, std::nullopt));
  GS_ASSIGN_OR_RETURN(int period,
                      ReadIntRange(node, "period_seconds", path, std::nullopt, 1, 1800));
  p.period_seconds = period;
  return p;
}

// One direction of `behavior`; absent fields keep HPA's default for that direction.
Result<scale::ScalingRules> ParseRules(const YAML::Node& node, const std::string& path,
                                       scale::ScalingRules rules) {
  if (!node.IsDefined() || node.IsNull()) return rules;
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      node, path, {"stabilization_window_seconds", "select_policy", "policies"}));
  using S = scale::SelectPolicy;
  static constexpr scale::Spelling<S> selects[] = {
      {S::kMax, "Max"}, {S::kMin, "Min"}, {S::kDisabled, "Disabled"}};
  GS_ASSIGN_OR_RETURN(int window,
                      ReadIntRange(node, "stabilization_window_seconds", path,
                                   static_cast<int>(rules.stabilization_window_seconds), 0, 3600));
  rules.stabilization_window_seconds = window;
  GS_ASSIGN_OR_RETURN(rules.select_policy,
                      ReadNamed(node, "select_policy", path, selects, {rules.select_policy}));
  GS_ASSIGN_OR_RETURN(YAML::Node list, ReadList(node, "policies", path));
  if (list.IsDefined()) {
    rules.policies.clear();
    for (size_t i = 0; i < list.size(); ++i) {
      GS_ASSIGN_OR_RETURN(scale::ScalingPolicy p,
                          ParseRatePolicy(list[i], yaml::Index(yaml::Join(path, "policies"), i)));
      rules.policies.push_back(p);
    }
  }
  if (rules.policies.empty() && rules.select_policy != S::kDisabled) {
    return yaml::FieldError(node, yaml::Join(path, "policies"),
                            "needs at least one policy unless select_policy is Disabled");
  }
  return rules;
}

Result<scale::Behavior> ParseBehavior(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined() || node.IsNull()) return scale::DefaultBehavior();
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path, {"scale_up", "scale_down"}));
  scale::Behavior b;
  GS_ASSIGN_OR_RETURN(b.scale_up, ParseRules(node["scale_up"], yaml::Join(path, "scale_up"),
                                             scale::DefaultScaleUpRules()));
  GS_ASSIGN_OR_RETURN(b.scale_down, ParseRules(node["scale_down"], yaml::Join(path, "scale_down"),
                                               scale::DefaultScaleDownRules()));
  return b;
}

// KEDA's fallback only works for AverageValue metrics (it reports replicas * target).
Result<std::optional<scale::KedaFallback>> ParseFallback(
    const YAML::Node& block, const std::string& path,
    const std::vector<scale::TargetMetric>& metrics) {
  const YAML::Node node = block["fallback"];
  if (!node.IsDefined() || node.IsNull()) return std::optional<scale::KedaFallback>();
  const std::string here = yaml::Join(path, "fallback");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, here, {"failure_threshold", "replicas"}));
  scale::KedaFallback f;
  GS_ASSIGN_OR_RETURN(f.failure_threshold,
                      ReadIntRange(node, "failure_threshold", here, 3, 0, std::nullopt));
  GS_ASSIGN_OR_RETURN(f.replicas,
                      ReadIntRange(node, "replicas", here, std::nullopt, 0, std::nullopt));
  for (const scale::TargetMetric& m : metrics) {
    if (m.type != scale::MetricTargetType::kAverageValue) {
      return yaml::FieldError(node, here,
                              fmt::format("needs AverageValue metrics (as in KEDA); metric "
                                          "'{}' is {}",
                                          m.name, scale::MetricTargetTypeName(m.type)));
    }
  }
  return std::optional<scale::KedaFallback>(f);
}

Status ParseMetricLists(const YAML::Node& block, const std::string& path,
                        std::vector<scale::TargetMetric>& out) {
  GS_ASSIGN_OR_RETURN(YAML::Node metrics, ReadList(block, "metrics", path));
  GS_ASSIGN_OR_RETURN(YAML::Node triggers, ReadList(block, "triggers", path));
  for (size_t i = 0; metrics.IsDefined() && i < metrics.size(); ++i) {
    GS_ASSIGN_OR_RETURN(scale::TargetMetric m,
                        ParseHpaMetric(metrics[i], yaml::Index(yaml::Join(path, "metrics"), i)));
    out.push_back(std::move(m));
  }
  for (size_t i = 0; triggers.IsDefined() && i < triggers.size(); ++i) {
    GS_ASSIGN_OR_RETURN(scale::TargetMetric m,
                        ParseTrigger(triggers[i], yaml::Index(yaml::Join(path, "triggers"), i)));
    out.push_back(std::move(m));
  }
  if (out.empty()) {
    return yaml::FieldError(block, yaml::Join(path, "metrics"),
                            "a target policy needs at least one entry in metrics or triggers");
  }
  return OkStatus();
}

Status ParseConcurrencyMetrics(const YAML::Node& block, const std::string& path,
                               std::vector<std::string>& out) {
  GS_ASSIGN_OR_RETURN(YAML::Node names, ReadList(block, "concurrency_metrics", path));
  if (!names.IsDefined()) return OkStatus();  // keep the defaults
  out.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string field = yaml::Index(yaml::Join(path, "concurrency_metrics"), i);
    if (!names[i].IsScalar() || names[i].Scalar().empty()) {
      return yaml::FieldError(names[i], field, "expected a metric name");
    }
    out.push_back(names[i].Scalar());
  }
  if (out.empty()) {
    return yaml::FieldError(names, yaml::Join(path, "concurrency_metrics"),
                            "needs at least one metric name");
  }
  return OkStatus();
}

}  // namespace

Result<std::unique_ptr<scale::Policy>> ParseTargetPolicy(const YAML::Node& block,
                                                         const std::string& path,
                                                         const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(CheckBounds(path, common));
  if (!block.IsDefined() || block.IsNull()) {
    return InvalidArgument("required block is missing: add metrics or triggers", path);
  }
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(block, path,
                           {"metrics", "triggers", "tolerance", "behavior",
                            "polling_interval_seconds", "cooldown_period_seconds", "fallback"}));
  scale::TargetPolicyConfig c;
  c.min_replicas = common.min_replicas;
  c.max_replicas = common.max_replicas;
  GS_RETURN_IF_ERROR(ParseMetricLists(block, path, c.metrics));
  GS_ASSIGN_OR_RETURN(c.tolerance, ReadRange(block, "tolerance", path, 0.1, 0, 1));
  GS_ASSIGN_OR_RETURN(c.behavior, ParseBehavior(block["behavior"], yaml::Join(path, "behavior")));
  GS_ASSIGN_OR_RETURN(c.polling_interval_seconds, ReadRange(block, "polling_interval_seconds", path,
                                                            30.0, 0, std::nullopt, true));
  GS_ASSIGN_OR_RETURN(c.cooldown_period_seconds,
                      ReadRange(block, "cooldown_period_seconds", path, 300.0, 0, std::nullopt));
  GS_ASSIGN_OR_RETURN(c.fallback, ParseFallback(block, path, c.metrics));
  return std::unique_ptr<scale::Policy>(std::make_unique<scale::TargetPolicy>(std::move(c)));
}

Result<std::unique_ptr<scale::Policy>> ParseKpaPolicy(const YAML::Node& block,
                                                      const std::string& path,
                                                      const CommonPolicyFields& common) {
  GS_RETURN_IF_ERROR(CheckBounds(path, common));
  scale::KpaPolicyConfig c;
  c.min_replicas = common.min_replicas;
  c.max_replicas = common.max_replicas;
  c.concurrency_metrics = {std::string(scale::metric_names::kRunning),
                           std::string(scale::metric_names::kWaiting)};
  // Every field has a Knative default, so an absent block is a valid KPA.
  const YAML::Node b =
      block.IsDefined() && !block.IsNull() ? block : YAML::Node(YAML::NodeType::Map);
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      b, path,
      {"target_concurrency", "target_utilization_percentage", "concurrency_metrics",
       "stable_window_seconds", "panic_window_percentage", "panic_threshold_percentage",
       "max_scale_up_rate", "max_scale_down_rate", "scale_to_zero_grace_period_seconds"}));
  GS_ASSIGN_OR_RETURN(c.target_concurrency,
                      ReadRange(b, "target_concurrency", path, 100.0, 0.01, std::nullopt));
  GS_ASSIGN_OR_RETURN(c.target_utilization_percentage,
                      ReadRange(b, "target_utilization_percentage", path, 70.0, 1, 100));
  GS_ASSIGN_OR_RETURN(c.stable_window_seconds,
                      ReadRange(b, "stable_window_seconds", path, 60.0, 6, 3600));
  GS_ASSIGN_OR_RETURN(c.panic_window_percentage,
                      ReadRange(b, "panic_window_percentage", path, 10.0, 1, 100));
  GS_ASSIGN_OR_RETURN(c.panic_threshold_percentage,
                      ReadRange(b, "panic_threshold_percentage", path, 200.0, 110, 1000));
  GS_ASSIGN_OR_RETURN(c.max_scale_up_rate,
                      ReadRange(b, "max_scale_up_rate", path, 1000.0, 1, std::nullopt, true));
  GS_ASSIGN_OR_RETURN(c.max_scale_down_rate,
                      ReadRange(b, "max_scale_down_rate", path, 2.0, 1, std::nullopt, true));
  GS_ASSIGN_OR_RETURN(
      c.scale_to_zero_grace_period_seconds,
      ReadRange(b, "scale_to_zero_grace_period_seconds", path, 30.0, 0, std::nullopt));
  GS_RETURN_IF_ERROR(ParseConcurrencyMetrics(b, path, c.concurrency_metrics));
  return std::unique_ptr<scale::Policy>(std::make_unique<scale::KpaPolicy>(std::move(c)));
}

}  // namespace gpuscale::config
