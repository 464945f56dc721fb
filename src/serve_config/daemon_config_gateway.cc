// The daemon config's `gateway:` section, and the check that no model is served twice.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <map>

#include "config/admission_config.h"
#include "config/router_config.h"
#include "serve_config/daemon_config.h"
#include "serve_config/daemon_config_internal.h"
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

// `gateway.prefix_cache` (gateway_config.h: PrefixCacheConfig).
Status ParsePrefixCache(const YAML::Node& n, gateway::PrefixCacheConfig& p) {
  if (!n.IsDefined()) return OkStatus();
  constexpr std::string_view kPath = "gateway.prefix_cache";
  if (!n.IsMap()) return FieldError(n, kPath, "expected a mapping {block_tokens: 16, ...}");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, kPath, {"block_tokens", "capacity_blocks", "ttl_seconds", "kv_events_topic"}));
  struct Bounded {
    const char* key;
    int64_t* value;
    int64_t max;
  };
  int64_t block_tokens = p.block_tokens;
  for (const Bounded& b : {Bounded{"block_tokens", &block_tokens, 1 << 16},
                           Bounded{"capacity_blocks", &p.capacity_blocks, 1 << 30}}) {
    GS_ASSIGN_OR_RETURN(int value, yaml::ReadInt(n, b.key, kPath, static_cast<int>(*b.value)));
    if (value < 1 || value > b.max) {
      return FieldError(Child(n, b.key), yaml::Join(kPath, b.key),
                        fmt::format("expected an integer in [1, {}], got {}", b.max, value));
    }
    *b.value = value;
  }
  p.block_tokens = static_cast<int>(block_tokens);
  GS_ASSIGN_OR_RETURN(p.ttl, ReadDuration(n, "ttl_seconds", std::string(kPath), p.ttl, true));
  GS_ASSIGN_OR_RETURN(p.kv_events_topic,
                      yaml::ReadString(n, "kv_events_topic", kPath, p.kv_events_topic));
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
                                           "health_check_path",
                                           "admission",
                                           "prefix_cache"}));
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
  GS_ASSIGN_OR_RETURN(g.prefix_chars,
                      ReadBoundedInt(n, "prefix_chars", g.prefix_chars, 1, 1 << 20));
  GS_ASSIGN_OR_RETURN(
      int max_body,
      ReadBoundedInt(n, "max_body_bytes", static_cast<int>(g.max_body_bytes), 1024, 1 << 30));
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
  GS_RETURN_IF_ERROR(config::ParseAdmissionConfig(n["admission"], "gateway.admission",
                                                  config::AdmissionDoor::kGateway, g.admission));
  GS_RETURN_IF_ERROR(ParsePrefixCache(n["prefix_cache"], g.prefix_cache));
  GS_ASSIGN_OR_RETURN(g.picker, config::ParseRouterConfig(n["router"], "gateway.router", g.picker));
  return OkStatus();
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
