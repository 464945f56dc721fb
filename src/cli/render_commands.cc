// `gpuscale render`: Kubernetes manifests (Deployment, Service, KEDA ScaledObject) for a
// Corrino recipe or for one service of a daemon config. Thin: loads the file, calls
// k8s::ManifestFrom* and k8s::RenderManifests, prints YAML documents or a JSON v1 List.
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "k8s/document.h"
#include "k8s/manifest_sources.h"
#include "k8s/manifests.h"
#include "serve_config/daemon_config.h"
#include "yaml/yaml_util.h"

namespace gpuscale::cli {
namespace {

enum class RenderFormat { kYaml, kJson };

struct RenderFlags {
  std::string recipe_path;
  std::string service;
  std::string config_path;
  RenderFormat format = RenderFormat::kYaml;
  std::string trigger;  // "" = the source's default
  int port = 0;         // 0 = the source's
  k8s::RenderOptions options;
};

// "h100_pod_autoscaling.json" -> "h100-pod-autoscaling": the recipe's name when it has no
// deployment_name (Kubernetes names take no '_' or '.').
std::string NameFromPath(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string();
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '_' || c == '.') c = '-';
  }
  return name;
}

Result<k8s::ManifestSpec> LoadSpec(RenderFlags& flags) {
  if (flags.trigger == "external") flags.options.trigger = k8s::TriggerKind::kExternal;
  if (flags.trigger == "prometheus") flags.options.trigger = k8s::TriggerKind::kPrometheus;
  if (flags.port != 0) flags.options.container_port = flags.port;
  if (!flags.recipe_path.empty()) {
    GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(flags.recipe_path));
    return k8s::ManifestFromRecipe(root, NameFromPath(flags.recipe_path), flags.options);
  }
  if (flags.service.empty() || flags.config_path.empty()) {
    return InvalidArgument("give --recipe FILE, or --service NAME with --config FILE",
                           flags.service.empty() ? "--service" : "--config");
  }
  GS_ASSIGN_OR_RETURN(daemon::DaemonConfig config, daemon::LoadDaemonConfig(flags.config_path));
  return k8s::ManifestFromService(config, flags.service, flags.options);
}

void RunRender(RenderFlags& flags, CommandContext& ctx) {
  Result<k8s::ManifestSpec> spec = LoadSpec(flags);
  if (!spec) {
    ctx.Fail(spec.error());
    return;
  }
  Result<std::vector<k8s::Value>> docs = k8s::RenderManifests(*spec);
  if (!docs) {
    ctx.Fail(docs.error());
    return;
  }
  if (flags.format == RenderFormat::kYaml) {
    ctx.out << k8s::ToYamlDocuments(*docs);
    return;
  }
  // kubectl applies a v1 List as its items.
  k8s::Value list = k8s::Value::Of({{"apiVersion", "v1"}, {"kind", "List"}});
  list.Set("items", k8s::Value::List(docs->begin(), docs->end()));
  ctx.out << k8s::ToJson(list);
}

}  // namespace

void AddRenderCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<RenderFlags>();
  CLI::App* cmd = app.add_subcommand(
      "render",
      "Kubernetes manifests (Deployment, Service, KEDA ScaledObject) for a Corrino "
      "recipe or a configured service");
  auto* recipe = cmd->add_option("--recipe", flags->recipe_path, "Corrino recipe JSON file")
                     ->check(CLI::ExistingFile);
  auto* service = cmd->add_option("--service", flags->service, "Service name in --config");
  auto* config = cmd->add_option("--config", flags->config_path, "Daemon config (gpuscale.yaml)")
                     ->check(CLI::ExistingFile);
  recipe->excludes(service)->excludes(config);
  service->needs(config);
  cmd->add_option("-o,--output", flags->format, "Output format: yaml (default) or json")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, RenderFormat>{{"yaml", RenderFormat::kYaml},
                                              {"json", RenderFormat::kJson}},
          CLI::ignore_case));
  cmd->add_option("--trigger", flags->trigger,
                  "KEDA trigger: prometheus (recipe default) or external (service default)")
      ->check(CLI::IsMember({"prometheus", "external"}));
  cmd->add_option("--scaler-address", flags->options.scaler_address,
                  "host:port of gpuscale's KEDA external scaler (external trigger)");
  cmd->add_option("--prometheus-url", flags->options.prometheus_url,
                  "Prometheus server for prometheus triggers (default: the config's, else "
                  "http://prometheus.monitoring.svc:9090)");
  cmd->add_option("--name", flags->options.name,
                  "Object name (default: deployment_name, "
                  "the recipe file's name, or the service)");
  cmd->add_option("--namespace", flags->options.namespace_name, "metadata.namespace");
  cmd->add_option("--image", flags->options.image,
                  "Container image (default: recipe_image_uri, else vllm/vllm-openai:latest)");
  cmd->add_option("--model", flags->options.model,
                  "Model a recipe's vLLM container serves (args --model M --port {port}), for "
                  "a recipe without recipe_container_command_args");
  cmd->add_option("--port", flags->port, "Container port, substituted for {port}")
      ->check(CLI::Range(1, 65535));
  cmd->callback([flags, &ctx] { RunRender(*flags, ctx); });
}

}  // namespace gpuscale::cli
