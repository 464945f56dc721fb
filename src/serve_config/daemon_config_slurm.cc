// A service's `engine` and `slurm:` block (daemon_config.h: SlurmServiceConfig).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>

#include "serve_config/daemon_config.h"
#include "serve_config/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

// The `slurm:` block's plain string keys: one table for reading and writing the block.
constexpr std::pair<const char*, std::string SlurmServiceConfig::*> kSlurmStrings[] = {
    {"url", &SlurmServiceConfig::url},
    {"user", &SlurmServiceConfig::user},
    {"token", &SlurmServiceConfig::token},
    {"token_file", &SlurmServiceConfig::token_file},
    {"slurm_conf", &SlurmServiceConfig::slurm_conf},
    {"bin_dir", &SlurmServiceConfig::bin_dir},
    {"partition", &SlurmServiceConfig::partition},
    {"gres_type", &SlurmServiceConfig::gres_type},
    {"account", &SlurmServiceConfig::account}};

using yaml::FieldError;
using yaml::Join;

Result<std::vector<std::string>> ReadStringList(const YAML::Node& n, std::string_view key,
                                                const std::string& path) {
  std::vector<std::string> out;
  const YAML::Node node = Child(n, key);
  if (!node.IsDefined()) return out;
  const std::string field = Join(path, key);
  if (!node.IsSequence()) return FieldError(node, field, "expected a list of strings");
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar() || !IsValidUtf8(node[i].Scalar())) {
      return FieldError(node[i], yaml::Index(field, i), "expected a (UTF-8) string");
    }
    out.push_back(node[i].Scalar());
  }
  return out;
}

Status ReadPortRange(const YAML::Node& n, const std::string& path, SlurmServiceConfig& c) {
  const YAML::Node node = Child(n, "port_range");
  if (!node.IsDefined()) return OkStatus();
  const std::string field = Join(path, "port_range");
  int bounds[2] = {0, 0};
  bool ok = node.IsSequence() && node.size() == 2;
  for (size_t i = 0; ok && i < 2; ++i) {
    ok = node[i].IsScalar() && YAML::convert<int>::decode(node[i], bounds[i]);
  }
  if (!ok || bounds[0] < 1 || bounds[1] > 65535 || bounds[1] < bounds[0]) {
    return FieldError(node, field,
                      "expected [start, end] with 1 <= start <= end <= 65535, e.g. "
                      "[20000, 20999] (ports are unique per service; give services sharing "
                      "nodes disjoint ranges)");
  }
  c.port_range_start = bounds[0];
  c.port_range_end = bounds[1];
  return OkStatus();
}

// What only one transport understands must not be set for the other.
Status CheckTransportFields(const YAML::Node& n, const std::string& path,
                            const SlurmServiceConfig& c) {
  if (Child(n, "socket").IsDefined()) {
    return FieldError(Child(n, "socket"), Join(path, "socket"),
                      "slurmrestd over a unix socket is not supported (the HTTP client, "
                      "cpp-httplib 0.11, has no unix-socket support); use `transport: rest` "
                      "with `url` and a JWT token, or `transport: cli`");
  }
  if (c.transport == "rest") {
    if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0) {
      return FieldError(Child(n, "url"), Join(path, "url"),
                        "transport rest needs slurmrestd's url, e.g. http://slurmrestd:6820");
    }
    if (!c.extra_sbatch_args.empty()) {
      return FieldError(Child(n, "extra_sbatch_args"), Join(path, "extra_sbatch_args"),
                        "only the cli transport passes sbatch arguments; slurmrestd takes none");
    }
    if (!c.token.empty() && !c.token_file.empty()) {
      return FieldError(Child(n, "token"), Join(path, "token"),
                        "set token or token_file, not both");
    }
    return OkStatus();
  }
  for (const char* key : {"url", "user", "token", "token_file"}) {
    if (Child(n, key).IsDefined()) {
      return FieldError(Child(n, key), Join(path, key),
                        "only used by `transport: rest` (slurmrestd); the cli transport runs "
                        "sbatch/squeue/sinfo/scancel as the daemon's user");
    }
  }
  return OkStatus();
}

Result<SlurmServiceConfig> ReadSlurm(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) return FieldError(n, path, "expected a mapping {transport: cli|rest, ...}");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, path,
      {"transport", "url", "socket", "user", "token", "token_file", "slurm_conf", "bin_dir",
       "partition", "gres_type", "account", "time_limit_minutes", "extra_sbatch_args", "port_range",
       "timeout_seconds"}));
  SlurmServiceConfig c;
  GS_ASSIGN_OR_RETURN(c.transport, yaml::ReadString(n, "transport", path, "cli"));
  if (c.transport != "cli" && c.transport != "rest") {
    return FieldError(Child(n, "transport"), Join(path, "transport"),
                      fmt::format("expected cli or rest, got '{}'", c.transport));
  }
  for (const auto& [key, member] : kSlurmStrings) {
    GS_ASSIGN_OR_RETURN(c.*member, yaml::ReadString(n, key, path, ""));
  }
  GS_ASSIGN_OR_RETURN(c.time_limit_minutes, ReadIntAtLeast(n, "time_limit_minutes", path, 0, 0));
  GS_ASSIGN_OR_RETURN(c.extra_sbatch_args, ReadStringList(n, "extra_sbatch_args", path));
  GS_RETURN_IF_ERROR(ReadPortRange(n, path, c));
  GS_ASSIGN_OR_RETURN(c.timeout, ReadDuration(n, "timeout_seconds", path, Seconds{15}, true));
  GS_RETURN_IF_ERROR(CheckTransportFields(n, path, c));
  return c;
}

}  // namespace

