// The Corrino (OCI AI Blueprints) autoscaling recipes -> a target policy plus a node plan.
//
// Corrino turns `recipe_pod_autoscaling_params` into a KEDA ScaledObject with one prometheus
// trigger and HPA behavior, and `recipe_node_autoscaling_params` into a cluster-autoscaler
// node pool. We read the same fields into the equivalent gpuscale objects:
//   scaling_threshold          -> trigger threshold
//   query / collect_metrics_timespan -> the trigger's PromQL (default: share of requests
//                                 slower than 5 s end to end over the timespan)
//   scaling_metric_type (ours) -> the trigger's metricType. Default: Value for the default
//                                 query, AverageValue (KEDA's default) for one of the
//                                 recipe's own. Corrino renders AverageValue for its ratio
//                                 too, where the HPA computes ceil(ratio / threshold): at
//                                 most ceil(1 / threshold) replicas whatever max_replicas
//                                 says. Value computes ceil(current x ratio / threshold).
//   polling_interval           -> polling_interval_seconds
//   scaling_cooldown           -> cooldown_period_seconds
//   stabilization_window_up/down -> behavior.scale_up/down.stabilization_window_seconds
//   scaling_period_up/down     -> one `Pods: 1` rate policy per that many seconds
//   recipe_nvidia_gpu_count, recipe_node_shape (BM.GPU.H100.8 -> 8 GPUs) and min/max_nodes
//                              -> the node plan.
// Absent advanced fields take the values Corrino documents. Corrino's own example 3 puts the
// advanced fields in recipe_node_autoscaling_params, so they are accepted there too; the pod
// block wins when both have one.
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <string_view>

#include "config/policy_config.h"
#include "scale/metric_names.h"
#include "scale/target_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

constexpr std::string_view kPodBlock = "recipe_pod_autoscaling_params";
constexpr std::string_view kNodeBlock = "recipe_node_autoscaling_params";

// Corrino's documentation, "Advanced Configurations".
struct CorrinoDefaults {
  static constexpr std::string_view kTimespan = "5m";
  static constexpr double kThreshold = 0.5;
  static constexpr int kCooldownSeconds = 60;
  static constexpr int kPollingSeconds = 15;
  static constexpr int kStabilizationDownSeconds = 180;
  static constexpr int kPeriodDownSeconds = 90;
  static constexpr int kStabilizationUpSeconds = 120;
  static constexpr int kPeriodUpSeconds = 60;
};

#define GS_CORRINO_ADVANCED_KEYS                                                           \
  "collect_metrics_timespan", "scaling_threshold", "scaling_cooldown", "polling_interval", \
      "stabilization_window_down", "scaling_period_down", "stabilization_window_up",       \
      "scaling_period_up", "query", "scaling_metric_type"

YAML::Node Block(const YAML::Node& root, std::string_view key) {
  YAML::Node node = root[std::string(key)];
  if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return node;
}

// Where an advanced field lives: the pod block, else the node block (see header comment).
struct Source {
  YAML::Node node;
  std::string path;
};

Source AdvancedSource(const YAML::Node& pod, const YAML::Node& nodes, std::string_view key) {
  if (nodes.IsDefined() && nodes.IsMap() && nodes[std::string(key)].IsDefined() &&
      !pod[std::string(key)].IsDefined()) {
    return {nodes, std::string(kNodeBlock)};
  }
  return {pod, std::string(kPodBlock)};
}

Result<int> ReadSeconds(const YAML::Node& pod, const YAML::Node& nodes, std::string_view key,
                        int fallback, int lo, int hi) {
  const Source s = AdvancedSource(pod, nodes, key);
  GS_ASSIGN_OR_RETURN(int v, yaml::ReadInt(s.node, key, s.path, fallback));
  if (v < lo || v > hi) {
    return yaml::FieldError(s.node[std::string(key)], yaml::Join(s.path, key),
                            fmt::format("must be between {} and {} seconds, got {}", lo, hi, v));
  }
  return v;
}

// A PromQL range such as "5m" or "90s"; a bare integer means seconds.
Result<std::string> ReadTimespan(const YAML::Node& pod, const YAML::Node& nodes) {
  const Source s = AdvancedSource(pod, nodes, "collect_metrics_timespan");
  GS_ASSIGN_OR_RETURN(std::string text, yaml::ReadString(s.node, "collect_metrics_timespan", s.path,
                                                         std::string(CorrinoDefaults::kTimespan)));
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string_view unit = std::string_view(text).substr(digits);
  if (digits > 0 && unit.empty()) return text + "s";
  for (std::string_view u : {"ms", "s", "m", "h", "d", "w", "y"}) {
    if (digits > 0 && unit == u) return text;
  }
  return yaml::FieldError(s.node["collect_metrics_timespan"],
                          yaml::Join(s.path, "collect_metrics_timespan"),
                          fmt::format("expected a duration such as 5m or 90s, got '{}'", text));
}

