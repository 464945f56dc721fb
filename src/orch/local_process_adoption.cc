// LocalProcessOrchestrator: adopting the replicas a previous daemon started.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <unordered_map>

#include "orch/local_process_orchestrator.h"
#include "orch/process_util.h"

namespace gpuscale::orch {

using events::EventKind;

namespace {

enum class Owner { kGone, kOurs, kOtherStateDir };

// The process is the one we started: alive, running exactly the recorded command line (pids
// are reused, so a live pid alone proves nothing), and marked for our state directory. A
// process marked for another one belongs to the daemon of that directory (this database was
// copied from it); `marked_for` then names that directory. A process with no marker (started
// by a gpuscale older than the markers) or whose environment cannot be read counts as ours.
Owner OwnerOf(const ReplicaRecord& record, const std::string& state_dir,
              std::string& marked_for) {
  if (record.pid <= 0 || record.argv.empty() || !ProcessAlive(record.pid)) return Owner::kGone;
  const std::optional<std::vector<std::string>> cmdline = ReadCmdline(record.pid);
  if (!cmdline || *cmdline != record.argv) return Owner::kGone;
  const std::optional<std::vector<std::string>> environment = ReadEnviron(record.pid);
  if (!environment) return Owner::kOurs;
  std::optional<std::string> marker = EnvValue(*environment, kReplicaMarkerEnv);
  if (!marker || MarkerNamesStateDir(*marker, state_dir)) return Owner::kOurs;
  marked_for = std::move(*marker);
  return Owner::kOtherStateDir;
}

std::string CleanUpMessage(Owner owner, const ReplicaRecord& record,
                           const std::string& marked_for) {
  switch (owner) {
    case Owner::kOurs:
      return fmt::format("pid {} was stopping: killed, GPUs released", record.pid);
    case Owner::kOtherStateDir:
      return fmt::format("pid {} is a replica of another state directory ({}={}): this database "
                         "is a copy of that one's; the record is dropped and its GPU leases "
                         "released here, the process is left alone",
                         record.pid, kReplicaMarkerEnv, marked_for);
    case Owner::kGone:
      break;
  }
  return fmt::format("pid {} is gone or runs something else: GPUs released", record.pid);
}

}  // namespace

// Leases the recorded GPUs again for the same owner. The ledger only hands out GPUs it
// selects from a snapshot, so we give it a snapshot of exactly those GPUs (keys as uuids,
// readings unknown, no filters but the type): it either leases all of them or names who
// holds one. Each GPU's type is the live snapshot's, so a typed service never re-leases a
// GPU that is now of another type (the inventory changed while the daemon was down); when
// the GPUs cannot be read, the types are unknown and not checked, as before types existed.
Status LocalProcessOrchestrator::ReacquireLeases(const ReplicaRecord& record, Seconds now) {
  if (record.gpu_keys.empty()) return OkStatus();
  if (record.gpu_keys.size() != record.gpus.size()) {
    return InvalidArgument(fmt::format("record of '{}' has {} GPU keys but {} GPU indices",
                                       record.id, record.gpu_keys.size(), record.gpus.size()));
  }
  const Result<gpu::GpuSnapshot> live = gpu_source_(now);
  std::unordered_map<std::string, std::string> live_types;
  if (live) {
    for (const gpu::GpuInfo& g : live->gpus) live_types.emplace(alloc::LeaseKeyOf(g), g.type);
  }
  gpu::GpuSnapshot snapshot;
  snapshot.backend = "adoption";
  snapshot.taken_at = now;
  for (size_t i = 0; i < record.gpus.size(); ++i) {
    gpu::GpuInfo info;
    info.index = record.gpus[i];
    info.uuid = record.gpu_keys[i];
    if (auto it = live_types.find(info.uuid); it != live_types.end()) info.type = it->second;
    snapshot.gpus.push_back(std::move(info));
  }
  alloc::SelectionRequest request;
  request.gpu_count = static_cast<int>(record.gpus.size());
  if (live) request.gpu_type = config_.gpu_type;
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
  std::string marked_for;
  const Owner whose = OwnerOf(record, config_.state_dir, marked_for);
  if (whose != Owner::kOurs || record.stopping) {
    // A stopping replica was on its way out: finish the job without waiting for a grace
    // period the previous daemon already started. A pid that is not ours is left alone.
    if (whose == Owner::kOurs) SignalGroup(record.pid, SIGKILL);
    ledger_.ReleaseOwner(owner);
    report.cleaned_up.push_back(record.id);
    if (whose == Owner::kOtherStateDir) {
      report.other_state_dir.push_back(
          fmt::format("{} (pid {}, {})", record.id, record.pid, marked_for));
    }
    book_.Emit(now, record.id, EventKind::kReplicaCleanedUp,
               CleanUpMessage(whose, record, marked_for));
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
    book_.Emit(now, r.id, EventKind::kReplicaCleanedUp, r.last_error + "; stopping it");
  } else {
    if (budget_ != nullptr && !r.gpus.empty()) {  // it runs on them, whatever the budget says
      r.budget_gpus = static_cast<int>(r.gpus.size());
      budget_->Restore(budget_pool_, r.budget_gpus);
    }
    report.adopted.push_back(r.id);
    book_.Emit(now, r.id, EventKind::kReplicaAdopted,
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
