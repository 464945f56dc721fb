// Field readers shared by daemon_config.cc and daemon_config_service.cc (not part of the
// module's interface). They add range checks to yaml/yaml_util.h's readers with the same
// "field: message (line N)" errors.
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::daemon {

// parent[key], or an undefined node when the key is absent or null (never inserts).
YAML::Node Child(const YAML::Node& parent, std::string_view key);

// An integer >= `min`; `fallback` when absent.
Result<int> ReadIntAtLeast(const YAML::Node& parent, std::string_view key, const std::string& path,
                           int fallback, int min);

// `<key>` in seconds (the key carries the unit, e.g. "startup_timeout_seconds"): > 0 when
// `positive`, else >= 0; `fallback` when absent.
Result<Seconds> ReadDuration(const YAML::Node& parent, std::string_view key,
                             const std::string& path, Seconds fallback, bool positive);

// True when `text` is well-formed UTF-8. YAML is Unicode text: other bytes cannot be written
// back (ServiceConfigToYaml) unchanged, so the parser rejects them.
bool IsValidUtf8(std::string_view text);

}  // namespace gpuscale::daemon

#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// `engine` and, for engine: slurm, the `slurm:` block of the service at `path`
// (daemon_config_slurm.cc). Errors: "services[i].slurm.<field>: message (line N)".
Status ReadEngine(const YAML::Node& n, const std::string& path, ServiceConfig& s);

// `listen: host:port` of `section` ("api", "gateway") into host/port, which hold the
// defaults on entry. "[::1]:8080" for an IPv6 address. Errors name "<section>.listen".
Status ReadListen(const YAML::Node& n, const std::string& section, std::string& host, int& port);
// `token` or `token_file` (first line, trimmed; not both) of `section` into `token`.
Status ReadToken(const YAML::Node& n, const std::string& section, std::string& token);

// The `gateway:` section (daemon_config_gateway.cc); absent = the defaults.
Status ParseGateway(const YAML::Node& n, gateway::GatewayConfig& gateway);
// No model name served by two services (the gateway could not choose). Errors name
// services[i].models.
Status CheckModelsUnique(const YAML::Node& services_node,
                         const std::vector<ServiceConfig>& services);

// Moves an error from validation code that knows only local field names ("command[2]",
// "target.metrics[0].target") under `prefix` ("services[0]", "services[0].policy").
Unexpected<Error> Prefixed(Error error, const std::string& prefix);

// The replica fields of a service, or of one pool of a disaggregated one, at `path`:
// command, env, gpus_per_replica, min_memory_free_mb, min/max_replicas (merged with those of
// `policy`, the policy block to use) and the policy (daemon_config_service.cc). `slo_node`:
// the service's `slo` block, for the errors of a profile measured at another SLO.
Status ReadReplicaFields(const YAML::Node& n, const YAML::Node& policy, const YAML::Node& slo_node,
                         const std::string& path, ServiceConfig& s);
// A pool's fields into a map being emitted (daemon_config_service.cc).
void EmitPoolFields(YAML::Emitter& out, const PoolSpec& pool);
// `disaggregated:` of the service at `path` (daemon_config_disagg.cc), after its shared
// fields, engine and slo were read: DisaggSpec into s.disaggregated, and s's bounds and
// policy family from the pools. Errors name the field and line.
Status ReadDisaggregated(const YAML::Node& n, const std::string& path, ServiceConfig& s);
// Writes the `disaggregated` key and block into a service map being emitted.
void EmitDisaggregated(YAML::Emitter& out, const DisaggSpec& spec);

// `variants:` of the service at `path` (daemon_config_variants.cc), after its engine and
// replica fields were read. Errors name the field and line.
Status ReadVariants(const YAML::Node& n, const std::string& path, ServiceConfig& s);
// Writes the `variants` key and list into a service map being emitted (nothing without).
void EmitVariants(YAML::Emitter& out, const std::vector<VariantConfig>& variants);

// Writes `engine` and `slurm` into a service map being emitted (nothing for engine: local,
// so local services keep their canonical YAML).
void EmitEngine(YAML::Emitter& out, const ServiceConfig& s);

}  // namespace gpuscale::daemon