std::string DefaultQuery(const std::string& timespan) {
  return fmt::format(
      "1 - (sum(rate(vllm:e2e_request_latency_seconds_bucket{{le=\"5.0\"}}[{0}])) / "
      "sum(rate(vllm:e2e_request_latency_seconds_bucket{{le=\"+Inf\"}}[{0}])))",
      timespan);
}

Result<scale::TargetMetric> ReadTrigger(const YAML::Node& pod, const YAML::Node& nodes) {
  scale::TargetMetric m;
  const Source t = AdvancedSource(pod, nodes, "scaling_threshold");
  GS_ASSIGN_OR_RETURN(
      m.target, yaml::ReadDouble(t.node, "scaling_threshold", t.path, CorrinoDefaults::kThreshold));
  if (!(m.target > 0)) {
    return yaml::FieldError(t.node["scaling_threshold"], yaml::Join(t.path, "scaling_threshold"),
                            fmt::format("must be > 0, got {:g}", m.target));
  }
  GS_ASSIGN_OR_RETURN(std::string timespan, ReadTimespan(pod, nodes));
  const Source q = AdvancedSource(pod, nodes, "query");
  GS_ASSIGN_OR_RETURN(m.query, yaml::ReadString(q.node, "query", q.path, DefaultQuery(timespan)));
  if (m.query.empty()) {
    return yaml::FieldError(q.node["query"], yaml::Join(q.path, "query"), "is empty");
  }
  m.name = m.query;  // the daemon runs a PromQL metric name verbatim (scale/metric_names.h)
  // The default query is a ratio of the whole service's requests: Value (see the header).
  const bool ratio = m.query == DefaultQuery(timespan);
  const Source k = AdvancedSource(pod, nodes, "scaling_metric_type");
  GS_ASSIGN_OR_RETURN(std::string type, yaml::ReadString(k.node, "scaling_metric_type", k.path,
                                                         ratio ? "Value" : "AverageValue"));
  if (type == "Value") {
    m.type = scale::MetricTargetType::kValue;
  } else if (type == "AverageValue") {
    m.type = scale::MetricTargetType::kAverageValue;
  } else {
    return yaml::FieldError(k.node["scaling_metric_type"],
                            yaml::Join(k.path, "scaling_metric_type"),
                            fmt::format("expected Value or AverageValue, got '{}'", type));
  }
  return m;
}

scale::ScalingRules OnePodPer(int window_seconds, int period_seconds) {
  return scale::ScalingRules{
      static_cast<double>(window_seconds),
      scale::SelectPolicy::kMax,
      {{scale::ScalingPolicyType::kPods, 1, static_cast<double>(period_seconds)}}};
}

Result<scale::TargetPolicyConfig> ReadPodParams(const YAML::Node& pod, const YAML::Node& nodes) {
  const std::string path(kPodBlock);
  scale::TargetPolicyConfig c;
  GS_ASSIGN_OR_RETURN(c.min_replicas, yaml::ReadInt(pod, "min_replicas", path, 1));
  GS_ASSIGN_OR_RETURN(c.max_replicas, yaml::ReadInt(pod, "max_replicas", path));
  if (c.min_replicas < 0) {
    return yaml::FieldError(pod["min_replicas"], yaml::Join(path, "min_replicas"), "must be >= 0");
  }
  if (c.max_replicas < std::max(c.min_replicas, 1)) {
    return yaml::FieldError(pod["max_replicas"], yaml::Join(path, "max_replicas"),
                            fmt::format("must be >= min_replicas ({}) and >= 1, got {}",
                                        c.min_replicas, c.max_replicas));
  }
  GS_ASSIGN_OR_RETURN(scale::TargetMetric trigger, ReadTrigger(pod, nodes));
  c.metrics.push_back(std::move(trigger));
  using D = CorrinoDefaults;
  GS_ASSIGN_OR_RETURN(int cooldown,
                      ReadSeconds(pod, nodes, "scaling_cooldown", D::kCooldownSeconds, 0, 86400));
  GS_ASSIGN_OR_RETURN(int polling,
                      ReadSeconds(pod, nodes, "polling_interval", D::kPollingSeconds, 1, 86400));
  GS_ASSIGN_OR_RETURN(int window_down, ReadSeconds(pod, nodes, "stabilization_window_down",
                                                   D::kStabilizationDownSeconds, 0, 3600));
  GS_ASSIGN_OR_RETURN(int period_down, ReadSeconds(pod, nodes, "scaling_period_down",
                                                   D::kPeriodDownSeconds, 1, 1800));
  GS_ASSIGN_OR_RETURN(int window_up, ReadSeconds(pod, nodes, "stabilization_window_up",
                                                 D::kStabilizationUpSeconds, 0, 3600));
  GS_ASSIGN_OR_RETURN(int period_up,
                      ReadSeconds(pod, nodes, "scaling_period_up", D::kPeriodUpSeconds, 1, 1800));
  c.cooldown_period_seconds = cooldown;
  c.polling_interval_seconds = polling;
  c.behavior =
      scale::Behavior{OnePodPer(window_up, period_up), OnePodPer(window_down, period_down)};
  return c;
}

