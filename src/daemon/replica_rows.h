// Conversions between what the local-process orchestrator persists (orch::ReplicaRecord,
// alloc::Lease) and the store's rows (store::ReplicaRow, store::LeaseRow). A replica that
// was being stopped is stored with phase "stopping" so that adoption finishes the stop.
//
// Pure functions on values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "orch/local_process_orchestrator.h"
#include "store/records.h"

namespace gpuscale::daemon {

store::ReplicaRow ToReplicaRow(const orch::ReplicaRecord& record, const std::string& service);
// An unknown phase text reads as pending (the record then holds no process worth adopting).
orch::ReplicaRecord ToReplicaRecord(const store::ReplicaRow& row);
store::LeaseRow ToLeaseRow(const alloc::Lease& lease);

// Row equality (element by element, in order), replica rows ignoring updated_at (when the
// row was written, not replica state): the daemon skips writes that would change nothing.
bool SameReplicaRows(const std::vector<store::ReplicaRow>& a,
                     const std::vector<store::ReplicaRow>& b);
bool SameLeaseRows(const std::vector<store::LeaseRow>& a, const std::vector<store::LeaseRow>& b);

}  // namespace gpuscale::daemon
