#include "orch/slurm_cli_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

#include "gpumon/process_runner.h"
#include "orch/slurm_json.h"

namespace gpuscale::orch {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

}  // namespace

std::vector<std::string> SlurmCliTransport::Command(const std::string& tool,
                                                    const std::vector<std::string>& args) const {
  std::vector<std::string> argv;
  if (!config_.slurm_conf.empty()) {
    argv = {"env", "SLURM_CONF=" + config_.slurm_conf};
  }
  argv.push_back(config_.bin_dir.empty() ? tool
                                         : (std::filesystem::path(config_.bin_dir) / tool).string());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> SlurmCliTransport::SbatchArgv(const SlurmJobRequest& r,
                                                       const std::string& script_path) const {
  std::vector<std::string> args = {"--parsable", "--job-name=" + r.name, "--comment=" + r.comment,
                                   "--output=" + r.output_path, "--error=" + r.output_path};
  if (!r.working_dir.empty()) args.push_back("--chdir=" + r.working_dir);
  if (!r.gres.empty()) args.push_back("--gres=" + r.gres);
  if (!r.partition.empty()) args.push_back("--partition=" + r.partition);
  if (!r.account.empty()) args.push_back("--account=" + r.account);
  if (r.time_limit_minutes > 0) args.push_back(fmt::format("--time={}", r.time_limit_minutes));
  args.insert(args.end(), r.extra_sbatch_args.begin(), r.extra_sbatch_args.end());
  args.push_back(script_path);
  return Command("sbatch", args);
}

Result<std::string> SlurmCliTransport::Submit(const SlurmJobRequest& request) {
  const std::string path =
      (std::filesystem::path(config_.script_dir) / (request.name + ".sbatch")).string();
  {
    std::ofstream out(path, std::ios::trunc);
    out << request.script;
    if (!out) {
      return Unavailable(fmt::format("cannot write the job script '{}'", path), "state_dir");
    }
  }
  const std::vector<std::string> argv = SbatchArgv(request, path);
  GS_ASSIGN_OR_RETURN(gpu::ProcessOutput out, gpu::RunProcess(argv, config_.timeout));
  if (out.exit_code != 0) {
    const std::string message =
        fmt::format("sbatch failed (exit {}): {}", out.exit_code, Trimmed(out.stderr_text));
    if (SlurmControllerUnreachable(out.stderr_text)) return Unavailable(message);
    return InvalidArgument(message);
  }
  // --parsable prints "<id>" or "<id>;<cluster>".
  std::string id = Trimmed(out.stdout_text);
  id = id.substr(0, id.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return Unavailable(fmt::format("sbatch printed no job id: '{}'", Trimmed(out.stdout_text)));
  }
  return id;
}

Result<std::string> SlurmCliTransport::RunJson(const std::string& tool,
                                               const std::vector<std::string>& args) {
  GS_ASSIGN_OR_RETURN(gpu::ProcessOutput out, gpu::RunProcess(Command(tool, args),
                                                              config_.timeout));
  if (out.exit_code != 0) {
    return Unavailable(fmt::format("{} {} failed (exit {}): {}", tool, fmt::join(args, " "),
                                   out.exit_code, Trimmed(out.stderr_text)));
  }
  return std::move(out.stdout_text);
}

Result<std::vector<SlurmJob>> SlurmCliTransport::ListJobs() {
  GS_ASSIGN_OR_RETURN(std::string text, RunJson("squeue", {"--json"}));
  return ParseSlurmJobs(text);
}

Result<std::vector<SlurmNode>> SlurmCliTransport::ListNodes() {
  GS_ASSIGN_OR_RETURN(std::string text, RunJson("sinfo", {"--json"}));
  return ParseSlurmNodes(text);
}

Status SlurmCliTransport::Cancel(const std::string& job_id) {
  GS_ASSIGN_OR_RETURN(gpu::ProcessOutput out,
                      gpu::RunProcess(Command("scancel", {job_id}), config_.timeout));
  if (out.exit_code == 0) return OkStatus();
  const std::string message =
      fmt::format("scancel {} failed (exit {}): {}", job_id, out.exit_code,
                  Trimmed(out.stderr_text));
  if (out.stderr_text.find("Invalid job id") != std::string::npos ||
      out.stderr_text.find("already completing or completed") != std::string::npos) {
    return NotFound(message);
  }
  return Unavailable(message);
}

}  // namespace gpuscale::orch
