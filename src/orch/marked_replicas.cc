#include "orch/marked_replicas.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

#include "orch/process_util.h"

namespace gpuscale::orch {
namespace {

// "a,b,c" -> {"a","b","c"}; "" -> {}.
std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  size_t start = 0;
  for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1) {
    parts.push_back(text.substr(start, comma - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::optional<int> ParseInt(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<MarkedReplica> MarkedReplicaOf(int pid, const std::vector<std::string>& environment,
                                             std::vector<std::string> argv,
                                             const std::string& state_dir, Seconds now) {
  const std::optional<std::string> id = EnvValue(environment, kReplicaIdEnv);
  const std::optional<std::string> service = EnvValue(environment, kReplicaServiceEnv);
  const std::optional<std::string> port_text = EnvValue(environment, kReplicaPortEnv);
  if (!id || id->empty() || !service || service->empty() || !port_text || argv.empty()) {
    return std::nullopt;
  }
  const std::optional<int> port = ParseInt(*port_text);
  if (!port) return std::nullopt;
  MarkedReplica marked;
  marked.service = *service;
  ReplicaRecord& r = marked.record;
  r.id = *id;
  r.phase = scale::ReplicaPhase::kStarting;  // re-probed before it serves
  r.phase_since = now;
  r.started_at = now;
  r.pid = pid;
  r.port = *port;
  r.gpu_keys = SplitCommas(EnvValue(environment, kReplicaGpuKeysEnv).value_or(""));
  if (!r.gpu_keys.empty()) {
    for (const std::string& index : SplitCommas(EnvValue(environment, "CUDA_VISIBLE_DEVICES")
                                                    .value_or(""))) {
      const std::optional<int> gpu = ParseInt(index);
      if (!gpu) return std::nullopt;
      r.gpus.push_back(*gpu);
    }
    if (r.gpus.size() != r.gpu_keys.size()) return std::nullopt;
  }
  r.lease_owner = "replica/" + r.id;
  r.argv = std::move(argv);
  r.log_path = (std::filesystem::path(state_dir) / "logs" / (r.id + ".log")).string();
  return marked;
}

MarkedReplicas FindMarkedReplicas(const std::string& state_dir, Seconds now) {
  const std::string marker =
      fmt::format("{}={}", kReplicaMarkerEnv, ReplicaMarkerValue(state_dir));
  MarkedReplicas found;
  for (const MarkedProcess& p : FindProcessesWithEnv(marker)) {
    if (p.pid != p.pgid) continue;
    std::optional<std::vector<std::string>> environment = ReadEnviron(p.pid);
    std::optional<std::vector<std::string>> argv = ReadCmdline(p.pid);
    if (!environment || !argv) continue;  // gone meanwhile
    std::optional<MarkedReplica> marked =
        MarkedReplicaOf(p.pid, *environment, std::move(*argv), state_dir, now);
    if (marked) {
      found.replicas.push_back(std::move(*marked));
    } else {
      found.unidentified.push_back(p.pid);
    }
  }
  return found;
}

}  // namespace gpuscale::orch
