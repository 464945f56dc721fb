// SlurmTransport: the four things the Slurm orchestrator asks of a Slurm cluster -- submit a
// batch job, list jobs, list nodes, cancel a job -- behind one interface with two
// implementations: SlurmRestTransport (slurmrestd, OpenAPI v0.0.38) and SlurmCliTransport
// (sbatch / squeue --json / sinfo --json / scancel). Both speak Slurm's own vocabulary; the
// orchestrator (slurm_orchestrator.h) decides what a job means for a replica.
//
// Errors: every method returns kUnavailable when the controller (or slurmrestd) cannot be
// reached or answers with an error it did not attribute to the request, naming the command
// or URL and Slurm's message, so the orchestrator can tell "engine down" from "job gone".
// Thread-safety: implementations hold only configuration; calls may run concurrently.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpuscale::orch {

// One batch job to submit. The script is complete ("#!/bin/sh\n..."): the transports add
// no directives to it.
struct SlurmJobRequest {
  std::string name;                  // --job-name
  std::string comment;               // --comment
  std::string gres;                  // "gpu:2" or "gpu:a100:2"; "" = no GRES
  std::string partition;             // "" = the cluster's default partition
  std::string account;               // "" = the user's default account
  int time_limit_minutes = 0;        // 0 = the partition's default
  std::string output_path;           // stdout and stderr of the job
  std::string working_dir;           // current working directory of the job
  std::vector<std::string> extra_sbatch_args;  // CLI only, e.g. "--qos=inference"
  // The job's environment for slurmrestd, which (unlike sbatch) propagates none.
  std::vector<std::pair<std::string, std::string>> environment;
  std::string script;
};

// One job as squeue / GET .../jobs show it.
struct SlurmJob {
  std::string id;         // "42"
  std::string name;       // job name
  std::string comment;
  std::string state;      // "PENDING", "RUNNING", "COMPLETED", "CANCELLED", "FAILED", ...
  std::string reason;     // state_reason: "Resources", "Priority", "None", ...
  std::string batch_host;  // node running the batch script; "" while pending
  std::string nodes;       // node list expression, "" while pending
};

// One node as sinfo / GET .../nodes show it.
struct SlurmNode {
  std::string name;        // "n1"
  std::string address;     // NodeAddr ("10.0.0.7"); where its replicas serve
  std::string hostname;    // NodeHostname
  std::string state;       // "idle", "mixed", "allocated", "down", ...
  std::vector<std::string> state_flags;  // "DRAIN", "NOT_RESPONDING", ...
  std::vector<std::string> partitions;
  std::string gres;        // configured, e.g. "gpu:tesla:4"
  std::string gres_used;   // e.g. "gpu:tesla:2(IDX:0-1)"
};

class SlurmTransport {
 public:
  virtual ~SlurmTransport() = default;
  // "cli" or "rest", for messages.
  virtual std::string_view Name() const = 0;
  // The new job's id. Errors: kInvalidArgument when Slurm rejected the job itself (e.g.
  // "Requested node configuration is not available"); kUnavailable as above.
  virtual Result<std::string> Submit(const SlurmJobRequest& request) = 0;
  // Every job the controller still lists (recently ended ones included).
  virtual Result<std::vector<SlurmJob>> ListJobs() = 0;
  virtual Result<std::vector<SlurmNode>> ListNodes() = 0;
  // Errors: kNotFound when Slurm no longer knows the job; kUnavailable as above.
  virtual Status Cancel(const std::string& job_id) = 0;
};

}  // namespace gpuscale::orch
