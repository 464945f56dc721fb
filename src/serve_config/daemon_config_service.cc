// One service of the daemon config (a `services[i]` entry or a POST /v1/services body):
// field readers, the policy envelope merge, and the canonical YAML the store keeps.
// daemon_config.h documents the schema.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string_view>

#include "config/policy_config.h"
#include "config/policy_profile.h"
#include "orch/argv_template.h"
#include "serve_config/daemon_config.h"
#include "serve_config/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

using yaml::FieldError;
using yaml::Join;

bool ValidServiceName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || c != '-')) return false;
  }
  return true;
}

bool ValidEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

Result<std::vector<std::string>> ReadCommand(const YAML::Node& n, const std::string& path) {
  const std::string field = Join(path, "command");
  const YAML::Node node = Child(n, "command");
  if (!node.IsDefined()) {
    return FieldError(n, field,
                      "required field is missing: the replica's argv, program first, e.g. "
                      "[vllm, serve, MODEL, --port, \"{port}\"]");
  }
  if (!node.IsSequence()) {
    return FieldError(node, field,
                      "expected a list of arguments (no shell string), e.g. [vllm, serve, "
                      "MODEL, --port, \"{port}\"]");
  }
  std::vector<std::string> command;
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar() || !IsValidUtf8(node[i].Scalar())) {
      return FieldError(node[i], yaml::Index(field, i), "expected a (UTF-8) string");
    }
    command.push_back(node[i].Scalar());
  }
  if (auto valid = orch::ValidateArgvTemplate(command); !valid) {
    Error error = valid.error();
    const int line = yaml::LineOf(node);
    if (line > 0) error.message += fmt::format(" (line {})", line);
    return Prefixed(std::move(error), path);
  }
  return command;
}

