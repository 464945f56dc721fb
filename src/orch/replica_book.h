// ReplicaBook: the bookkeeping every ServiceOrchestrator adapter keeps about one service's
// replicas, whatever runs them (a local process, a Slurm job): the records in creation order,
// their ids, the phase transitions the controller asks for (with their guards and error
// messages), drain accounting, restart backoff and the events for the daemon. An adapter
// derives its record from ReplicaEntry, adds how the replica runs (a pid, a job id), and keeps
// a ReplicaBook<its record>; this file is the one place the shared rules live.
//
// Rules shared by every adapter:
//   Ids: "<service>-<n>", n counting up from 0 and never reused; adoption reserves the n of
//     every recorded id, so a replica started afterwards gets a fresh one.
//   Commands (scale::ReplicaOrchestrator): an unknown or stopping id is kNotFound; Place
//     needs a `pending` replica, Drain a `ready` one (-> `draining`), Resume a `draining` one
//     (-> `ready`), else kFailedPrecondition naming the replica's phase. Start refuses with
//     kResourceExhausted once max_replicas replicas (stopping ones not counted) exist.
//   Drain: the daemon stops routing to a draining replica; its in-flight requests are what
//     the daemon reports through ReportOutstanding (it scrapes vllm:num_requests_running +
//     waiting). Until a report arrives after the drain began, a draining replica reports 1
//     outstanding request for drain_grace, then 0, so the reconciler waits the grace period
//     rather than stopping a replica it knows nothing about.
//   Stop: the replica is `stopping` at once and leaves ListReplicas; it stays in the records
//     (Replicas(), Records()) until its adapter has seen it go.
//   Restarts: a replica that failed is retried after an exponential backoff, as Kubernetes'
//     CrashLoopBackOff: restart_backoff_initial * 2^(failures in a row - 1), capped at
//     restart_backoff_max; it reports `starting` (state restarting) meanwhile.
//
// Time: every call that takes `now` gets it from the orchestrator's caller; the book
// remembers the latest it saw, because ListReplicas (which takes no time) still has to end
// the drain grace.
// Ownership: owns the records and the events not yet taken.
// Thread-safety: not thread-safe; owned by one orchestrator and called from its one thread.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "orch/service_orchestrator.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::orch {

struct ReplicaBookConfig {
  std::string service;  // ids are "<service>-<n>"
  Seconds drain_grace{30};
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
};

// What every adapter records about a replica; an adapter's record type derives from it.
struct ReplicaEntry {
  std::string id;
  scale::ReplicaPhase phase = scale::ReplicaPhase::kPending;
  Seconds phase_since{0};
  bool stopping = false;  // Stop()ped: no command finds it; removed once it is gone
  bool adopted = false;   // taken over from a previous daemon
  int port = 0;
  std::vector<std::string> argv;  // expanded command line
  std::string log_path;
  int restarts = 0;
  int crash_streak = 0;  // failures in a row; drives the backoff
  Seconds started_at{0};
  Seconds restart_at{0};  // end of the current backoff
  Seconds next_probe_at{0};
  bool serving = true;                   // false: the last health probe failed (readiness)
  std::optional<Seconds> silent_since;   // health probes unanswered since (liveness)
  std::optional<int> outstanding;  // last ReportOutstanding; reset by Drain
  Seconds drain_started{0};
  std::string last_error;
};

// The part of the book that does not depend on the adapter's record type.
// Since when `r` has been starting, for its startup timeout and its replica_ready message:
// its process's start, or, for an adopted replica whose process is older, its adoption (the
// time the new daemon began re-probing it, not the process's age).
Seconds StartingSince(const ReplicaEntry& r);
// The replica_ready message: "ready after 2.1 s on <where>", or for an adopted replica
// "ready again 0.2 s after adoption on <where> (process up 359 s)".
std::string ReadyMessage(const ReplicaEntry& r, Seconds now, std::string_view where);

class ReplicaBookBase {
 public:
  explicit ReplicaBookBase(ReplicaBookConfig config);

  const ReplicaBookConfig& config() const { return config_; }
  // Remembers `now` when it is the latest time seen so far.
  void Touch(Seconds now) { latest_ = std::max(latest_, now); }

  // "<service>-<n>" with the next unused n.
  std::string NextId();
  // Makes NextId() skip past `id`'s n (no effect when `id` is not "<service>-<n>").
  void ReserveId(const std::string& id);
  // Errors: kResourceExhausted naming max_replicas when `active` >= max_replicas > 0.
  Status CheckRoom(int active, int max_replicas) const;

  // The reported in-flight requests, or the drain grace assumption (see the rules above).
  int OutstandingOf(const ReplicaEntry& r) const;
  scale::ReplicaStatus StatusOf(const ReplicaEntry& r) const;
  // Moves `r` to `phase`; phase_since changes only when the phase does.
  static void SetPhase(ReplicaEntry& r, scale::ReplicaPhase phase, Seconds now);
  // Counts a failure of `r` (last_error = why) and sets restart_at after the backoff;
  // `r` reports `starting` meanwhile. Emits kReplicaRestartScheduled with
  // "<why>; <retry> in <delay> s (failure <n> in a row)" and returns the delay.
  Seconds ScheduleRestart(ReplicaEntry& r, Seconds now, const std::string& why,
                          std::string_view retry);