// "BM.GPU.H100.8" -> 8: OCI GPU shapes end in their GPU count.
std::optional<int> GpusOfShape(std::string_view shape) {
  const size_t dot = shape.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view tail = shape.substr(dot + 1);
  int gpus = 0;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), gpus);
  if (ec != std::errc() || end != tail.data() + tail.size() || gpus < 1) return std::nullopt;
  return gpus;
}

Result<std::optional<scale::NodePlanConfig>> ReadNodePlan(const YAML::Node& root,
                                                          const YAML::Node& nodes) {
  GS_ASSIGN_OR_RETURN(std::string shape,
                      yaml::ReadString(root, "recipe_node_shape", "", std::string()));
  const std::optional<int> gpus_per_node = GpusOfShape(shape);
  if (!gpus_per_node) {
    if (!nodes.IsDefined()) return std::optional<scale::NodePlanConfig>();  // pods only
    return yaml::FieldError(
        root["recipe_node_shape"].IsDefined() ? root["recipe_node_shape"] : root,
        "recipe_node_shape",
        fmt::format("needed to plan nodes: expected an OCI GPU shape ending "
                    "in its GPU count, such as BM.GPU.H100.8, got '{}'",
                    shape));
  }
  scale::NodePlanConfig plan;
  plan.gpus_per_node = *gpus_per_node;
  GS_ASSIGN_OR_RETURN(plan.gpus_per_replica, yaml::ReadInt(root, "recipe_nvidia_gpu_count", "", 1));
  if (plan.gpus_per_replica < 1 || plan.gpus_per_replica > plan.gpus_per_node) {
    return yaml::FieldError(root["recipe_nvidia_gpu_count"], "recipe_nvidia_gpu_count",
                            fmt::format("must be between 1 and the {} GPUs of a {} node, got {}",
                                        plan.gpus_per_node, shape, plan.gpus_per_replica));
  }
  GS_ASSIGN_OR_RETURN(int pool, yaml::ReadInt(root, "recipe_node_pool_size", "", 1));
  const std::string path(kNodeBlock);
  GS_ASSIGN_OR_RETURN(plan.min_nodes, yaml::ReadInt(nodes, "min_nodes", path, pool));
  GS_ASSIGN_OR_RETURN(plan.max_nodes, nodes.IsDefined() ? yaml::ReadInt(nodes, "max_nodes", path)
                                                        : Result<int>(pool));
  if (plan.min_nodes < 0) {
    return yaml::FieldError(nodes["min_nodes"], yaml::Join(path, "min_nodes"), "must be >= 0");
  }
  if (plan.max_nodes < std::max(plan.min_nodes, 1)) {
    return yaml::FieldError(
        nodes.IsDefined() ? nodes["max_nodes"] : root,
        nodes.IsDefined() ? yaml::Join(path, "max_nodes") : "recipe_node_pool_size",
        fmt::format("must be >= min_nodes ({}) and >= 1, got {}", plan.min_nodes, plan.max_nodes));
  }
  return std::optional<scale::NodePlanConfig>(plan);
}

}  // namespace

Result<PolicySpec> ParseCorrinoRecipe(const YAML::Node& root) {
  if (!root.IsMap()) {
    return yaml::FieldError(root, "<root>", "expected a recipe JSON object");
  }
  const YAML::Node pod = Block(root, kPodBlock);
  const YAML::Node nodes = Block(root, kNodeBlock);
  if (!pod.IsDefined()) {
    return yaml::FieldError(root, std::string(kPodBlock),
                            "required to autoscale: add at least {\"min_replicas\": 1, "
                            "\"max_replicas\": 4}");
  }
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      pod, kPodBlock, {"min_replicas", "max_replicas", GS_CORRINO_ADVANCED_KEYS}));
  if (nodes.IsDefined()) {
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(nodes, kNodeBlock,
                                            {"min_nodes", "max_nodes", GS_CORRINO_ADVANCED_KEYS}));
  }
  GS_ASSIGN_OR_RETURN(scale::TargetPolicyConfig config, ReadPodParams(pod, nodes));
  PolicySpec spec;
  GS_ASSIGN_OR_RETURN(spec.node_plan, ReadNodePlan(root, nodes));
  spec.policy = std::make_unique<scale::TargetPolicy>(std::move(config));
  return spec;
}

Result<PolicySpec> LoadCorrinoRecipeFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  return ParseCorrinoRecipe(root);
}

}  // namespace gpuscale::config