Result<std::vector<std::pair<std::string, std::string>>> ReadEnv(const YAML::Node& n,
                                                                 const std::string& path) {
  const std::string field = Join(path, "env");
  const YAML::Node node = Child(n, "env");
  std::vector<std::pair<std::string, std::string>> env;
  if (!node.IsDefined()) return env;
  if (!node.IsMap()) return FieldError(node, field, "expected a mapping NAME: value");
  for (const auto& entry : node) {
    const std::string name = entry.first.Scalar();
    const std::string name_field = Join(field, name);
    if (!ValidEnvName(name)) {
      return FieldError(entry.first, name_field,
                        "expected an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    if (entry.second.IsNull()) {
      env.emplace_back(name, "");
    } else if (entry.second.IsScalar() && IsValidUtf8(entry.second.Scalar())) {
      env.emplace_back(name, entry.second.Scalar());
    } else {
      return FieldError(entry.second, name_field, "expected a (UTF-8) string value");
    }
  }
  return env;
}

// `models: [name, ...]`: non-empty strings without spaces, each once.
Result<std::vector<std::string>> ReadModels(const YAML::Node& n, const std::string& path) {
  const std::string field = Join(path, "models");
  const YAML::Node node = Child(n, "models");
  std::vector<std::string> models;
  if (!node.IsDefined() || node.IsNull()) return models;
  if (!node.IsSequence() || node.size() == 0) {
    return FieldError(node, field,
                      "expected a non-empty list of the model names clients send, e.g. "
                      "[meta-llama/Llama-3.1-8B-Instruct, llama-8b]");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const bool text = node[i].IsScalar() && !node[i].Scalar().empty() &&
                      node[i].Scalar().size() <= 256 && IsValidUtf8(node[i].Scalar()) &&
                      node[i].Scalar().find_first_of(" \t\r\n") == std::string::npos;
    if (!text) {
      return FieldError(node[i], yaml::Index(field, i),
                        "expected a model name: 1-256 characters, no whitespace");
    }
    if (std::find(models.begin(), models.end(), node[i].Scalar()) != models.end()) {
      return FieldError(node[i], yaml::Index(field, i),
                        fmt::format("'{}' is listed twice", node[i].Scalar()));
    }
    models.push_back(node[i].Scalar());
  }
  return models;
}

Result<std::string> ReadUrlPath(const YAML::Node& n, std::string_view key, const std::string& path,
                                const std::string& fallback) {
  GS_ASSIGN_OR_RETURN(std::string value, yaml::ReadString(n, key, path, fallback));
  if (value.empty() || value[0] != '/' || !IsValidUtf8(value)) {
    return FieldError(Child(n, key), Join(path, key),
                      fmt::format("expected an HTTP path starting with '/', got '{}'", value));
  }
  return value;
}

Status ReadScalars(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  GS_ASSIGN_OR_RETURN(s.name, yaml::ReadString(n, "name", path));
  if (!ValidServiceName(s.name)) {
    return FieldError(Child(n, "name"), Join(path, "name"),
                      fmt::format("expected 1-63 characters [a-z0-9-], starting with a letter "
                                  "or digit, got '{}'",
                                  s.name));
  }
  GS_ASSIGN_OR_RETURN(s.models, ReadModels(n, path));
  // "" (written out) = no HTTP check: ready as soon as the process / job runs, for servers
  // without a health endpoint; both orchestrators support it.
  const YAML::Node readiness = Child(n, "readiness_path");
  if (readiness.IsScalar() && readiness.Scalar().empty()) {
    s.readiness_path.clear();
  } else {
    GS_ASSIGN_OR_RETURN(s.readiness_path, ReadUrlPath(n, "readiness_path", path, "/health"));
  }
  GS_ASSIGN_OR_RETURN(s.metrics_path, ReadUrlPath(n, "metrics_path", path, "/metrics"));
  GS_ASSIGN_OR_RETURN(s.startup_timeout,
                      ReadDuration(n, "startup_timeout_seconds", path, Seconds{900}, true));
  GS_ASSIGN_OR_RETURN(s.drain_timeout,
                      ReadDuration(n, "drain_timeout_seconds", path, Seconds{300}, false));
  return OkStatus();
}

constexpr std::pair<std::string_view, SloSource> kSloSources[] = {
    {"auto", SloSource::kAuto},
    {"gateway", SloSource::kGateway},
    {"replicas", SloSource::kReplicas},
};

std::string_view SloSourceName(SloSource source) {
  for (const auto& [name, value] : kSloSources) {
    if (value == source) return name;
  }
  return "auto";
}

// `slo: {ttft_seconds, tpot_seconds, source}`: absent keys keep the defaults. Each duration
// in (0, 3600]: an hour is far past vLLM's largest finite latency bucket, so no longer a
// latency target. source: where the violation ratios come from (slo_thresholds.h).
Status ReadSlo(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  const YAML::Node node = Child(n, "slo");
  if (!node.IsDefined()) return OkStatus();
  const std::string slo_path = Join(path, "slo");
  if (!node.IsMap()) {
    return FieldError(node, slo_path, "expected a mapping {ttft_seconds: 1, tpot_seconds: 0.05}");
  }
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(node, slo_path, {"ttft_seconds", "tpot_seconds", "source"}));
  GS_ASSIGN_OR_RETURN(const std::string source, yaml::ReadString(node, "source", slo_path, "auto"));
  bool known = false;
  for (const auto& [name, value] : kSloSources) {
    if (name == source) s.slo.source = value, known = true;
  }
  if (!known) {
    return FieldError(Child(node, "source"), Join(slo_path, "source"),
                      fmt::format("expected auto, gateway or replicas, got '{}'", source));
  }
  for (std::string_view key : {"ttft_seconds", "tpot_seconds"}) {
    double& target = key == "ttft_seconds" ? s.slo.ttft_seconds : s.slo.tpot_seconds;
    GS_ASSIGN_OR_RETURN(target, yaml::ReadDouble(node, key, slo_path, target));
    if (!(target > 0 && target <= 3600)) {
      return FieldError(Child(node, key), Join(slo_path, key),
                        fmt::format("expected seconds in (0, 3600], got {}", target));
    }
  }
  return OkStatus();
}