  // The API's view of `r` with the fields every adapter shares; port and uptime only while
  // `running`, state restarting while `backoff`. The adapter adds where it runs.
  ReplicaInfo InfoOf(const ReplicaEntry& r, Seconds now, bool running, bool backoff) const;
  // What the store persists of `r`; the adapter adds how it runs (pid, job id, ...).
  static ReplicaRecord RecordOf(const ReplicaEntry& r);
  // `r` as a previous daemon recorded it, marked adopted; phase and drain state stay at their
  // defaults for the adapter to decide.
  static void Restore(ReplicaEntry& r, const ReplicaRecord& record);

  // Queues an event ("" replica for engine-wide ones); TakeEvents hands them out oldest first.
  void Emit(Seconds now, const std::string& replica, events::EventKind kind, std::string message);
  std::vector<OrchestratorEvent> TakeEvents() { return std::exchange(events_, {}); }

 protected:
  static Unexpected<Error> UnknownReplica(const std::string& id);
  // kFailedPrecondition "replica '<id>' is <phase><refusal>" unless `r` is in `wanted`.
  static Status RequirePhase(const ReplicaEntry& r, scale::ReplicaPhase wanted,
                             std::string_view refusal);
  // The guards of Place, Drain and Resume on a replica that was found.
  static Status CheckPending(const ReplicaEntry& r);
  Status DrainEntry(ReplicaEntry& r, Seconds now);
  Status ResumeEntry(ReplicaEntry& r, Seconds now);

 private:
  ReplicaBookConfig config_;
  std::vector<OrchestratorEvent> events_;
  int next_index_ = 0;
  Seconds latest_{0};
};

// The records themselves, of the adapter's type R (derived from ReplicaEntry), creation order,
// stopping ones included. Pointers and references to records stay valid until the next Add
// or removal.
template <typename R>
class ReplicaBook : public ReplicaBookBase {
  static_assert(std::is_base_of_v<ReplicaEntry, R>, "records derive from ReplicaEntry");

 public:
  using ReplicaBookBase::ReplicaBookBase;

  // The replica commands can reach (not stopping); nullptr when unknown.
  R* Find(const std::string& id) {
    for (R& r : records_) {
      if (r.id == id && !r.stopping) return &r;
    }
    return nullptr;
  }
  // Any replica, stopping ones included (an engine's late answer about it); nullptr when gone.
  R* FindAny(const std::string& id) {
    for (R& r : records_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }
  // As Find. Errors: kNotFound naming the id.
  Result<R*> Get(const std::string& id) {
    R* r = Find(id);
    if (r == nullptr) return UnknownReplica(id);
    return r;
  }
  // The replica Place may act on. Errors: kNotFound; kFailedPrecondition unless pending.
  Result<R*> GetPending(const std::string& id, Seconds now) {
    Touch(now);
    GS_ASSIGN_OR_RETURN(R* r, Get(id));
    GS_RETURN_IF_ERROR(CheckPending(*r));
    return r;
  }
  // ready -> draining. Errors: kNotFound; kFailedPrecondition unless ready.
  Status Drain(const std::string& id, Seconds now) {
    Touch(now);
    GS_ASSIGN_OR_RETURN(R* r, Get(id));
    return DrainEntry(*r, now);
  }
  // draining -> ready. Errors: kNotFound; kFailedPrecondition unless draining.
  Status Resume(const std::string& id, Seconds now) {
    Touch(now);
    GS_ASSIGN_OR_RETURN(R* r, Get(id));
    return ResumeEntry(*r, now);
  }
  // Marks the replica stopping and returns it; the adapter then stops what runs it.
  // Errors: kNotFound (unknown or already stopping).
  Result<R*> BeginStop(const std::string& id, Seconds now) {
    Touch(now);
    GS_ASSIGN_OR_RETURN(R* r, Get(id));
    r->stopping = true;
    return r;
  }
  // Errors: kNotFound. A negative count is taken as 0.
  Status ReportOutstanding(const std::string& id, int outstanding) {
    GS_ASSIGN_OR_RETURN(R* r, Get(id));
    r->outstanding = std::max(0, outstanding);
    return OkStatus();
  }

  R& Add(R r) { return records_.emplace_back(std::move(r)); }
  void Remove(const R& r) {
    std::erase_if(records_, [&](const R& x) { return &x == &r; });
  }
  // Calls keep(record) for each record in order and removes those it returns false for.
  // REQUIRES: keep adds or removes no record.
  template <typename Keep>
  void RetainIf(Keep keep) {
    for (auto it = records_.begin(); it != records_.end();) {
      it = keep(*it) ? std::next(it) : records_.erase(it);
    }
  }

  std::span<R> records() { return records_; }
  std::span<const R> records() const { return records_; }
  // How many records satisfy `pred`; whether any does.
  template <typename Pred>
  int Count(Pred pred) const {
    return static_cast<int>(std::count_if(records_.begin(), records_.end(), pred));
  }
  template <typename Pred>
  bool Any(Pred pred) const {
    return std::any_of(records_.begin(), records_.end(), pred);
  }
  // Replicas not stopping.
  int ActiveCount() const {
    return Count([](const R& r) { return !r.stopping; });
  }
  std::vector<scale::ReplicaStatus> ListReplicas() const {
    std::vector<scale::ReplicaStatus> out;
    for (const R& r : records_) {
      if (!r.stopping) out.push_back(StatusOf(r));
    }
    return out;
  }

 private:
  std::vector<R> records_;
};

}  // namespace gpuscale::orch
