// Orchestrator records <-> store rows (replica_rows.h).
#include "daemon/replica_rows.h"

#include <algorithm>

namespace gpuscale::daemon {
namespace {

constexpr std::string_view kStopping = "stopping";

// Every field but updated_at. That one says when the row was written, not what the replica
// is: the daemon stamps rows as it writes them and builds each tick's rows unstamped, so
// comparing it would make every snapshot look changed and defeat the skip of no-op writes.
bool SameButUpdateTime(const store::ReplicaRow& a, const store::ReplicaRow& b) {
  store::ReplicaRow a_stamped_as_b = a;
  a_stamped_as_b.updated_at = b.updated_at;
  return a_stamped_as_b == b;
}

}  // namespace

store::ReplicaRow ToReplicaRow(const orch::ReplicaRecord& record, const std::string& service) {
  store::ReplicaRow row;
  row.id = record.id;
  row.service = service;
  row.phase =
      record.stopping ? std::string(kStopping) : std::string(scale::ReplicaPhaseName(record.phase));
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

orch::ReplicaRecord ToReplicaRecord(const store::ReplicaRow& row) {
  orch::ReplicaRecord record;
  record.id = row.id;
  record.stopping = row.phase == kStopping;
  record.phase = scale::ReplicaPhase::kPending;
  for (scale::ReplicaPhase p : {scale::ReplicaPhase::kStarting, scale::ReplicaPhase::kReady,
                                scale::ReplicaPhase::kDraining}) {
    if (row.phase == scale::ReplicaPhaseName(p)) record.phase = p;
  }
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

bool SameReplicaRows(const std::vector<store::ReplicaRow>& a,
                     const std::vector<store::ReplicaRow>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), SameButUpdateTime);
}

// A lease row has no write time: every field is state.
bool SameLeaseRows(const std::vector<store::LeaseRow>& a, const std::vector<store::LeaseRow>& b) {
  return a == b;
}

}  // namespace gpuscale::daemon
