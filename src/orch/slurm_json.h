// Pure readers and writers of Slurm's JSON documents (OpenAPI v0.0.38, the format both
// slurmrestd 22.05 and `squeue --json` / `sinfo --json` print), and of the GRES strings in
// them. No I/O: the transports fetch the text, these functions give it meaning, and the
// tests feed them outputs captured from real daemons (src/orch/testdata/slurm/).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "orch/slurm_transport.h"

namespace gpuscale::orch {

// The "jobs" array of a jobs document. Errors: kUnavailable when the text is not such a
// document or its "errors" array is not empty (Slurm's message included).
Result<std::vector<SlurmJob>> ParseSlurmJobs(std::string_view json_text);

// The "nodes" array of a nodes document. Errors: as ParseSlurmJobs.
Result<std::vector<SlurmNode>> ParseSlurmNodes(std::string_view json_text);

// The job id of a POST .../job/submit answer. Errors: kInvalidArgument carrying Slurm's
// error when the submission was refused; kUnavailable for text that is no such answer.
Result<std::string> ParseSlurmSubmit(std::string_view json_text);

// The descriptions in a document's "errors" array joined with "; " ("" when none or when
// the text is not JSON).
std::string SlurmErrorsOf(std::string_view json_text);

// The body of POST /slurm/v0.0.38/job/submit for `request` (extra_sbatch_args ignored:
// slurmrestd has no such thing; the config rejects them for the REST transport).
std::string SlurmSubmitBody(const SlurmJobRequest& request);

// GPUs in a node's gres or gres_used string ("gpu:tesla:4", "gpu:2(IDX:0-1),mps:100",
// "gpu:a100:2(S:0),gpu:v100:1"); only entries named "gpu" and, when `type` is not empty,
// of that type. Unparsable entries (a negative count among them) count 0; the sum saturates
// at INT_MAX.
int CountGpus(std::string_view gres, std::string_view type);

// True when a Slurm client's or slurmrestd's error text says the controller could not be
// reached ("Unable to contact slurm controller (connect failure)", "Socket timed out", ...),
// as opposed to a refusal of the request itself.
bool SlurmControllerUnreachable(std::string_view error_text);

// True when a job in this state may still run (PENDING, RUNNING, CONFIGURING, SUSPENDED,
// REQUEUED, RESIZING, ...); false for ended states (COMPLETED, CANCELLED, FAILED, TIMEOUT,
// NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE) and COMPLETING (its processes
// are being killed).
bool SlurmJobActive(std::string_view state);

// True when a node in this state can run new jobs (not down, drained, draining, future,
// not responding, ...).
bool SlurmNodeUsable(const SlurmNode& node);

}  // namespace gpuscale::orch
