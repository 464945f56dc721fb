// Adoption when the replicas table cannot be read (a damaged row or page). The
// replica processes marked for this state directory are the truth about which GPUs are
// held: each carries its replica id, service, port and GPU keys (orch/marked_replicas.h), so
// the daemon adopts them from that and rewrites the table, instead of starting new replicas
// over their GPUs and leaving them running past its shutdown. A marked process that carries
// no id cannot be matched to a service: the daemon then refuses to start and says what to do
// (docs/operations.md, "When the replicas table cannot be read").
#include "daemon/replica_processes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <thread>

#include "daemon/replica_rows.h"
#include "orch/marked_replicas.h"
#include "orch/process_util.h"
#include "state/event_log.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

// The daemon service of a marked process's service name ("chat.prefill" -> "chat").
std::string ServiceOfMarked(const ServiceSlots& services, const std::string& service) {
  if (services.count(service) != 0) return service;
  const size_t dot = service.rfind('.');  // a pool: PoolServiceConfig's "<service>.<role>"
  if (dot == std::string::npos) return service;
  auto it = services.find(service.substr(0, dot));
  const bool pools =
      it != services.end() && (it->second->pooled != nullptr || it->second->variants != nullptr);
  return pools ? it->first : service;
}

std::string Marker(const std::string& state_dir) {
  return fmt::format("{}={}", orch::kReplicaMarkerEnv, orch::ReplicaMarkerValue(state_dir));
}

}  // namespace

Result<std::vector<store::ReplicaRow>> ReplicaRowsFromProcesses(
    const std::string& state_dir, const Error& unreadable, const ServiceSlots& services,
    Seconds now, std::vector<store::EventRow>& events) {
  const std::string db = state_dir + "/gpuscale.db";
  const std::string marker = Marker(state_dir);
  orch::MarkedReplicas marked = orch::FindMarkedReplicas(state_dir, now);
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
    rows.push_back(ToReplicaRow(m.record, ServiceOfMarked(services, m.service)));
    ids.push_back(fmt::format("{} (pid {})", m.record.id, m.record.pid));
  }
  const std::string message = fmt::format(
      "the replicas table of '{}' cannot be read ({}); adopting the {} replica processes "
      "marked {} from what they carry instead [{}], and rewriting the table from them",
      db, unreadable.message, rows.size(), marker, fmt::join(ids, ", "));
  events.push_back(state::MakeEvent(now, "", EventKind::kReplicasTableRebuilt, "", message));
  return rows;
}

// A replica process of this state directory (its marker, orch/process_util.h) that no
// record and no orchestrator knows was started by a daemon that died before saving it. It
// may hold GPUs the ledger thinks free, so it is killed, process group and all, before the
// first tick places anything; the daemon waits (up to 5 s) until it is gone.
size_t StopUnrecordedReplicaProcesses(const std::string& state_dir,
                                      const std::vector<store::ReplicaRow>& rows,
                                      const ServiceSlots& services, Seconds now,
                                      std::vector<store::EventRow>& events) {
  std::set<int> known;  // replica process group leaders
  for (const store::ReplicaRow& row : rows) {
    if (row.pid > 0) known.insert(static_cast<int>(row.pid));
  }
  for (const auto& [name, slot] : services) {
    for (const orch::ReplicaInfo& r : slot->orch->Replicas(now)) {
      if (r.pid > 0) known.insert(r.pid);
    }
  }
  std::set<int> groups;
  for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(Marker(state_dir))) {
    if (known.count(p.pid) == 0 && known.count(p.pgid) == 0) groups.insert(p.pgid);
  }
  for (int pgid : groups) {
    orch::SignalGroup(pgid, SIGKILL);
    events.push_back(
        state::MakeEvent(now, "", EventKind::kReplicaProcessStopped, "",
                         fmt::format("killed process group {}: a replica process of this "
                                     "state directory that no record knows (a daemon "
                                     "died before saving it)",
                                     pgid)));
  }
  for (int i = 0; i < 100; ++i) {
    bool alive = false;
    for (int pgid : groups) alive = alive || orch::ProcessAlive(pgid);
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return groups.size();
}

}  // namespace gpuscale::daemon