// The service's replica bounds. A bound set only in the policy block is adopted (a policy
// file pasted in as it is keeps working); one set in both places must agree.
Status ReadReplicaBounds(const YAML::Node& n, const YAML::Node& policy, const std::string& path,
                         ServiceConfig& s) {
  const std::string policy_path = Join(path, "policy");
  for (std::string_view key : {"min_replicas", "max_replicas"}) {
    int& bound = key == "min_replicas" ? s.min_replicas : s.max_replicas;
    const bool in_service = Child(n, key).IsDefined();
    if (in_service) {
      GS_ASSIGN_OR_RETURN(bound, yaml::ReadInt(n, key, path));
    }
    if (!policy.IsMap() || !Child(policy, key).IsDefined()) continue;
    GS_ASSIGN_OR_RETURN(int in_policy, yaml::ReadInt(policy, key, policy_path));
    if (in_service && in_policy != bound) {
      return FieldError(Child(policy, key), Join(policy_path, key),
                        fmt::format("is {} but the service's {} is {}; set it in one place "
                                    "(the service's value applies to the policy)",
                                    in_policy, Join(path, key), bound));
    }
    bound = in_policy;
  }
  if (s.min_replicas < 0) {
    return FieldError(Child(n, "min_replicas"), Join(path, "min_replicas"),
                      fmt::format("must be >= 0, got {}", s.min_replicas));
  }
  if (s.max_replicas < 1 || s.max_replicas < s.min_replicas) {
    return FieldError(Child(n, "max_replicas"), Join(path, "max_replicas"),
                      fmt::format("must be >= 1 and >= min_replicas ({}), got {}", s.min_replicas,
                                  s.max_replicas));
  }
  if (s.max_replicas > kMaxReplicasPerService) {
    return FieldError(Child(n, "max_replicas"), Join(path, "max_replicas"),
                      fmt::format("must be <= {}, got {}", kMaxReplicasPerService, s.max_replicas));
  }
  return OkStatus();
}

// The policy envelope with the service's bounds: family, min_replicas, max_replicas, then
// the block's other keys. Value nodes are shared with `policy` (not copied) so that
// ParsePolicy's errors keep the file's line numbers.
YAML::Node MergedPolicy(const YAML::Node& policy, const ServiceConfig& s) {
  YAML::Node merged(YAML::NodeType::Map);
  for (const auto& entry : policy) {
    if (entry.first.Scalar() == "family") merged.force_insert(entry.first, entry.second);
  }
  merged.force_insert("min_replicas", s.min_replicas);
  merged.force_insert("max_replicas", s.max_replicas);
  for (const auto& entry : policy) {
    const std::string& key = entry.first.Scalar();
    if (key == "family" || key == "min_replicas" || key == "max_replicas") continue;
    merged.force_insert(entry.first, entry.second);
  }
  return merged;
}

Status ReadPolicy(const YAML::Node& policy, const YAML::Node& slo_node, const std::string& path,
                  ServiceConfig& s) {
  const std::string policy_path = Join(path, "policy");
  if (!policy.IsDefined()) {
    s.policy_yaml.clear();
    s.policy_family = "rules";  // rules live in the store (/v1/services/{name}/rules)
    return OkStatus();
  }
  if (!policy.IsMap()) {
    return FieldError(policy, policy_path,
                      "expected a mapping {family: ..., <family>: {...}} (docs/policies.md)");
  }
  const YAML::Node merged = MergedPolicy(policy, s);
  if (auto parsed = config::ParsePolicy(merged); !parsed) {
    return Prefixed(parsed.error(), policy_path);
  }
  // A capacity profile holds at the SLO it was measured at: the service's (read before).
  GS_RETURN_IF_ERROR(config::CheckProfileSlo(merged, policy_path, s.slo.ttft_seconds,
                                             s.slo.tpot_seconds, std::nullopt, slo_node,
                                             Join(path, "slo")));
  s.policy_family = merged["family"].Scalar();
  YAML::Emitter out;
  out << merged;
  s.policy_yaml = out.c_str();
  return OkStatus();
}

void EmitEnv(YAML::Emitter& out, const std::vector<std::pair<std::string, std::string>>& env) {
  out << YAML::Key << "env" << YAML::Value;
  if (env.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [name, value] : env) {
    out << YAML::Key << name << YAML::Value << YAML::DoubleQuoted << value;
  }
  out << YAML::EndMap;
}

