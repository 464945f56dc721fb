// Where `gpuscale render` gets a ManifestSpec from: one of the Corrino (OCI AI Blueprints)
// autoscaling recipes (parsed by config::ParseCorrinoRecipe into a target policy and node
// plan) or one service of a daemon config (serve_config/daemon_config.h).
//
// Recipe fields used besides the autoscaling blocks (all optional; Corrino's examples leave
// them out): deployment_name, recipe_image_uri, recipe_container_port,
// recipe_container_command_args (args after the image's entrypoint), recipe_replica_count,
// recipe_nvidia_gpu_count, recipe_node_shape. RenderOptions fields that are set win.
//
// Reads nothing but its arguments (the CLI loads the files). Thread-compatible.
#pragma once

#include <optional>
#include <string>

#include "core/result.h"
#include "k8s/manifests.h"
#include "serve_config/daemon_config.h"

namespace YAML {
class Node;
}

namespace gpuscale::k8s {

struct RenderOptions {
  std::string name;                    // "" = recipe's deployment_name, else `fallback_name`
  std::string namespace_name;          // "" = none
  std::string image;                   // "" = recipe_image_uri, else WorkloadSpec's default
  std::optional<int> container_port;   // unset = recipe_container_port, else 8000
  std::optional<TriggerKind> trigger;  // unset: prometheus for recipes, external for services
  std::string scaler_address;          // external trigger: gpuscale's scaler host:port
  std::string prometheus_url;          // "" = ScalingSpec's default (or the daemon config's)
  // The model a recipe's vLLM container serves: args `--model <model> --port {port}`, for a
  // recipe without recipe_container_command_args (which then must not also be given).
  std::string model;
};

// `fallback_name` names the workload when neither options.name nor deployment_name does
// (the CLI passes the recipe file's stem). Errors: ParseCorrinoRecipe's (field + line),
// kInvalidArgument for a bad root field named above, and kInvalidArgument naming
// recipe_container_command_args when the recipe has none and options.model is empty (the
// container would start vLLM without a model) or has some and options.model is set too.
Result<ManifestSpec> ManifestFromRecipe(const YAML::Node& root, const std::string& fallback_name,
                                        const RenderOptions& options);

// Errors: kNotFound naming the services present when `service` is not in `config`;
// kInvalidArgument when a prometheus trigger is asked for a service whose policy is not
// `target`, or the policy fails to parse.
Result<ManifestSpec> ManifestFromService(const daemon::DaemonConfig& config,
                                         const std::string& service, const RenderOptions& options);

}  // namespace gpuscale::k8s
