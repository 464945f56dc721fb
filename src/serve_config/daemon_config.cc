// The daemon config file: top-level sections (gpu, api, state_dir, loop, prometheus, scrape,
// tasks), the service list with its uniqueness check, and the embedded default. Services
// themselves are read in daemon_config_service.cc.
#include "serve_config/daemon_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "config/policy_profile.h"
#include "gpumon/inventory.h"
#include "serve_config/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

YAML::Node Child(const YAML::Node& parent, std::string_view key) {
  if (!parent.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node child = parent[std::string(key)];
  if (!child.IsDefined() || child.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return child;
}

Result<int> ReadIntAtLeast(const YAML::Node& parent, std::string_view key, const std::string& path,
                           int fallback, int min) {
  GS_ASSIGN_OR_RETURN(int value, yaml::ReadInt(parent, key, path, fallback));
  if (value < min) {
    return yaml::FieldError(Child(parent, key), yaml::Join(path, key),
                            fmt::format("expected an integer >= {}, got {}", min, value));
  }
  return value;
}

Result<Seconds> ReadDuration(const YAML::Node& parent, std::string_view key,
                             const std::string& path, Seconds fallback, bool positive) {
  GS_ASSIGN_OR_RETURN(double value, yaml::ReadDouble(parent, key, path, fallback.count()));
  if ((positive ? !(value > 0) : !(value >= 0)) || !std::isfinite(value)) {
    return yaml::FieldError(Child(parent, key), yaml::Join(path, key),
                            fmt::format("expected a finite number of seconds {} 0, got {}",
                                        positive ? ">" : ">=", value));
  }
  return Seconds{value};
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    // Sequence length and the smallest code point it may encode (no overlong forms).
    const int length = byte < 0x80           ? 1
                       : (byte >> 5) == 0x6  ? 2
                       : (byte >> 4) == 0xE  ? 3
                       : (byte >> 3) == 0x1E ? 4
                                             : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t code = length == 1 ? byte : byte & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      code = (code << 6) | (next & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMin[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

namespace {

using yaml::CheckKnownKeys;
using yaml::FieldError;

// $XDG_STATE_HOME/gpuscale, else $HOME/.local/state/gpuscale; without either (a bare
// service account), a directory under the system temp dir so that start-up still works.
std::string DefaultStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fmt::format("{}/gpuscale", xdg);
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return fmt::format("{}/.local/state/gpuscale", home);
  return (std::filesystem::temp_directory_path() / "gpuscale").string();
}

Status ParseGpu(const YAML::Node& n, GpuConfig& gpu) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, "gpu",
                                    {"backend", "inventory", "nvidia_smi", "nvml_library",
                                     "cache_ttl_seconds", "sample_interval_seconds", "prices"}));
  gpu::BackendOptions& b = gpu.backend;
  GS_ASSIGN_OR_RETURN(b.kind, yaml::ReadString(n, "backend", "gpu", b.kind));
  if (b.kind != "auto" && b.kind != "nvml" && b.kind != "nvidia-smi" && b.kind != "simulated") {
    return FieldError(
        Child(n, "backend"), "gpu.backend",
        fmt::format("expected one of auto, nvml, nvidia-smi, simulated, got '{}'", b.kind));
  }
  GS_ASSIGN_OR_RETURN(b.inventory_path, yaml::ReadString(n, "inventory", "gpu", b.inventory_path));
  GS_ASSIGN_OR_RETURN(b.nvidia_smi_path,
                      yaml::ReadString(n, "nvidia_smi", "gpu", b.nvidia_smi_path));
  GS_ASSIGN_OR_RETURN(b.nvml_library_path,
                      yaml::ReadString(n, "nvml_library", "gpu", b.nvml_library_path));
  GS_ASSIGN_OR_RETURN(gpu.cache_ttl,
                      ReadDuration(n, "cache_ttl_seconds", "gpu", gpu.cache_ttl, false));
  // A zero sampling period would make the sampler thread spin.
  GS_ASSIGN_OR_RETURN(gpu.sample_interval,
                      ReadDuration(n, "sample_interval_seconds", "gpu", gpu.sample_interval, true));
  GS_ASSIGN_OR_RETURN(b.prices, gpu::ParsePriceTable(Child(n, "prices"), "gpu.prices"));
  return OkStatus();
}

}  // namespace

Status ReadListen(const YAML::Node& n, const std::string& section, std::string& host_out,
                  int& port_out) {
  GS_ASSIGN_OR_RETURN(
      std::string listen,
      yaml::ReadString(n, "listen", section, fmt::format("{}:{}", host_out, port_out)));
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = colon == std::string::npos ? "" : listen.substr(colon + 1);
  int port = -1;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (host.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return yaml::FieldError(Child(n, "listen"), section + ".listen",
                            fmt::format("expected host:port with port 0..65535 (e.g. "
                                        "127.0.0.1:8080), got '{}'",
                                        listen));
  }
  host_out = host;
  port_out = port;
  return OkStatus();
}

Status ReadToken(const YAML::Node& n, const std::string& section, std::string& token) {
  GS_ASSIGN_OR_RETURN(token, yaml::ReadString(n, "token", section, std::string()));
  GS_ASSIGN_OR_RETURN(std::string file, yaml::ReadString(n, "token_file", section, std::string()));
  if (file.empty()) return OkStatus();
  const std::string field = section + ".token_file";
  if (Child(n, "token").IsDefined()) {
    return yaml::FieldError(Child(n, "token_file"), field,
                            fmt::format("set either {}.token or {}, not both", section, field));
  }
  std::ifstream in(file);
  if (!in) {
    return yaml::FieldError(
        Child(n, "token_file"), field,
        fmt::format("cannot read token file '{}': {}", file, std::strerror(errno)));
  }
  std::string line;
  std::getline(in, line);
  const size_t begin = line.find_first_not_of(" \t\r\n");
  const size_t end = line.find_last_not_of(" \t\r\n");
  if (begin == std::string::npos) {
    // An empty token would silently turn authentication off.
    return yaml::FieldError(Child(n, "token_file"), field,
                            fmt::format("token file '{}' has an empty first line", file));
  }
  token = line.substr(begin, end - begin + 1);
  return OkStatus();
}

namespace {

Status ParseApi(const YAML::Node& n, ApiConfig& api) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, "api",
                                    {"listen", "token", "token_file", "max_connections",
                                     "max_event_streams", "max_connections_per_client"}));
  GS_RETURN_IF_ERROR(ReadListen(n, "api", api.host, api.port));
  GS_ASSIGN_OR_RETURN(api.max_connections,
                      ReadIntAtLeast(n, "max_connections", "api", api.max_connections, 1));
  GS_ASSIGN_OR_RETURN(api.max_event_streams,
                      ReadIntAtLeast(n, "max_event_streams", "api", api.max_event_streams, 1));
  GS_ASSIGN_OR_RETURN(
      api.max_connections_per_client,
      ReadIntAtLeast(n, "max_connections_per_client", "api", api.max_connections_per_client, 0));
  return ReadToken(n, "api", api.token);
}

