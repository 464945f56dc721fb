#include "k8s/manifest_sources.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "config/policy_config.h"
#include "serve_config/spec_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::k8s {
namespace {

Result<std::vector<std::string>> ReadStringList(const YAML::Node& root, const std::string& key) {
  const YAML::Node node = root[key];
  std::vector<std::string> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  if (!node.IsSequence()) return yaml::FieldError(node, key, "expected a list of strings");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) {
      return yaml::FieldError(node[i], yaml::Index(key, i), "expected a string");
    }
    out.push_back(node[i].Scalar());
  }
  return out;
}

// Root-level recipe fields (see the header), with options overriding.
Result<WorkloadSpec> RecipeWorkload(const YAML::Node& root, const std::string& fallback_name,
                                    const RenderOptions& options, int min_replicas) {
  WorkloadSpec w;
  GS_ASSIGN_OR_RETURN(w.name, yaml::ReadString(root, "deployment_name", "", fallback_name));
  if (!options.name.empty()) w.name = options.name;
  w.namespace_name = options.namespace_name;
  GS_ASSIGN_OR_RETURN(w.image, yaml::ReadString(root, "recipe_image_uri", "", w.image));
  if (!options.image.empty()) w.image = options.image;
  GS_ASSIGN_OR_RETURN(w.container_port,
                      yaml::ReadInt(root, "recipe_container_port", "", w.container_port));
  if (options.container_port) w.container_port = *options.container_port;
  GS_ASSIGN_OR_RETURN(w.argv, ReadStringList(root, "recipe_container_command_args"));
  // vLLM's OpenAI server image takes its flags as args: the model, and the port that the
  // probes and the Service use.
  if (!w.argv.empty() && !options.model.empty()) {
    return InvalidArgument(
        "the recipe's recipe_container_command_args already say what to serve; drop --model "
        "or the args (put --model <name> among them)",
        "recipe_container_command_args");
  }
  if (w.argv.empty()) {
    if (options.model.empty()) {
      return InvalidArgument(
          "the recipe has no recipe_container_command_args, so its vLLM container would start "
          "without a model: pass --model <name> (rendered as args --model <name> --port "
          "{port}), or add the args to the recipe, e.g. [\"--model\", "
          "\"Qwen/Qwen2.5-7B-Instruct\", \"--port\", \"{port}\"]",
          "recipe_container_command_args");
    }
    w.argv = {"--model", options.model, "--port", "{port}"};
  }
  w.command_is_program = false;
  GS_ASSIGN_OR_RETURN(w.gpus_per_replica, yaml::ReadInt(root, "recipe_nvidia_gpu_count", "", 1));
  GS_ASSIGN_OR_RETURN(w.initial_replicas,
                      yaml::ReadInt(root, "recipe_replica_count", "", std::max(min_replicas, 1)));
  GS_ASSIGN_OR_RETURN(w.node_shape, yaml::ReadString(root, "recipe_node_shape", "", ""));
  return w;
}

Result<const scale::TargetPolicy*> AsTarget(const scale::Policy& policy, const std::string& name) {
  const auto* target = dynamic_cast<const scale::TargetPolicy*>(&policy);
  if (target == nullptr) {
    return InvalidArgument(
        fmt::format("service '{}' uses the '{}' policy family; a prometheus trigger can only "
                    "express the `target` family: use --trigger external",
                    name, policy.Family()),
        "--trigger");
  }
  return target;
}

// The Deployment side of a daemon service (see WorkloadSpec for the mapping).
WorkloadSpec ServiceWorkload(const daemon::ServiceConfig& service, const RenderOptions& options) {
  WorkloadSpec w;
  w.name = options.name.empty() ? service.name : options.name;
  w.namespace_name = options.namespace_name;
  if (!options.image.empty()) w.image = options.image;
  if (options.container_port) w.container_port = *options.container_port;
  w.argv = service.command;
  w.command_is_program = true;
  w.env = service.env;
  w.gpus_per_replica = service.gpus_per_replica;
  w.readiness_path = service.readiness_path;
  w.startup_timeout = service.startup_timeout;
  w.drain_timeout = service.drain_timeout;
  w.initial_replicas = std::max(service.min_replicas, 1);
  return w;
}

}  // namespace

Result<ManifestSpec> ManifestFromRecipe(const YAML::Node& root, const std::string& fallback_name,
                                        const RenderOptions& options) {
  GS_ASSIGN_OR_RETURN(config::PolicySpec policy, config::ParseCorrinoRecipe(root));
  GS_ASSIGN_OR_RETURN(const scale::TargetPolicy* target, AsTarget(*policy.policy, fallback_name));
  ManifestSpec spec;
  spec.scaling.target = target->config();
  GS_ASSIGN_OR_RETURN(spec.workload, RecipeWorkload(root, fallback_name, options,
                                                    spec.scaling.target.min_replicas));
  spec.scaling.kind = options.trigger.value_or(TriggerKind::kPrometheus);
  if (!options.prometheus_url.empty()) spec.scaling.prometheus_url = options.prometheus_url;
  spec.scaling.scaler_address = options.scaler_address;
  spec.scaling.service = spec.workload.name;
  return spec;
}

Result<ManifestSpec> ManifestFromService(const daemon::DaemonConfig& config,
                                         const std::string& service, const RenderOptions& options) {
  const daemon::ServiceConfig* found = nullptr;
  std::string names;
  for (const daemon::ServiceConfig& s : config.services) {
    if (s.name == service) found = &s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  if (found == nullptr) {
    return NotFound(fmt::format("no service '{}' in the config (services: {})", service,
                                names.empty() ? "none" : names),
                    "--service");
  }
  ManifestSpec spec;
  spec.workload = ServiceWorkload(*found, options);
  ScalingSpec& s = spec.scaling;
  s.kind = options.trigger.value_or(TriggerKind::kExternal);
  s.scaler_address = options.scaler_address;
  s.service = found->name;
  if (!config.prometheus.url.empty()) s.prometheus_url = config.prometheus.url;
  if (!options.prometheus_url.empty()) s.prometheus_url = options.prometheus_url;
  if (s.kind == TriggerKind::kPrometheus) {
    GS_ASSIGN_OR_RETURN(auto policy, daemon::SpecPolicy(*found));
    GS_ASSIGN_OR_RETURN(const scale::TargetPolicy* target, AsTarget(*policy, found->name));
    s.target = target->config();
  }
  s.target.min_replicas = found->min_replicas;
  s.target.max_replicas = found->max_replicas;
  if (s.kind == TriggerKind::kExternal) {
    s.target.polling_interval_seconds = std::max(1.0, std::round(config.loop_interval.count()));
  }
  return spec;
}

}  // namespace gpuscale::k8s
