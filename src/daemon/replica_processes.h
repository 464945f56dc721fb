// The replica processes marked for a state directory (orch/process_util.h's marker), seen
// from outside any orchestrator, at the daemon's start: the truth about which GPUs are held
// when the replicas table cannot be read, and the processes no record knows (a daemon died
// before saving them), which are stopped before the first tick places anything.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "daemon/service_slot.h"
#include "store/store.h"

namespace gpuscale::daemon {

// When the replicas table cannot be read (`unreadable`): rows rebuilt from the replica
// processes marked for `state_dir` (orch/marked_replicas.h), each under its daemon service in
// `services` (a pool's "chat.prefill" under "chat"), and a replicas_table_rebuilt event saying
// so appended to `events` (its message is for the log too). Errors: kFailedPrecondition naming
// state_dir, the database, the pids and what to do when a marked process carries no replica
// id.
Result<std::vector<store::ReplicaRow>> ReplicaRowsFromProcesses(
    const std::string& state_dir, const Error& unreadable, const ServiceSlots& services,
    Seconds now, std::vector<store::EventRow>& events);

// Kills (process group and all) every replica process marked for `state_dir` that neither
// `rows` nor a slot of `services` knows, with an event each, and waits up to 5 s until they
// are gone. Returns how many process groups it killed.
size_t StopUnrecordedReplicaProcesses(const std::string& state_dir,
                                      const std::vector<store::ReplicaRow>& rows,
                                      const ServiceSlots& services, Seconds now,
                                      std::vector<store::EventRow>& events);

}  // namespace gpuscale::daemon