Status ParsePrometheus(const YAML::Node& n, PrometheusConfig& prometheus) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, "prometheus", {"url", "timeout_seconds"}));
  GS_ASSIGN_OR_RETURN(prometheus.url, yaml::ReadString(n, "url", "prometheus"));
  if (!prometheus.url.starts_with("http://") || prometheus.url.size() <= 7) {
    return FieldError(Child(n, "url"), "prometheus.url",
                      fmt::format("expected an http:// URL such as http://127.0.0.1:9090 "
                                  "(https is not supported), got '{}'",
                                  prometheus.url));
  }
  GS_ASSIGN_OR_RETURN(prometheus.timeout,
                      ReadDuration(n, "timeout_seconds", "prometheus", prometheus.timeout, true));
  return OkStatus();
}

Status ParseScrape(const YAML::Node& n, ScrapeConfig& scrape) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(
      n, "scrape", {"cutoff_ratio", "stale_after_ticks", "view_only_interval_seconds"}));
  GS_ASSIGN_OR_RETURN(scrape.cutoff_ratio,
                      yaml::ReadDouble(n, "cutoff_ratio", "scrape", scrape.cutoff_ratio));
  if (!(scrape.cutoff_ratio > 0 && scrape.cutoff_ratio <= 1)) {
    return FieldError(Child(n, "cutoff_ratio"), "scrape.cutoff_ratio",
                      fmt::format("expected a share of the loop interval in (0, 1], got {:g}",
                                  scrape.cutoff_ratio));
  }
  GS_ASSIGN_OR_RETURN(scrape.stale_after_ticks, ReadIntAtLeast(n, "stale_after_ticks", "scrape",
                                                               scrape.stale_after_ticks, 1));
  GS_ASSIGN_OR_RETURN(scrape.view_only_interval,
                      ReadDuration(n, "view_only_interval_seconds", "scrape",
                                   scrape.view_only_interval, /*positive=*/true));
  if (scrape.view_only_interval > Seconds{3600}) {
    // An hour-old gauge in the API is no longer a reading.
    return FieldError(
        Child(n, "view_only_interval_seconds"), "scrape.view_only_interval_seconds",
        fmt::format("expected at most 3600 seconds, got {:g}", scrape.view_only_interval.count()));
  }
  return OkStatus();
}

// A longer age would keep history past any use and make a mistyped number (hours for days)
// unnoticed for years.
constexpr double kMaxRetentionDays = 3650;