void EmitCommand(YAML::Emitter& out, const std::vector<std::string>& command) {
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& arg : command) out << YAML::DoubleQuoted << arg;
  out << YAML::EndSeq;
}

void EmitPolicy(YAML::Emitter& out, const std::string& policy_yaml) {
  try {
    out << YAML::Key << "policy" << YAML::Value << YAML::Load(policy_yaml);
  } catch (const YAML::Exception&) {
    // policy_yaml comes from ReadPolicy's emitter; unparsable means a hand-built config.
    out << YAML::Null;
  }
}

}  // namespace

Unexpected<Error> Prefixed(Error error, const std::string& prefix) {
  if (error.field.empty() || error.field == "<root>") {
    error.field = prefix.empty() ? error.field : prefix;
  } else {
    error.field = Join(prefix, error.field);
  }
  return Unexpected<Error>(std::move(error));
}

Status ReadReplicaFields(const YAML::Node& n, const YAML::Node& policy, const YAML::Node& slo_node,
                         const std::string& path, ServiceConfig& s) {
  GS_ASSIGN_OR_RETURN(s.command, ReadCommand(n, path));
  GS_ASSIGN_OR_RETURN(s.env, ReadEnv(n, path));
  GS_ASSIGN_OR_RETURN(s.gpus_per_replica, ReadIntAtLeast(n, "gpus_per_replica", path, 1, 0));
  GS_ASSIGN_OR_RETURN(s.min_memory_free_mb, ReadIntAtLeast(n, "min_memory_free_mb", path, 0, 0));
  GS_RETURN_IF_ERROR(ReadReplicaBounds(n, policy, path, s));
  return ReadPolicy(policy, slo_node, path, s);
}

void EmitPoolFields(YAML::Emitter& out, const PoolSpec& pool) {
  EmitCommand(out, pool.command);
  EmitEnv(out, pool.env);
  out << YAML::Key << "gpus_per_replica" << YAML::Value << pool.gpus_per_replica;
  out << YAML::Key << "min_memory_free_mb" << YAML::Value << pool.min_memory_free_mb;
  out << YAML::Key << "min_replicas" << YAML::Value << pool.min_replicas;
  out << YAML::Key << "max_replicas" << YAML::Value << pool.max_replicas;
  if (!pool.policy_yaml.empty()) EmitPolicy(out, pool.policy_yaml);
}

// `gpu_type: A100-80GB`: the type key (gpu/gpu_type.h) every replica's GPUs must have.
// Read last: it is checked against the engine and the replica fields.
Status ReadGpuType(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  const YAML::Node node = Child(n, "gpu_type");
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  const std::string field = Join(path, "gpu_type");
  GS_ASSIGN_OR_RETURN(s.gpu_type, yaml::ReadString(n, "gpu_type", path));
  if (s.gpu_type.empty() || s.gpu_type.find_first_of(" \t") != std::string::npos) {
    return FieldError(node, field,
                      fmt::format("expected a GPU type key such as H100-80GB (`gpuscale gpus` "
                                  "shows each GPU's type), got '{}'",
                                  s.gpu_type));
  }
  if (s.engine != "local" || s.disaggregated) {
    return FieldError(node, field,
                      "places the replicas of a local, non-disaggregated service only (a Slurm "
                      "service names its GPU type in slurm.gres_type)");
  }
  if (s.gpus_per_replica == 0) {
    return FieldError(node, field, "a service with gpus_per_replica: 0 holds no GPU");
  }
  return OkStatus();
}

