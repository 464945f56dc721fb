// Conversions between what the local-process orchestrator persists (orch::ReplicaRecord,
// alloc::Lease) and the store's rows (store::ReplicaRow, store::LeaseRow). A replica that
// was being stopped is stored with phase "stopping" so that adoption finishes the stop; the
// phase column holds orch::ReplicaStateName's strings.
//
// Pure functions on values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/result.h"
#include "orch/local_process_orchestrator.h"
#include "store/records.h"

namespace gpuscale::daemon {

store::ReplicaRow ToReplicaRow(const orch::ReplicaRecord& record, const std::string& service);
// Errors: kFailedPrecondition naming the replica, its service and the unknown phase (a row
// written by another version): adopting it as something it is not could leak or kill it.
Result<orch::ReplicaRecord> ToReplicaRecord(const store::ReplicaRow& row);
store::LeaseRow ToLeaseRow(const alloc::Lease& lease);

}  // namespace gpuscale::daemon
