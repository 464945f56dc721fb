// The daemon's records as DaemonApi's views (daemon_api/record_views.h): replicas from the
// orchestrators, rules and events from the store, and back for what the API writes. Field by
// field copies, so the API's types stay free of the orchestrator's and the store's.
//
// Pure: no I/O. Thread-safety: free functions on values.
#pragma once

#include "daemon_api/record_views.h"
#include "orch/service_orchestrator.h"
#include "store/records.h"

namespace gpuscale::daemon {

ReplicaView ToReplicaView(const orch::ReplicaInfo& replica);
RuleView ToRuleView(const store::RuleRow& row);
store::RuleRow ToRuleRow(const RuleView& rule);
EventView ToEventView(const store::EventRow& row);
store::EventQuery ToStoreQuery(const EventQuery& query);

}  // namespace gpuscale::daemon
