// LocalProcessOrchestrator: adopting the replicas a previous daemon started.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>

#include "orch/local_process_orchestrator.h"
#include "orch/process_util.h"

namespace gpuscale::orch {
namespace {

// The process is the one we started: alive and running exactly the recorded command line
// (pids are reused, so a live pid alone proves nothing).
bool IsOurProcess(const ReplicaRecord& record) {
  if (record.pid <= 0 || record.argv.empty() || !ProcessAlive(record.pid)) return false;
  const std::optional<std::vector<std::string>> cmdline = ReadCmdline(record.pid);
  return cmdline && *cmdline == record.argv;
}

}  // namespace

// Leases the recorded GPUs again for the same owner. The ledger only hands out GPUs it
// selects from a snapshot, so we give it a snapshot of exactly those GPUs (keys as uuids,
// readings unknown, no filters): it either leases all of them or names who holds one.
Status LocalProcessOrchestrator::ReacquireLeases(const ReplicaRecord& record, Seconds now) {
  if (record.gpu_keys.empty()) return OkStatus();
  if (record.gpu_keys.size() != record.gpus.size()) {
    return InvalidArgument(fmt::format("record of '{}' has {} GPU keys but {} GPU indices",
                                       record.id, record.gpu_keys.size(), record.gpus.size()));
  }
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "adoption";
  snapshot.taken_at = now;
  for (size_t i = 0; i < record.gpus.size(); ++i) {
    gpu::GpuInfo info;
    info.index = record.gpus[i];
    info.uuid = record.gpu_keys[i];
    snapshot.gpus.push_back(std::move(info));
  }
  alloc::SelectionRequest request;
  request.gpu_count = static_cast<int>(record.gpus.size());
  GS_RETURN_IF_ERROR(ledger_.Allocate(snapshot, request, record.lease_owner, now));
  return OkStatus();
}

LocalProcessOrchestrator::Replica LocalProcessOrchestrator::AdoptedReplica(
    const ReplicaRecord& record, const std::string& owner, Seconds now) {
  Replica r;
  ReplicaBookBase::Restore(r, record);
  r.owner = owner;
  r.pid = record.pid;
  r.gpus = record.gpus;
  r.gpu_keys = record.gpu_keys;
  r.next_probe_at = now;
  r.proc = Proc::kRunning;
  // Re-probed before it serves again: starting until the first probe answers.
  r.phase = scale::ReplicaPhase::kStarting;
  r.phase_since = now;
  return r;
}

void LocalProcessOrchestrator::AdoptOne(const ReplicaRecord& record, Seconds now,
                                        AdoptionReport& report) {
  const std::string owner = record.lease_owner.empty() ? "replica/" + record.id
                                                       : record.lease_owner;
  const bool ours = IsOurProcess(record);
  if (!ours || record.stopping) {
    // A stopping replica was on its way out: finish the job without waiting for a grace
    // period the previous daemon already started. A pid that is not ours is left alone.
    if (ours) SignalGroup(record.pid, SIGKILL);
    ledger_.ReleaseOwner(owner);
    report.cleaned_up.push_back(record.id);
    book_.Emit(
        now, record.id, "replica_cleaned_up",
        ours ? fmt::format("pid {} was stopping: killed, GPUs released", record.pid)
             : fmt::format("pid {} is gone or runs something else: GPUs released", record.pid));
    return;
  }
  Replica r = AdoptedReplica(record, owner, now);
  ReplicaRecord leased = record;
  leased.lease_owner = owner;
  if (Status leases = ReacquireLeases(leased, now); !leases) {
    // Someone else holds one of its GPUs now: the holder wins; this process is stopped.
    r.last_error = "cannot re-acquire GPU leases: " + leases.error().message;
    report.errors.push_back(fmt::format("{}: {}", r.id, r.last_error));
    r.stopping = true;
    r.gpus.clear();
    r.gpu_keys.clear();
    Terminate(r, now, /*restart_after=*/false);
    book_.Emit(now, r.id, "replica_cleaned_up", r.last_error + "; stopping it");
  } else {
    if (budget_ != nullptr && !r.gpus.empty()) {  // it runs on them, whatever the budget says
      r.budget_gpus = static_cast<int>(r.gpus.size());
      budget_->Restore(budget_pool_, r.budget_gpus);
    }
    report.adopted.push_back(r.id);
    book_.Emit(now, r.id, "replica_adopted",
               fmt::format("pid {} on port {} adopted after a daemon restart", r.pid, r.port));
  }
  book_.Add(std::move(r));
}

AdoptionReport LocalProcessOrchestrator::Adopt(const std::vector<ReplicaRecord>& records,
                                               Seconds now) {
  book_.Touch(now);
  AdoptionReport report;
  std::set<std::string> ids;
  std::set<int> pids;
  for (const ReplicaRecord& record : records) {
    book_.ReserveId(record.id);
    const bool duplicate = !ids.insert(record.id).second ||
                           (record.pid > 0 && !pids.insert(record.pid).second);
    if (duplicate) {
      report.errors.push_back(fmt::format("{}: duplicate record (id or pid {}) ignored",
                                          record.id, record.pid));
      continue;
    }
    AdoptOne(record, now, report);
  }
  return report;
}

}  // namespace gpuscale::orch
