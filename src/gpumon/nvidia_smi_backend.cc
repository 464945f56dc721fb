#include "gpumon/nvidia_smi_backend.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "gpu/nvidia_smi_parser.h"
#include "gpumon/process_runner.h"

namespace gpuscale::gpu {
namespace {

// Runs one query; a non-zero exit becomes kUnavailable with the tool's own words.
Result<std::string> RunQuery(const std::string& program, std::string_view query_flag,
                             std::string_view columns, Seconds timeout) {
  const std::vector<std::string> argv{program, fmt::format("{}={}", query_flag, columns),
                                      "--format=csv,noheader,nounits"};
  GS_ASSIGN_OR_RETURN(ProcessOutput output, RunProcess(argv, timeout));
  if (output.exit_code != 0) {
    std::string detail = output.stderr_text.empty() ? output.stdout_text : output.stderr_text;
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == '\r')) detail.pop_back();
    return Unavailable(fmt::format("{} exited with status {}: {} (is the NVIDIA driver loaded?)",
                                   program, output.exit_code,
                                   detail.empty() ? "no output" : detail));
  }
  return std::move(output.stdout_text);
}

}  // namespace

NvidiaSmiBackend::NvidiaSmiBackend(std::string program, Seconds timeout)
    : program_(std::move(program)), timeout_(timeout) {}

Result<GpuSnapshot> NvidiaSmiBackend::Query(Seconds now) {
  GS_ASSIGN_OR_RETURN(std::string text,
                      RunQuery(program_, "--query-gpu", kNvidiaSmiGpuQuery, timeout_));
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(text);
  if (!gpus) {
    Error error = gpus.error();
    error.message = fmt::format("unexpected {} output: {}", program_, error.message);
    return Unexpected<Error>(std::move(error));
  }
  GpuSnapshot snapshot;
  snapshot.backend = "nvidia-smi";
  snapshot.taken_at = now;
  snapshot.gpus = std::move(*gpus);
  // Processes are a bonus: old drivers and MIG setups may refuse this query.
  Result<std::string> apps_text =
      RunQuery(program_, "--query-compute-apps", kNvidiaSmiAppsQuery, timeout_);
  if (apps_text) {
    Result<std::vector<NvidiaSmiApp>> apps = ParseNvidiaSmiAppsCsv(*apps_text);
    if (apps) AttachProcesses(*apps, snapshot.gpus);
  }
  return snapshot;
}

}  // namespace gpuscale::gpu
