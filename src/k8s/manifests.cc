#include "k8s/manifests.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdio>

#include "orch/argv_template.h"

namespace gpuscale::k8s {
namespace {

constexpr char kAppLabel[] = "app.kubernetes.io/name";
constexpr int kProbePeriodSeconds = 10;

Status CheckName(const std::string& name, const std::string& field) {
  bool ok = !name.empty() && name.size() <= 63 && name.front() >= 'a' && name.front() <= 'z' &&
            name.back() != '-';
  for (const char c : name)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (ok) return OkStatus();
  return InvalidArgument(
      fmt::format("expected a DNS-1035 label (lower-case letters, digits and '-', starting "
                  "with a letter, at most 63 characters), got '{}'",
                  name),
      field);
}

Value Labels(const WorkloadSpec& w) {
  return Value::Of({{kAppLabel, w.name}, {"app.kubernetes.io/managed-by", "gpuscale"}});
}

Value Metadata(const WorkloadSpec& w) {
  Value meta = Value::Of({{"name", w.name}});
  if (!w.namespace_name.empty()) meta.Set("namespace", w.namespace_name);
  meta.Set("labels", Labels(w));
  return meta;
}

Value HttpProbe(const WorkloadSpec& w, int period_seconds, int failure_threshold) {
  return Value::Of({{"httpGet", Value::Of({{"path", w.readiness_path}, {"port", "http"}})},
                    {"periodSeconds", period_seconds},
                    {"failureThreshold", failure_threshold}});
}

// The container's command/args with placeholders expanded (see WorkloadSpec::argv).
Result<std::pair<Value, Value>> CommandAndArgs(const WorkloadSpec& w) {
  orch::ArgvVars vars;
  vars.port = std::to_string(w.container_port);
  for (int i = 0; i < w.gpus_per_replica; ++i) vars.gpus += (i ? "," : "") + std::to_string(i);
  vars.replica = "$(POD_NAME)";
  std::vector<std::string> argv = w.argv;
  if (!w.command_is_program) argv.insert(argv.begin(), "entrypoint");  // ExpandArgv wants argv[0]
  Result<std::vector<std::string>> result = orch::ExpandArgv(argv, vars);
  if (!result) {
    Error e = result.error();
    int index = 0;
    // Without a program, element i of the template is "command[i+1]" to ExpandArgv.
    if (!w.command_is_program && std::sscanf(e.field.c_str(), "command[%d]", &index) == 1) {
      e.field = fmt::format("args[{}]", index - 1);
    }
    return Unexpected<Error>(std::move(e));
  }
  const std::vector<std::string>& expanded = *result;
  Value command = Value::MakeList();
  Value args = Value::MakeList();
  if (w.command_is_program) command.Append(expanded[0]);
  for (size_t i = 1; i < expanded.size(); ++i) args.Append(expanded[i]);
  return std::make_pair(std::move(command), std::move(args));
}

bool UsesReplicaName(const WorkloadSpec& w) {
  for (const std::string& arg : w.argv) {
    if (arg.find("{replica}") != std::string::npos) return true;
  }
  return false;
}

Value Env(const WorkloadSpec& w) {
  Value env = Value::MakeList();
  if (UsesReplicaName(w)) {
    env.Append(Value::Of(
        {{"name", "POD_NAME"},
         {"valueFrom", Value::Of({{"fieldRef", Value::Of({{"fieldPath", "metadata.name"}})}})}}));
  }
  for (const auto& [name, value] : w.env) env.Append(Value::Of({{"name", name}, {"value", value}}));
  return env;
}

Result<Value> Container(const WorkloadSpec& w) {
  Value c = Value::Of({{"name", "server"}, {"image", w.image}});
  if (!w.argv.empty()) {
    GS_ASSIGN_OR_RETURN(auto command_args, CommandAndArgs(w));
    if (w.command_is_program) c.Set("command", std::move(command_args.first));
    c.Set("args", std::move(command_args.second));
  }
  Value env = Env(w);
  if (std::get<Value::List>(env.data()).size() > 0) c.Set("env", std::move(env));
  c.Set("ports",
        Value::List{Value::Of(
            {{"name", "http"}, {"containerPort", w.container_port}, {"protocol", "TCP"}})});
  if (w.gpus_per_replica > 0) {
    c.Set("resources",
          Value::Of({{"limits", Value::Of({{"nvidia.com/gpu", w.gpus_per_replica}})}}));
  }
  // Loading weights can take many minutes: the startup probe allows startup_timeout before
  // the liveness probe (which restarts a hung server) takes over.
  const int startup_failures =
      std::max(1, static_cast<int>(std::ceil(w.startup_timeout.count() / kProbePeriodSeconds)));
  c.Set("startupProbe", HttpProbe(w, kProbePeriodSeconds, startup_failures));
  c.Set("livenessProbe", HttpProbe(w, kProbePeriodSeconds, 3));
  c.Set("readinessProbe", HttpProbe(w, 5, 1));
  return c;
}

Result<Value> Deployment(const WorkloadSpec& w) {
  GS_ASSIGN_OR_RETURN(Value container, Container(w));
  Value pod_spec = Value::MakeMap();
  if (!w.node_shape.empty()) {
    pod_spec.Set("nodeSelector", Value::Of({{"node.kubernetes.io/instance-type", w.node_shape}}));
  }
  if (w.drain_timeout) {
    pod_spec.Set("terminationGracePeriodSeconds",
                 static_cast<int64_t>(std::llround(w.drain_timeout->count())));
  }
  pod_spec.Set("containers", Value::List{std::move(container)});
  Value template_spec =
      Value::Of({{"metadata", Value::Of({{"labels", Labels(w)}})}, {"spec", std::move(pod_spec)}});
  Value spec =
      Value::Of({{"replicas", w.initial_replicas},
                 {"selector", Value::Of({{"matchLabels", Value::Of({{kAppLabel, w.name}})}})},
                 {"template", std::move(template_spec)}});
  return Value::Of({{"apiVersion", "apps/v1"},
                    {"kind", "Deployment"},
                    {"metadata", Metadata(w)},
                    {"spec", std::move(spec)}});
}

Value ServiceObject(const WorkloadSpec& w) {
  Value port = Value::Of(
      {{"name", "http"}, {"port", w.service_port}, {"targetPort", "http"}, {"protocol", "TCP"}});
  Value spec = Value::Of({{"type", "ClusterIP"},
                          {"selector", Value::Of({{kAppLabel, w.name}})},
                          {"ports", Value::List{std::move(port)}}});
  return Value::Of({{"apiVersion", "v1"},
                    {"kind", "Service"},
                    {"metadata", Metadata(w)},
                    {"spec", std::move(spec)}});
}

// Kubernetes keeps behavior times as whole seconds within fixed ranges (autoscaling/v2).
Result<int> WholeSeconds(double seconds, int lo, int hi, const std::string& field) {
  const double rounded = std::round(seconds);
  if (std::abs(seconds - rounded) > 1e-9 || rounded < lo || rounded > hi) {
    return InvalidArgument(
        fmt::format("HPA needs whole seconds in {}..{}, got {:g}", lo, hi, seconds), field);
  }
  return static_cast<int>(rounded);
}

Result<Value> Rules(const scale::ScalingRules& rules, const std::string& field) {
  GS_ASSIGN_OR_RETURN(int window, WholeSeconds(rules.stabilization_window_seconds, 0, 3600,
                                               field + ".stabilization_window_seconds"));
  const char* select = rules.select_policy == scale::SelectPolicy::kMax   ? "Max"
                       : rules.select_policy == scale::SelectPolicy::kMin ? "Min"
                                                                          : "Disabled";
  Value policies = Value::MakeList();
  for (size_t i = 0; i < rules.policies.size(); ++i) {
    const scale::ScalingPolicy& p = rules.policies[i];
    GS_ASSIGN_OR_RETURN(int period,
                        WholeSeconds(p.period_seconds, 1, 1800,
                                     fmt::format("{}.policies[{}].period_seconds", field, i)));
    policies.Append(
        Value::Of({{"type", p.type == scale::ScalingPolicyType::kPods ? "Pods" : "Percent"},
                   {"value", p.value},
                   {"periodSeconds", period}}));
  }
  Value out = Value::Of({{"stabilizationWindowSeconds", window}, {"selectPolicy", select}});
  if (!rules.policies.empty()) out.Set("policies", std::move(policies));
  return out;
}

// The policy's metric name when it is a plain identifier (a named KEDA-style trigger),
// else "metric-<i>": unnamed metrics are named after their PromQL text.
std::string TriggerName(const scale::TargetMetric& m, size_t i) {
  bool plain = !m.name.empty() && m.name != m.query && m.name.size() <= 63;
  for (const char c : m.name)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_');
  return plain ? m.name : fmt::format("metric-{}", i);
}

Result<Value> PrometheusTrigger(const ScalingSpec& s, const scale::TargetMetric& m, size_t i) {
  const std::string field = fmt::format("metrics[{}]", i);
  if (m.query.empty()) {
    return InvalidArgument(
        fmt::format("metric '{}' has no PromQL query, so a prometheus trigger cannot read it; "
                    "give it a `query` or render with an external trigger",
                    m.name),
        field + ".query");
  }
  if (m.type == scale::MetricTargetType::kUtilization) {
    return InvalidArgument("KEDA prometheus triggers take Value or AverageValue, not Utilization",
                           field + ".type");
  }
  Value metadata = Value::Of({{"serverAddress", s.prometheus_url},
                              {"query", m.query},
                              {"threshold", fmt::format("{}", m.target)}});
  if (m.activation_threshold != 0) {
    metadata.Set("activationThreshold", fmt::format("{}", m.activation_threshold));
  }
  return Value::Of(
      {{"type", "prometheus"},
       {"name", TriggerName(m, i)},
       {"metricType", m.type == scale::MetricTargetType::kValue ? "Value" : "AverageValue"},
       {"metadata", std::move(metadata)}});
}

Result<Value> Triggers(const ScalingSpec& s) {
  Value triggers = Value::MakeList();
  if (s.kind == TriggerKind::kExternal) {
    if (s.scaler_address.empty()) {
      return InvalidArgument("an external trigger needs gpuscale's scaler address (host:port)",
                             "--scaler-address");
    }
    triggers.Append(Value::Of(
        {{"type", "external"},
         {"metricType", "AverageValue"},
         {"metadata", Value::Of({{"scalerAddress", s.scaler_address}, {"service", s.service}})}}));
    return triggers;
  }
  if (s.target.metrics.empty()) return InvalidArgument("at least one metric is needed", "metrics");
  for (size_t i = 0; i < s.target.metrics.size(); ++i) {
    GS_ASSIGN_OR_RETURN(Value t, PrometheusTrigger(s, s.target.metrics[i], i));
    triggers.Append(std::move(t));
  }
  return triggers;
}

Result<Value> ScaledObject(const ManifestSpec& spec) {
  const WorkloadSpec& w = spec.workload;
  const ScalingSpec& s = spec.scaling;
  const bool external = s.kind == TriggerKind::kExternal;
  const scale::Behavior behavior =
      external ? PassThroughBehavior(s.target.max_replicas) : s.target.behavior;
  GS_ASSIGN_OR_RETURN(Value up, Rules(behavior.scale_up, "behavior.scale_up"));
  GS_ASSIGN_OR_RETURN(Value down, Rules(behavior.scale_down, "behavior.scale_down"));
  GS_ASSIGN_OR_RETURN(int polling, WholeSeconds(s.target.polling_interval_seconds, 1, 86400,
                                                "polling_interval_seconds"));
  // External: gpuscale already applied its own cooldown before deciding 0 replicas.
  GS_ASSIGN_OR_RETURN(int cooldown, WholeSeconds(external ? 0 : s.target.cooldown_period_seconds, 0,
                                                 86400, "cooldown_period_seconds"));
  GS_ASSIGN_OR_RETURN(Value triggers, Triggers(s));
  Value hpa = Value::Of(
      {{"behavior", Value::Of({{"scaleUp", std::move(up)}, {"scaleDown", std::move(down)}})}});
  Value so_spec =
      Value::Of({{"scaleTargetRef",
                  Value::Of({{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", w.name}})},
                 {"pollingInterval", polling},
                 {"cooldownPeriod", cooldown},
                 {"minReplicaCount", s.target.min_replicas},
                 {"maxReplicaCount", s.target.max_replicas}});
  if (!external && s.target.fallback) {
    so_spec.Set("fallback", Value::Of({{"failureThreshold", s.target.fallback->failure_threshold},
                                       {"replicas", s.target.fallback->replicas}}));
  }
  so_spec.Set("advanced", Value::Of({{"horizontalPodAutoscalerConfig", std::move(hpa)}}));
  so_spec.Set("triggers", std::move(triggers));
  return Value::Of({{"apiVersion", "keda.sh/v1alpha1"},
                    {"kind", "ScaledObject"},
                    {"metadata", Metadata(w)},
                    {"spec", std::move(so_spec)}});
}

Status CheckWorkload(const WorkloadSpec& w) {
  GS_RETURN_IF_ERROR(CheckName(w.name, "name"));
  if (!w.namespace_name.empty()) GS_RETURN_IF_ERROR(CheckName(w.namespace_name, "namespace"));
  for (const auto& [port, field] :
       {std::pair{w.container_port, "container_port"}, std::pair{w.service_port, "service_port"}}) {
    if (port < 1 || port > 65535) {
      return InvalidArgument(fmt::format("expected a port in 1..65535, got {}", port), field);
    }
  }
  if (w.gpus_per_replica < 0) return InvalidArgument("must be >= 0", "gpus_per_replica");
  if (w.image.empty()) return InvalidArgument("a container image is required", "image");
  if (w.readiness_path.empty() || w.readiness_path.front() != '/') {
    return InvalidArgument(
        fmt::format("expected a path starting with '/', got '{}'", w.readiness_path),
        "readiness_path");
  }
  return OkStatus();
}

}  // namespace

scale::Behavior PassThroughBehavior(int max_replicas) {
  const int pods = std::max(max_replicas, 1);
  scale::ScalingRules up{
      0,
      scale::SelectPolicy::kMax,
      {{scale::ScalingPolicyType::kPercent, 100, 15}, {scale::ScalingPolicyType::kPods, pods, 15}}};
  scale::ScalingRules down{
      0, scale::SelectPolicy::kMax, {{scale::ScalingPolicyType::kPercent, 100, 15}}};
  return scale::Behavior{up, down};
}

Result<std::vector<Value>> RenderManifests(const ManifestSpec& spec) {
  GS_RETURN_IF_ERROR(CheckWorkload(spec.workload));
  const scale::TargetPolicyConfig& t = spec.scaling.target;
  if (t.min_replicas < 0 || t.max_replicas < std::max(t.min_replicas, 1)) {
    return InvalidArgument(fmt::format("need 0 <= min_replicas <= max_replicas and max >= 1, "
                                       "got {}..{}",
                                       t.min_replicas, t.max_replicas),
                           "max_replicas");
  }
  GS_ASSIGN_OR_RETURN(Value deployment, Deployment(spec.workload));
  GS_ASSIGN_OR_RETURN(Value scaled_object, ScaledObject(spec));
  std::vector<Value> out;
  out.push_back(std::move(deployment));
  out.push_back(ServiceObject(spec.workload));
  out.push_back(std::move(scaled_object));
  return out;
}

}  // namespace gpuscale::k8s
