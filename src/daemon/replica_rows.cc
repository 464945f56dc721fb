// Orchestrator records <-> store rows (replica_rows.h).
#include "daemon/replica_rows.h"

#include <fmt/format.h>

namespace gpuscale::daemon {

store::ReplicaRow ToReplicaRow(const orch::ReplicaRecord& record, const std::string& service) {
  store::ReplicaRow row;
  row.id = record.id;
  row.service = service;
  row.phase = std::string(orch::ReplicaStateName(
      record.stopping ? orch::ReplicaState::kStopping : orch::StateOfPhase(record.phase)));
  row.pid = record.pid;
  row.port = record.port;
  row.gpus = record.gpus;
  row.gpu_keys = record.gpu_keys;
  row.lease_owner = record.lease_owner;
  row.argv = record.argv;
  row.log_path = record.log_path;
  row.restarts = record.restarts;
  row.started_at = record.started_at;
  row.phase_since = record.phase_since;
  row.host = record.host;
  row.engine_id = record.engine_id;
  return row;
}

Result<orch::ReplicaRecord> ToReplicaRecord(const store::ReplicaRow& row) {
  Result<orch::ReplicaState> state = orch::ParseReplicaState(row.phase, "phase");
  if (!state) {
    return FailedPrecondition(
        fmt::format("replica '{}' of service '{}' is stored with phase '{}', which this gpuscale "
                    "does not know ({}); was the state directory written by a newer version?",
                    row.id, row.service, row.phase, state.error().message),
        "replicas.phase");
  }
  orch::ReplicaRecord record;
  record.id = row.id;
  record.stopping = *state == orch::ReplicaState::kStopping;
  record.phase = orch::PhaseOfState(*state);
  record.phase_since = row.phase_since;
  record.pid = static_cast<int>(row.pid);
  record.port = row.port;
  record.gpus = row.gpus;
  record.gpu_keys = row.gpu_keys;
  record.lease_owner = row.lease_owner;
  record.argv = row.argv;
  record.log_path = row.log_path;
  record.restarts = row.restarts;
  record.started_at = row.started_at;
  record.host = row.host;
  record.engine_id = row.engine_id;
  return record;
}

store::LeaseRow ToLeaseRow(const alloc::Lease& lease) {
  return {lease.key, lease.gpu_index, lease.node, lease.owner, lease.acquired_at};
}

}  // namespace gpuscale::daemon
