// SlurmCliTransport: SlurmTransport through Slurm's command-line clients, for sites without
// slurmrestd: `sbatch --parsable` (the script is written to a file first), `squeue --json`,
// `sinfo --json`, `scancel`. Each is exec'd as an argv (gpu::RunProcess: no shell) with a
// timeout; their JSON goes through slurm_json.h.
//
// Ownership: holds its configuration only. Thread-safety: calls may run concurrently
// (distinct job names write distinct script files).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "orch/slurm_transport.h"

namespace gpuscale::orch {

struct SlurmCliConfig {
  std::string bin_dir;     // directory of sbatch/squeue/...; "" = looked up on PATH
  std::string slurm_conf;  // exported as SLURM_CONF to the clients; "" = inherit
  std::string script_dir;  // job scripts are written here (<job name>.sbatch); required
  Seconds timeout{15};     // per command; past it the command is killed (kUnavailable)
};

class SlurmCliTransport final : public SlurmTransport {
 public:
  explicit SlurmCliTransport(SlurmCliConfig config) : config_(std::move(config)) {}

  std::string_view Name() const override { return "cli"; }
  Result<std::string> Submit(const SlurmJobRequest& request) override;
  Result<std::vector<SlurmJob>> ListJobs() override;
  Result<std::vector<SlurmNode>> ListNodes() override;
  Status Cancel(const std::string& job_id) override;

  // The argv of `sbatch` for `request` with its script at `script_path` (exposed for tests).
  std::vector<std::string> SbatchArgv(const SlurmJobRequest& request,
                                      const std::string& script_path) const;

 private:
  // `tool` with SLURM_CONF and bin_dir applied, followed by `args`.
  std::vector<std::string> Command(const std::string& tool,
                                   const std::vector<std::string>& args) const;
  Result<std::string> RunJson(const std::string& tool, const std::vector<std::string>& args);

  SlurmCliConfig config_;
};

}  // namespace gpuscale::orch
