// Daemon: adoption when the replicas table cannot be read (a damaged row or page). The
// replica processes marked for this state directory are the truth about which GPUs are
// held: each carries its replica id, service, port and GPU keys (orch/marked_replicas.h), so
// the daemon adopts them from that and rewrites the table, instead of starting new replicas
// over their GPUs and leaving them running past its shutdown. A marked process that carries
// no id cannot be matched to a service: the daemon then refuses to start and says what to do
// (docs/operations.md, "When the replicas table cannot be read").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/replica_rows.h"
#include "orch/marked_replicas.h"
#include "orch/process_util.h"

namespace gpuscale::daemon {

using events::EventKind;

std::string Daemon::ServiceOfMarked(const std::string& service) const {
  if (services_.count(service) != 0) return service;
  const size_t dot = service.rfind('.');  // a pool: PoolServiceConfig's "<service>.<role>"
  if (dot == std::string::npos) return service;
  auto it = services_.find(service.substr(0, dot));
  const bool pools =
      it != services_.end() && (it->second->pooled != nullptr || it->second->variants != nullptr);
  return pools ? it->first : service;
}

Result<std::vector<store::ReplicaRow>> Daemon::ReplicaRowsFromProcesses(
    const Error& unreadable, Seconds now, std::vector<store::EventRow>& events) {
  const std::string db = config_.state_dir + "/gpuscale.db";
  const std::string marker = fmt::format("{}={}", orch::kReplicaMarkerEnv,
                                         orch::ReplicaMarkerValue(config_.state_dir));
  orch::MarkedReplicas marked = orch::FindMarkedReplicas(config_.state_dir, now);
  if (!marked.unidentified.empty()) {
    return FailedPrecondition(
        fmt::format("the replicas table of '{}' cannot be read ({}), and replica processes of "
                    "this state directory ({}) run that do not say which replica they are "
                    "(pids {}; started by an older gpuscale): without the table they can be "
                    "neither adopted nor safely replaced. Stop them (kill -TERM -- -<pid> for "
                    "each) and start again, or restore the database from a backup "
                    "(docs/operations.md, \"Backup and restore\")",
                    db, unreadable.message, marker, fmt::join(marked.unidentified, ", ")),
        "state_dir");
  }
  std::vector<store::ReplicaRow> rows;
  std::vector<std::string> ids;
  for (const orch::MarkedReplica& m : marked.replicas) {
    rows.push_back(ToReplicaRow(m.record, ServiceOfMarked(m.service)));
    ids.push_back(fmt::format("{} (pid {})", m.record.id, m.record.pid));
  }
  const std::string message = fmt::format(
      "the replicas table of '{}' cannot be read ({}); adopting the {} replica processes "
      "marked {} from what they carry instead [{}], and rewriting the table from them",
      db, unreadable.message, rows.size(), marker, fmt::join(ids, ", "));
  Log(message);
  events.push_back(MakeEvent(now, "", EventKind::kReplicasTableRebuilt, "", message));
  if (Status cleared = store_->replicas().DeleteAll(); !cleared) {
    store_health_.Failed("clearing the unreadable replicas table", cleared.error());
  }
  return rows;
}

}  // namespace gpuscale::daemon