Result<ServiceConfig> ParseServiceConfig(const YAML::Node& node, const std::string& path) {
  try {
    if (!node.IsMap()) {
      return FieldError(node, path.empty() ? "<root>" : path,
                        "expected a mapping with name, command, ... (see examples/gpuscale.yaml)");
    }
    GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(node, path,
                                            {"name",
                                             "engine",
                                             "slurm",
                                             "fleet",
                                             "command",
                                             "env",
                                             "models",
                                             "gpus_per_replica",
                                             "min_memory_free_mb",
                                             "readiness_path",
                                             "metrics_path",
                                             "startup_timeout_seconds",
                                             "drain_timeout_seconds",
                                             "min_replicas",
                                             "max_replicas",
                                             "slo",
                                             "policy",
                                             "disaggregated",
                                             "gpu_type",
                                             "variants"}));
    ServiceConfig s;
    GS_RETURN_IF_ERROR(ReadScalars(node, path, s));
    GS_RETURN_IF_ERROR(ReadSlo(node, path, s));
    if (Child(node, "disaggregated").IsDefined()) {
      GS_RETURN_IF_ERROR(ReadEngine(node, path, s));
      GS_RETURN_IF_ERROR(ReadDisaggregated(node, path, s));
      GS_RETURN_IF_ERROR(ReadGpuType(node, path, s));
      GS_RETURN_IF_ERROR(ReadVariants(node, path, s));
      return s;
    }
    GS_RETURN_IF_ERROR(ReadReplicaFields(node, Child(node, "policy"), Child(node, "slo"), path, s));
    // After the replica fields: an engine checks them (fleet replicas hold no GPUs).
    GS_RETURN_IF_ERROR(ReadEngine(node, path, s));
    GS_RETURN_IF_ERROR(ReadGpuType(node, path, s));
    GS_RETURN_IF_ERROR(ReadVariants(node, path, s));
    return s;
  } catch (const YAML::Exception& e) {
    // A malformed tree (e.g. a mapping used as a key) makes yaml-cpp throw on conversion.
    return InvalidArgument(fmt::format("unexpected YAML structure: {}", e.msg),
                           path.empty() ? "<root>" : path);
  }
}

Result<ServiceConfig> ParseServiceConfigText(const std::string& text, const std::string& source) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
  return ParseServiceConfig(root, "");
}

std::string ServiceConfigToYaml(const ServiceConfig& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << s.name;
  EmitEngine(out, s);
  // A disaggregated service's replica fields are its pools' (EmitDisaggregated).
  if (!s.disaggregated) {
    EmitCommand(out, s.command);
    EmitEnv(out, s.env);
  }
  // Written only when set, so that specs stored before `models` existed read back equal.
  if (!s.models.empty()) {
    out << YAML::Key << "models" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& model : s.models) out << YAML::DoubleQuoted << model;
    out << YAML::EndSeq;
  }
  // With variants, each variant's (the service's is the first's).
  if (!s.disaggregated && s.variants.empty()) {
    out << YAML::Key << "gpus_per_replica" << YAML::Value << s.gpus_per_replica;
  }
  if (!s.disaggregated) {
    out << YAML::Key << "min_memory_free_mb" << YAML::Value << s.min_memory_free_mb;
  }
  // Written only when set, so that specs stored before gpu_type existed read back equal.
  if (!s.gpu_type.empty()) out << YAML::Key << "gpu_type" << YAML::Value << s.gpu_type;
  EmitVariants(out, s.variants);
  out << YAML::Key << "readiness_path" << YAML::Value << s.readiness_path;
  out << YAML::Key << "metrics_path" << YAML::Value << s.metrics_path;
  out << YAML::Key << "startup_timeout_seconds" << YAML::Value
      << fmt::format("{}", s.startup_timeout.count());
  out << YAML::Key << "drain_timeout_seconds" << YAML::Value
      << fmt::format("{}", s.drain_timeout.count());
  if (!s.disaggregated) {
    out << YAML::Key << "min_replicas" << YAML::Value << s.min_replicas;
    out << YAML::Key << "max_replicas" << YAML::Value << s.max_replicas;
  }
  out << YAML::Key << "slo" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "ttft_seconds" << YAML::Value << fmt::format("{}", s.slo.ttft_seconds);
  out << YAML::Key << "tpot_seconds" << YAML::Value << fmt::format("{}", s.slo.tpot_seconds);
  if (s.slo.source != SloSource::kAuto) {
    out << YAML::Key << "source" << YAML::Value << std::string(SloSourceName(s.slo.source));
  }
  out << YAML::EndMap;
  if (s.disaggregated) {
    EmitDisaggregated(out, *s.disaggregated);
  } else if (!s.policy_yaml.empty()) {
    EmitPolicy(out, s.policy_yaml);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gpuscale::daemon
