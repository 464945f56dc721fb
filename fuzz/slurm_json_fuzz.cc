// libFuzzer target for the readers of Slurm's JSON documents (squeue --json, sinfo --json,
// slurmrestd's answers): the text comes from another program or over HTTP, so no input may
// crash them. Every error must be kUnavailable (a document that is not what was asked for,
// or Slurm's own errors), except a submit answer's kInvalidArgument (Slurm refused the job);
// an accepted job list names every job. CountGpus never goes negative.
//   build-asan/fuzz/slurm_json_fuzz -max_total_time=600 fuzz/corpus/slurm_json_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "orch/slurm_json.h"

namespace orch = gpuscale::orch;
using gpuscale::ErrorCode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto jobs = orch::ParseSlurmJobs(text);
  if (jobs) {
    for (const orch::SlurmJob& job : *jobs) {
      if (job.id.empty()) std::abort();
    }
  } else if (jobs.error().code != ErrorCode::kUnavailable) {
    std::abort();
  }
  auto nodes = orch::ParseSlurmNodes(text);
  if (nodes) {
    for (const orch::SlurmNode& node : *nodes) {
      if (orch::CountGpus(node.gres, "") < 0 || orch::CountGpus(node.gres_used, "") < 0) {
        std::abort();
      }
    }
  } else if (nodes.error().code != ErrorCode::kUnavailable) {
    std::abort();
  }
  auto submitted = orch::ParseSlurmSubmit(text);
  if (submitted ? submitted->empty()
                : submitted.error().code != ErrorCode::kUnavailable &&
                      submitted.error().code != ErrorCode::kInvalidArgument) {
    std::abort();
  }
  (void)orch::SlurmErrorsOf(text);
  if (orch::CountGpus(text, "") < 0 || orch::CountGpus(text, "a100") < 0) std::abort();
  return 0;
}