Status ParseRetention(const YAML::Node& n, RetentionConfig& retention) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(n, "retention", {"max_age_days", "max_megabytes"}));
  const double default_days = retention.max_age.count() / 86400;
  GS_ASSIGN_OR_RETURN(const double days,
                      yaml::ReadDouble(n, "max_age_days", "retention", default_days));
  if (!(days > 0 && days <= kMaxRetentionDays)) {
    return FieldError(Child(n, "max_age_days"), "retention.max_age_days",
                      fmt::format("expected days in (0, {:g}], got {:g}", kMaxRetentionDays, days));
  }
  retention.max_age = Seconds{days * 86400};
  GS_ASSIGN_OR_RETURN(const int megabytes,
                      ReadIntAtLeast(n, "max_megabytes", "retention",
                                     static_cast<int>(retention.max_bytes >> 20), 0));
  retention.max_bytes = int64_t{megabytes} << 20;
  return OkStatus();
}

// Upper bound of the tasks section's durations: a longer re-check would notice wait timeouts
// and GPU-reading changes that late, and a longer stop grace would hold a shutdown that long.
constexpr Seconds kMaxTasksSeconds{3600};

Result<Seconds> ReadTasksDuration(const YAML::Node& n, std::string_view key, Seconds fallback,
                                  bool positive) {
  GS_ASSIGN_OR_RETURN(Seconds value, ReadDuration(n, key, "tasks", fallback, positive));
  if (value > kMaxTasksSeconds) {
    return FieldError(Child(n, key), yaml::Join("tasks", key),
                      fmt::format("expected at most {:g} seconds, got {:g}",
                                  kMaxTasksSeconds.count(), value.count()));
  }
  return value;
}

Status ParseTasks(const YAML::Node& n, TasksConfig& tasks) {
  if (!n.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckKnownKeys(
      n, "tasks", {"recheck_interval_seconds", "max_head_skips", "stop_grace_seconds"}));
  GS_ASSIGN_OR_RETURN(tasks.recheck_interval,
                      ReadTasksDuration(n, "recheck_interval_seconds", tasks.recheck_interval,
                                        /*positive=*/true));
  GS_ASSIGN_OR_RETURN(tasks.max_head_skips,
                      ReadIntAtLeast(n, "max_head_skips", "tasks", tasks.max_head_skips, 0));
  if (Child(n, "stop_grace_seconds").IsDefined()) {
    GS_ASSIGN_OR_RETURN(tasks.stop_grace, ReadTasksDuration(n, "stop_grace_seconds", Seconds{0},
                                                            /*positive=*/false));
  }
  return OkStatus();
}

Status ParseServices(const YAML::Node& n, std::vector<ServiceConfig>& services) {
  if (!n.IsDefined()) return OkStatus();
  if (!n.IsSequence()) return FieldError(n, "services", "expected a list of services");
  std::map<std::string, int> first_line;  // name -> line of its first definition
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string path = yaml::Index("services", i);
    GS_ASSIGN_OR_RETURN(ServiceConfig service, ParseServiceConfig(n[i], path));
    const int line = yaml::LineOf(n[i]["name"]);
    const auto [it, inserted] = first_line.emplace(service.name, line);
    if (!inserted) {
      return InvalidArgument(
          fmt::format("duplicate service '{}' (first at line {})", service.name, it->second),
          yaml::Join(path, "name"));
    }
    services.push_back(std::move(service));
  }
  return OkStatus();
}

Result<DaemonConfig> ParseRoot(const YAML::Node& root) {
  DaemonConfig config;
  config.state_dir = DefaultStateDir();
  if (root.IsNull() || !root.IsDefined()) return config;  // an empty file: all defaults
  GS_RETURN_IF_ERROR(CheckKnownKeys(root, "",
                                    {"gpu", "api", "gateway", "state_dir", "loop_interval_seconds",
                                     "prometheus", "scrape", "retention", "tasks", "services"}));
  GS_RETURN_IF_ERROR(ParseGpu(Child(root, "gpu"), config.gpu));
  GS_RETURN_IF_ERROR(ParseApi(Child(root, "api"), config.api));
  GS_RETURN_IF_ERROR(ParseGateway(Child(root, "gateway"), config.gateway));
  GS_ASSIGN_OR_RETURN(config.state_dir, yaml::ReadString(root, "state_dir", "", config.state_dir));
  if (config.state_dir.starts_with("~/")) {
    const char* home = std::getenv("HOME");
    if (home != nullptr) config.state_dir = home + config.state_dir.substr(1);
  }
  if (config.state_dir.empty()) {
    return FieldError(Child(root, "state_dir"), "state_dir", "expected a directory path");
  }
  GS_ASSIGN_OR_RETURN(config.loop_interval,
                      ReadDuration(root, "loop_interval_seconds", "", config.loop_interval, true));
  GS_RETURN_IF_ERROR(ParsePrometheus(Child(root, "prometheus"), config.prometheus));
  GS_RETURN_IF_ERROR(ParseScrape(Child(root, "scrape"), config.scrape));
  GS_RETURN_IF_ERROR(ParseRetention(Child(root, "retention"), config.retention));
  GS_RETURN_IF_ERROR(ParseTasks(Child(root, "tasks"), config.tasks));
  GS_RETURN_IF_ERROR(ParseServices(Child(root, "services"), config.services));
  GS_RETURN_IF_ERROR(CheckModelsUnique(Child(root, "services"), config.services));
  return config;
}