namespace {

// engine: fleet -- `fleet: {url: http://host:port}`; replicas hold no GPUs.
Status ReadFleet(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  const YAML::Node fleet = Child(n, "fleet");
  if (!fleet.IsDefined() || !fleet.IsMap()) {
    return FieldError(fleet.IsDefined() ? fleet : n, Join(path, "fleet"),
                      "engine fleet needs `fleet: {url: http://host:port}` (the control API "
                      "of a `gpuscale fleet`)");
  }
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(fleet, Join(path, "fleet"), {"url"}));
  GS_ASSIGN_OR_RETURN(s.fleet_url, yaml::ReadString(fleet, "url", Join(path, "fleet"), ""));
  if (!s.fleet_url.starts_with("http://")) {
    return FieldError(Child(fleet, "url"), Join(path, "fleet.url"),
                      fmt::format("expected http://host:port, got '{}'", s.fleet_url));
  }
  if (s.gpus_per_replica != 0) {
    return FieldError(Child(n, "gpus_per_replica"), Join(path, "gpus_per_replica"),
                      "fleet replicas are emulated and hold no GPUs: set gpus_per_replica: 0");
  }
  return OkStatus();
}

}  // namespace

Status ReadEngine(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  GS_ASSIGN_OR_RETURN(s.engine, yaml::ReadString(n, "engine", path, "local"));
  const YAML::Node slurm = Child(n, "slurm");
  if (s.engine != "fleet" && Child(n, "fleet").IsDefined()) {
    return FieldError(
        Child(n, "fleet"), Join(path, "fleet"),
        fmt::format("a fleet block needs `engine: fleet` (the engine is {})", s.engine));
  }
  if (s.engine == "fleet") {
    if (slurm.IsDefined()) {
      return FieldError(slurm, Join(path, "slurm"),
                        "a slurm block needs `engine: slurm` (the engine is fleet)");
    }
    return ReadFleet(n, path, s);
  }
  if (s.engine == "local") {
    if (slurm.IsDefined()) {
      return FieldError(slurm, Join(path, "slurm"),
                        "a slurm block needs `engine: slurm` (the engine is local)");
    }
    return OkStatus();
  }
  if (s.engine != "slurm") {
    return FieldError(Child(n, "engine"), Join(path, "engine"),
                      fmt::format("expected local, slurm or fleet, got '{}'", s.engine));
  }
  if (!slurm.IsDefined()) {
    s.slurm = SlurmServiceConfig{};  // cli transport, cluster defaults
    return OkStatus();
  }
  GS_ASSIGN_OR_RETURN(s.slurm, ReadSlurm(slurm, Join(path, "slurm")));
  return OkStatus();
}

void EmitEngine(YAML::Emitter& out, const ServiceConfig& s) {
  if (s.engine == "local") return;
  if (s.engine == "fleet") {
    out << YAML::Key << "engine" << YAML::Value << s.engine;
    out << YAML::Key << "fleet" << YAML::Value << YAML::BeginMap << YAML::Key << "url"
        << YAML::Value << YAML::DoubleQuoted << s.fleet_url << YAML::EndMap;
    return;
  }
  const SlurmServiceConfig& c = s.slurm;
  out << YAML::Key << "engine" << YAML::Value << s.engine;
  out << YAML::Key << "slurm" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "transport" << YAML::Value << c.transport;
  for (const auto& [key, member] : kSlurmStrings) {
    const std::string& value = c.*member;
    if (!value.empty()) out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  }
  out << YAML::Key << "time_limit_minutes" << YAML::Value << c.time_limit_minutes;
  if (!c.extra_sbatch_args.empty()) {
    out << YAML::Key << "extra_sbatch_args" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& arg : c.extra_sbatch_args) out << YAML::DoubleQuoted << arg;
    out << YAML::EndSeq;
  }
  out << YAML::Key << "port_range" << YAML::Value << YAML::Flow << YAML::BeginSeq
      << c.port_range_start << c.port_range_end << YAML::EndSeq;
  out << YAML::Key << "timeout_seconds" << YAML::Value << fmt::format("{}", c.timeout.count());
  out << YAML::EndMap;
}

}  // namespace gpuscale::daemon
