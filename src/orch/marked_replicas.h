// Replica processes found by their marker (GPUSCALE_REPLICA_OF, process_util.h) instead of by
// the database, described from what each carries: its replica id, service, port and GPU lease
// keys (process_util.h's kReplica*Env), CUDA_VISIBLE_DEVICES and its command line. A daemon
// whose replicas table cannot be read adopts these records instead of placing new replicas
// over GPUs that live processes hold (docs/operations.md, "When the replicas table cannot be
// read").
//
// Thread-safety: reentrant; reads only /proc.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "orch/service_orchestrator.h"

namespace gpuscale::orch {

// One replica process as its environment describes it.
struct MarkedReplica {
  std::string service;  // the orchestrator's service (a disaggregated pool: "<service>-<role>")
  ReplicaRecord record;
};

struct MarkedReplicas {
  std::vector<MarkedReplica> replicas;
  // Marked process group leaders that carry no replica id or an unreadable one (started by a
  // gpuscale before the ids were added): they cannot be adopted without the table.
  std::vector<int> unidentified;
};

// The live replica processes marked for `state_dir` that lead their process group (a
// replica's engine workers are members of its group and go with it). `now` is each record's
// phase_since and started_at (the real start is unknown).
MarkedReplicas FindMarkedReplicas(const std::string& state_dir, Seconds now);

// The record `environment` and `argv` describe for process `pid`; nullopt when the
// environment names no replica or its port, GPU indices or keys do not parse.
std::optional<MarkedReplica> MarkedReplicaOf(int pid, const std::vector<std::string>& environment,
                                             std::vector<std::string> argv,
                                             const std::string& state_dir, Seconds now);

}  // namespace gpuscale::orch