// A disaggregated service's pool policies, each of which may name a role profile.
void ResolvePoolProfilePaths(const YAML::Node& service, const std::string& base_dir) {
  // IsMap before each lookup: a lookup in a missing node's child throws.
  const YAML::Node d = service["disaggregated"];
  if (!d.IsDefined() || !d.IsMap()) return;
  for (const char* pool : {"prefill", "decode"}) {
    const YAML::Node p = d[pool];
    if (p.IsDefined() && p.IsMap()) config::ResolveProfilePath(p["policy"], base_dir);
  }
}

// A relative `slo.profile` (or a pool's `disagg.profile`) in a service's policy names a file
// beside the config: made absolute before parsing, so that the policy text the store keeps
// (and re-parses when a policy is built, after a restart too) still finds it.
void ResolveServiceProfilePaths(const YAML::Node& root, const std::string& base_dir) {
  if (!root.IsMap()) return;
  const YAML::Node services = root["services"];
  if (!services.IsDefined() || !services.IsSequence()) return;
  for (const YAML::Node& service : services) {
    if (!service.IsMap()) continue;
    config::ResolveProfilePath(service["policy"], base_dir);
    ResolvePoolProfilePaths(service, base_dir);
  }
}

}  // namespace

Result<DaemonConfig> ParseDaemonConfig(const YAML::Node& root) {
  try {
    return ParseRoot(root);
  } catch (const YAML::Exception& e) {
    // A malformed tree (e.g. a mapping used as a key) makes yaml-cpp throw on conversion.
    return InvalidArgument(fmt::format("unexpected YAML structure: {}", e.msg), "<root>");
  }
}

Result<DaemonConfig> ParseDaemonConfigText(const std::string& text, const std::string& source) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
  return ParseDaemonConfig(root);
}

Result<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  // An empty file is a truncated or half-written one far more often than a wish for every
  // default: on SIGHUP it would drop every configured service.
  if (root.IsNull()) {
    return InvalidArgument(
        fmt::format("config file '{}' is empty; write at least one key (e.g. services: [])", path),
        path);
  }
  ResolveServiceProfilePaths(root, std::filesystem::path(path).parent_path().string());
  return ParseDaemonConfig(root);
}

DaemonConfig EmbeddedDefaultConfig(const std::string& self_exe) {
  DaemonConfig config;
  config.gpu.backend.kind = "simulated";  // empty inventory: built-in 4 x H100 80 GB
  config.state_dir = DefaultStateDir();
  ServiceConfig demo;
  demo.name = "demo";
  // Short emulated model load and drain so that scaling is visible within seconds; 16
  // sequences per batch (a small GPU), so that the README's 32-client bench queues on one
  // replica and the policy has something to scale on.
  // clang-format off
  demo.command = {self_exe, "emulate", "--port", "{port}", "--model", "demo-model",
                  "--startup-seconds", "2", "--drain-seconds", "5", "--max-batch-size", "16"};
  // clang-format on
  demo.models = {"demo-model"};  // what the emulator calls itself, and bench's default
  demo.gpus_per_replica = 1;
  demo.startup_timeout = Seconds{60};
  demo.drain_timeout = Seconds{10};
  demo.min_replicas = 1;
  demo.max_replicas = 4;
  demo.policy_family = "target";
  // Keep about 5 waiting requests per replica (HPA AverageValue; docs/policies.md).
  demo.policy_yaml =
      "family: target\n"
      "min_replicas: 1\n"
      "max_replicas: 4\n"
      "target:\n"
      "  metrics:\n"
      "    - name: vllm:num_requests_waiting\n"
      "      type: AverageValue\n"
      "      average_value: 5\n";
  // Through the parser once: validates the default and gives the canonical policy_yaml, so
  // that the store's copy of the spec round-trips.
  if (auto canonical = ParseServiceConfigText(ServiceConfigToYaml(demo), "embedded default")) {
    demo = std::move(*canonical);
  }
  config.services.push_back(std::move(demo));
  return config;
}

}  // namespace gpuscale::daemon
