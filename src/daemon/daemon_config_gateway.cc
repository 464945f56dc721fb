// The daemon config's `gateway:` section, and the check that no model is served twice.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "daemon/daemon_config.h"
#include "daemon/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

using yaml::FieldError;

// A count in [min, max].
Result<int> ReadBoundedInt(const YAML::Node& n, std::string_view key, int fallback, int min,
                           int max) {
  GS_ASSIGN_OR_RETURN(int value, yaml::ReadInt(n, key, "gateway", fallback));
  if (value < min || value > max) {
    return FieldError(Child(n, key), fmt::format("gateway.{}", key),
                      fmt::format("expected an integer in [{}, {}], got {}", min, max, value));
  }
  return value;
}

// `router: {kind, slow_start_seconds, prefix_affinity, affinity_load_factor}`.
Status ParseRouter(const YAML::Node& n, route::PickerSpec& spec) {
  if (!n.IsDefined()) return OkStatus();
  const std::string path = "gateway.router";
  if (!n.IsMap()) return FieldError(n, path, "expected a mapping {kind: least_outstanding, ...}");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, path, {"kind", "slow_start_seconds", "prefix_affinity", "affinity_load_factor"}));
  GS_ASSIGN_OR_RETURN(std::string kind, yaml::ReadString(n, "kind", path, "least_outstanding"));
  if (kind == "least_outstanding") {
    spec.kind = route::PickerKind::kLeastOutstanding;
  } else if (kind == "round_robin") {
    spec.kind = route::PickerKind::kRoundRobin;
  } else {
    return FieldError(Child(n, "kind"), path + ".kind",
                      fmt::format("expected least_outstanding or round_robin, got '{}'", kind));
  }
  GS_ASSIGN_OR_RETURN(Seconds slow_start, ReadDuration(n, "slow_start_seconds", path,
                                                       Seconds{spec.slow_start_seconds}, false));
  spec.slow_start_seconds = slow_start.count();
  GS_ASSIGN_OR_RETURN(spec.prefix_affinity,
                      yaml::ReadBool(n, "prefix_affinity", path, spec.prefix_affinity));
  GS_ASSIGN_OR_RETURN(spec.affinity_load_factor,
                      yaml::ReadDouble(n, "affinity_load_factor", path,
                                       spec.affinity_load_factor));
  if (!(spec.affinity_load_factor > 1 && spec.affinity_load_factor <= 100)) {
    return FieldError(Child(n, "affinity_load_factor"), path + ".affinity_load_factor",
                      fmt::format("expected a factor in (1, 100], got {}",
                                  spec.affinity_load_factor));
  }
  return OkStatus();
}

}  // namespace

Status ParseGateway(const YAML::Node& n, gateway::GatewayConfig& g) {
  if (!n.IsDefined()) return OkStatus();
  if (!n.IsMap()) return FieldError(n, "gateway", "expected a mapping {listen: host:port, ...}");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(n, "gateway",
                                          {"enabled",
                                           "listen",
                                           "token",
                                           "token_file",
                                           "threads",
                                           "max_connections",
                                           "queue_size",
                                           "queue_timeout_seconds",
                                           "header_timeout_seconds",
                                           "idle_timeout_seconds",
                                           "connect_timeout_seconds",
                                           "upstream_timeout_seconds",
                                           "eject_after_failures",
                                           "ejection_seconds",
                                           "max_body_bytes",
                                           "prefix_chars",
                                           "router",
                                           "stream_idle_timeout_seconds",
                                           "health_check_interval_seconds",
                                           "health_check_timeout_seconds",
                                           "health_check_failures",
                                           "health_check_path"}));
  GS_ASSIGN_OR_RETURN(g.enabled, yaml::ReadBool(n, "enabled", "gateway", g.enabled));
  GS_RETURN_IF_ERROR(ReadListen(n, "gateway", g.host, g.port));
  GS_RETURN_IF_ERROR(ReadToken(n, "gateway", g.token));
  GS_ASSIGN_OR_RETURN(g.threads, ReadBoundedInt(n, "threads", g.threads, 1, 64));
  GS_ASSIGN_OR_RETURN(g.max_connections,
                      ReadBoundedInt(n, "max_connections", g.max_connections, 1, 1000000));
  GS_ASSIGN_OR_RETURN(g.queue_size, ReadBoundedInt(n, "queue_size", g.queue_size, 0, 1000000));
  GS_ASSIGN_OR_RETURN(g.eject_after_failures,
                      ReadBoundedInt(n, "eject_after_failures", g.eject_after_failures, 1, 1000));
  GS_ASSIGN_OR_RETURN(g.health_check_failures,
                      ReadBoundedInt(n, "health_check_failures", g.health_check_failures, 1, 100));
  GS_ASSIGN_OR_RETURN(g.health_check_path,
                      yaml::ReadString(n, "health_check_path", "gateway", g.health_check_path));
  if (!g.health_check_path.starts_with('/') ||
      g.health_check_path.find_first_of(" \r\n\t") != std::string::npos) {
    return FieldError(
        Child(n, "health_check_path"), "gateway.health_check_path",
        fmt::format("expected a path such as /health, got '{}'", g.health_check_path));
  }
  GS_ASSIGN_OR_RETURN(g.prefix_chars, ReadBoundedInt(n, "prefix_chars", g.prefix_chars, 1,
                                                     1 << 20));
  GS_ASSIGN_OR_RETURN(int max_body, ReadBoundedInt(n, "max_body_bytes",
                                                   static_cast<int>(g.max_body_bytes), 1024,
                                                   1 << 30));
  g.max_body_bytes = max_body;
  struct DurationKey {
    const char* key;
    Seconds* value;
  };
  for (const DurationKey& d :
       {DurationKey{"queue_timeout_seconds", &g.queue_timeout},
        DurationKey{"header_timeout_seconds", &g.header_timeout},
        DurationKey{"idle_timeout_seconds", &g.idle_timeout},
        DurationKey{"connect_timeout_seconds", &g.connect_timeout},
        DurationKey{"upstream_timeout_seconds", &g.upstream_timeout},
        DurationKey{"ejection_seconds", &g.ejection},
        DurationKey{"health_check_timeout_seconds", &g.health_check_timeout}}) {
    GS_ASSIGN_OR_RETURN(*d.value, ReadDuration(n, d.key, "gateway", *d.value, true));
  }
  // 0 turns them off.
  for (const DurationKey& d :
       {DurationKey{"stream_idle_timeout_seconds", &g.stream_idle_timeout},
        DurationKey{"health_check_interval_seconds", &g.health_check_interval}}) {
    GS_ASSIGN_OR_RETURN(*d.value, ReadDuration(n, d.key, "gateway", *d.value, false));
  }
  return ParseRouter(Child(n, "router"), g.picker);
}

Status CheckModelsUnique(const YAML::Node& services_node,
                         const std::vector<ServiceConfig>& services) {
  std::map<std::string, std::string> owner;
  for (size_t i = 0; i < services.size(); ++i) {
    for (const std::string& model : services[i].ServedModels()) {
      const auto [it, inserted] = owner.emplace(model, services[i].name);
      if (inserted) continue;
      const std::string field = fmt::format("services[{}].models", i);
      return FieldError(Child(services_node[i], "models"), field,
                        fmt::format("model '{}' is already served by service '{}'; the "
                                    "gateway routes each model name to one service",
                                    model, it->second));
    }
  }
  return OkStatus();
}

}  // namespace gpuscale::daemon
