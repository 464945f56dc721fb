// ServiceOrchestrator: what the daemon needs of an engine that runs one service's replicas
// -- local processes (LocalProcessOrchestrator), Slurm jobs (SlurmOrchestrator), ... -- on
// top of the controller's port (scale::ReplicaOrchestrator): polling, adoption after a
// daemon restart, in-flight reports for draining, shutdown, and views for the API and store.
//
// Ownership: the orchestrator owns its replicas' bookkeeping.
// Thread-safety: not thread-safe; the daemon's control loop thread calls every method.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "events/event_kind.h"
#include "gpu/gpu_info.h"
#include "orch/replica_state.h"
#include "scale/policy.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::orch {

// What the API shows about one replica.
struct ReplicaInfo {
  std::string id;
  scale::ReplicaPhase phase = scale::ReplicaPhase::kPending;
  // Finer than phase (orch/replica_state.h): restarting while it waits out a backoff,
  // stopping once SIGTERM was sent (no longer in ListReplicas).
  ReplicaState state = ReplicaState::kPending;
  Seconds phase_since{0};
  std::string host = "127.0.0.1";
  int port = 0;                       // 0 while no process runs
  std::vector<int> gpus;              // device indices (CUDA_VISIBLE_DEVICES)
  std::vector<std::string> gpu_keys;  // lease keys
  std::string lease_owner;
  int pid = 0;
  std::string log_path;
  int restarts = 0;
  Seconds started_at{0};  // of the current process
  Seconds uptime{0};      // now - started_at while a process runs
  int outstanding_requests = 0;
  bool adopted = false;
  // False while the replica's health probes fail (readiness): the gateway routes nothing
  // new to it although it stays `ready` until liveness gives up on it.
  bool serving = true;
  std::string last_error;  // pending reason, last crash, ...
  // Why the replica's last attempt to start a process failed (e.g. "cannot start 'vllm': No
  // such file or directory ..."); "" once a process runs, and for engines that do not say.
  std::string start_error;
  // A mixed fleet's replica (VariantOrchestrator): its variant's name and capacity relative
  // to the first variant's (the gateway's routing weight); "" and 1 otherwise.
  std::string variant = {};
  double capacity = 1;
  // Set while a spot notice drains it (VariantOrchestrator::Preempt): when it is stopped at
  // the latest.
  std::optional<Seconds> preempt_deadline = {};
};

// What the daemon persists per replica and hands back to Adopt() after a restart.
struct ReplicaRecord {
  std::string id;
  scale::ReplicaPhase phase = scale::ReplicaPhase::kPending;
  bool stopping = false;  // SIGTERM was sent; adoption finishes the stop
  Seconds phase_since{0};
  int pid = 0;
  int port = 0;
  std::vector<int> gpus;
  std::vector<std::string> gpu_keys;
  std::string lease_owner;
  std::vector<std::string> argv;  // expanded command line of the process
  std::string log_path;
  int restarts = 0;
  Seconds started_at{0};
  std::string host = "127.0.0.1";  // where it serves (a Slurm node's address)
  std::string engine_id;           // the engine's id (Slurm job id); "" for local processes
};

// Something the daemon should store as an event.
struct OrchestratorEvent {
  Seconds at{0};
  std::string replica;
  // A replica_* kind, or engine_unavailable / engine_recovered (replica "") from an engine
  // whose controller stopped or resumed answering.
  events::EventKind kind = events::EventKind::kReplicaStarted;
  std::string message;
};

struct AdoptionReport {
  std::vector<std::string> adopted;     // ids now managed again
  std::vector<std::string> cleaned_up;  // dead, mismatched or stopping: leases released
  // Of cleaned_up: "<id> (pid <pid>, <dir>)" for each record whose live process is marked for
  // another state directory <dir> (this database is a copy): never signalled.
  std::vector<std::string> other_state_dir;
  std::vector<std::string> errors;      // e.g. a lease now held by someone else
};

// Where GPU readings come from (the daemon passes its gpu::Monitor).
using GpuSource = std::function<Result<gpu::GpuSnapshot>(Seconds now)>;
class ServiceOrchestrator : public scale::ReplicaOrchestrator {
 public:
  // Drives every replica's life (process exits, readiness, engine state); call it every
  // control tick.
  virtual void Poll(Seconds now) = 0;
  // Runs the network probes the next Poll(now) needs and keeps their results for it, so
  // that the daemon can run every service's probes at the same time (one hung replica per
  // service then costs a tick one probe timeout, not one per service). Changes nothing but
  // the kept results; safe to run concurrently with other orchestrators' PrepareProbes.
  // Default: nothing (Poll probes by itself).
  virtual void PrepareProbes(Seconds /*now*/) {}
  // Re-adopts persisted replicas. REQUIRES: called before any Start (no replicas yet).
  virtual AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) = 0;
  // True when Adopt touches nothing another service's orchestrator does (its own records and
  // calls to its controller), so that the daemon may adopt such services at the same time:
  // a daemon with hundreds of Slurm services otherwise listed the cluster once per service,
  // one after another, before it served. Default false (local processes share the GPUs).
  virtual bool AdoptsConcurrently() const { return false; }
  // In-flight requests (running + waiting) of a replica, from the daemon's scrape.
  // Errors: kNotFound.
  virtual Status ReportOutstanding(const std::string& id, int outstanding) = 0;
  // Stops every replica (shutdown, a deleted service); Poll until !HasProcesses() to finish.
  // Default: Stop each listed replica, which every engine's book does the same way; a
  // composite (PooledOrchestrator) forwards to its parts.
  virtual void StopAll(Seconds now) {
    for (const scale::ReplicaStatus& status : ListReplicas()) {
      // Stop refuses only a replica unknown by now: nothing is left to stop of it.
      (void)Stop(status.id, now);
    }
  }
  virtual bool HasProcesses() const = 0;
  // Every replica including stopping ones, creation order.
  virtual std::vector<ReplicaInfo> Replicas(Seconds now) const = 0;
  // For the store: what Adopt() needs after a restart (stopping replicas included).
  virtual std::vector<ReplicaRecord> Records() const = 0;
  // Events since the last call, oldest first.
  virtual std::vector<OrchestratorEvent> TakeEvents() = 0;
  // The adapter's heartbeat, as in Scaler's worker adapters: how many replicas it can hold now.
  virtual scale::AdapterCapacity Capacity(Seconds now) const = 0;
};

}  // namespace gpuscale::orch
