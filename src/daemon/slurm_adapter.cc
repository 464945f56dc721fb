#include "daemon/slurm_adapter.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "orch/slurm_cli_transport.h"
#include "orch/slurm_rest_transport.h"

namespace gpuscale::daemon {
namespace {

// First line, trimmed; read at start so that a rotated token is picked up on restart.
Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return InvalidArgument(fmt::format("cannot read token file '{}'", path), "slurm.token_file");
  }
  const size_t begin = line.find_first_not_of(" \t\r");
  const size_t end = line.find_last_not_of(" \t\r");
  if (begin == std::string::npos) {
    return InvalidArgument(fmt::format("token file '{}' is empty", path), "slurm.token_file");
  }
  return line.substr(begin, end - begin + 1);
}

}  // namespace

orch::SlurmOrchestratorConfig SlurmOrchestratorConfigFor(const ServiceConfig& service,
                                                         const SlurmAdapterOptions& options) {
  orch::SlurmOrchestratorConfig c;
  c.service = service.name;
  c.command = service.command;
  c.env = service.env;
  c.gpus_per_replica = service.gpus_per_replica;
  c.gres_type = service.slurm.gres_type;
  c.partition = service.slurm.partition;
  c.account = service.slurm.account;
  c.time_limit_minutes = service.slurm.time_limit_minutes;
  c.extra_sbatch_args = service.slurm.extra_sbatch_args;
  c.max_replicas = service.max_replicas;
  c.state_dir = options.state_dir;
  c.readiness_path = service.readiness_path;
  c.port_range_start = service.slurm.port_range_start;
  c.port_range_end = service.slurm.port_range_end;
  c.startup_timeout = service.startup_timeout;
  c.probe_interval = options.probe_interval;
  c.restart_backoff_initial = options.restart_backoff_initial;
  c.restart_backoff_max = options.restart_backoff_max;
  c.capabilities = {"gpu"};
  return c;
}

std::string SlurmClusterKey(const SlurmServiceConfig& s, const std::string& token) {
  // Fields joined with a byte none of them holds (a YAML string may hold '|').
  const char sep = '\0';
  std::string key = s.transport == "rest" ? "rest" : "cli";
  for (const std::string& field : s.transport == "rest"
                                      ? std::vector<std::string>{s.url, s.user, token}
                                      : std::vector<std::string>{s.bin_dir, s.slurm_conf}) {
    key += sep;
    key += field;
  }
  key += sep;
  key += fmt::format("{}", s.timeout.count());
  return key;
}

Result<std::unique_ptr<orch::SlurmOrchestrator>> MakeSlurmOrchestrator(
    const ServiceConfig& service, const SlurmAdapterOptions& options) {
  const SlurmServiceConfig& s = service.slurm;
  std::function<std::unique_ptr<orch::SlurmTransport>()> make;
  std::string token = s.token;
  if (s.transport == "rest") {
    if (!s.token_file.empty()) {
      GS_ASSIGN_OR_RETURN(token, ReadToken(s.token_file));
    }
    orch::SlurmRestConfig rest{s.url, s.user, token, s.timeout};
    make = [rest] { return std::make_unique<orch::SlurmRestTransport>(rest); };
  } else {
    orch::SlurmCliConfig cli;
    cli.bin_dir = s.bin_dir;
    cli.slurm_conf = s.slurm_conf;
    cli.script_dir = (std::filesystem::path(options.state_dir) / "slurm").string();
    cli.timeout = s.timeout;
    make = [cli] { return std::make_unique<orch::SlurmCliTransport>(cli); };
  }
  std::unique_ptr<orch::SlurmTransport> transport =
      options.clusters == nullptr
          ? make()
          : options.clusters->Share(SlurmClusterKey(s, token), make(), make());
  return orch::SlurmOrchestrator::Create(SlurmOrchestratorConfigFor(service, options),
                                         std::move(transport), {}, options.calls);
}

}  // namespace gpuscale::daemon
