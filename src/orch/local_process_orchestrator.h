// LocalProcessOrchestrator: runs one service's replicas as processes on this machine
// (scale::ReplicaOrchestrator, the port the controller drives). In the terms of Scaler's
// worker adapters, a replica is a worker group of one process; Capacity() is the
// adapter's heartbeat, and commands answer with explicit statuses. Ids, command guards,
// drain accounting, restart backoff and events follow the rules in replica_book.h; this
// class adds the process part.
//
// Life of a replica:
//   Start/Place: lease gpus_per_replica GPUs from the shared alloc::LeaseLedger (owner
//     "replica/<id>", min free memory per GPU), or stay `pending` with the allocator's
//     reason; pick a free port; expand the command template (argv_template.h); exec it with
//     CUDA_VISIBLE_DEVICES set, the configured env, stdout/stderr appended to
//     <state_dir>/logs/<id>.log, in its own process group -> `starting`.
//   Poll(now): reaps exited processes (waitpid per pid, WNOHANG), probes starting replicas
//     (HTTP GET readiness_path == 200 -> `ready`; startup_timeout passed -> killed and
//     restarted), health-checks ready ones: a probe that fails takes the replica out of the
//     gateway's rotation (ReplicaInfo::serving) until one passes; health_failure_threshold
//     refused or non-200 probes in a row, or no answer for liveness_timeout, restart it;
//     restarts crashed ones after the backoff (its doubling resets once a
//     replica has run for stable_after), and escalates SIGTERM to SIGKILL after stop_grace.
//     A restarting replica keeps its GPUs, but one whose command could not be started at all
//     (spawn failed: no such file, not executable) releases them at once and leases again
//     when its backoff ends (ReplicaInfo::start_error says why; no GPUs then: `pending`).
//   Drain: see replica_book.h; a process that exits while draining counts as stopped.
//   Stop: SIGTERM to the process group, SIGKILL after stop_grace. Its GPUs are released when
//     its process has exited (the memory is only free then), so a new replica is never
//     placed on GPUs still in use.
//
// Adoption: the destructor does not stop processes, so a restarted daemon can Adopt() the
// replicas it persisted (Records()): a record whose pid is alive and whose
// /proc/<pid>/cmdline equals the recorded argv is adopted and its GPU leases re-acquired for
// the same owner; any other record is cleaned up (its owner's leases released; a pid that
// does not match is never signalled). Exit codes of adopted processes are unknown (they are
// not our children). StopAll() is the explicit shutdown.
//
// Time: every call takes `now` (the daemon's clock; tests pass a manual one). Processes and
// probes are real.
// Ownership: owns its replicas' bookkeeping; borrows the lease ledger (shared by every
// service's orchestrator; must outlive this object). Started processes outlive it by design.
// Thread-safety: not thread-safe; one control loop thread calls every method (as
// scale::ReplicaOrchestrator requires). Probes block for at most probe_timeout each.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "alloc/lease_ledger.h"
#include "alloc/pool_budget.h"
#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_info.h"
#include "orch/http_probe.h"
#include "orch/replica_book.h"
#include "orch/service_orchestrator.h"
#include "scale/policy.h"
#include "scale/replica_orchestrator.h"
#include "scale/tick_interval.h"

namespace gpuscale::orch {

struct LocalProcessConfig {
  std::string service;               // replicas are "<service>-<n>"; required
  std::vector<std::string> command;  // argv template: {port} {gpus} {replica}; required
  // Added to the daemon's environment; CUDA_VISIBLE_DEVICES is always the leased GPUs.
  std::vector<std::pair<std::string, std::string>> env;
  int gpus_per_replica = 1;          // 0 = CPU-only replica (CUDA_VISIBLE_DEVICES="")
  int64_t min_memory_free_mb = 0;    // per leased GPU, MiB; 0 = no memory filter
  std::string gpu_type;              // lease only GPUs of this type key; "" = any type
  int max_replicas = 0;              // Start refuses beyond this many; 0 = as GPUs allow
  std::string state_dir;             // logs go to <state_dir>/logs/<replica>.log; required
  std::string readiness_path = "/health";  // "" = ready as soon as the process runs
  int port_range_start = 0;          // 0 = a port the kernel picks
  int port_range_end = 0;            // inclusive; used when port_range_start > 0
  Seconds startup_timeout{900};      // starting longer than this -> killed and restarted
  Seconds probe_interval =
      scale::kDefaultProbeInterval;  // between readiness probes of a starting replica
  Seconds probe_timeout{1};          // per probe (connect, read)
  Seconds health_interval{10};       // between health probes of a ready replica; 0 = none
  int health_failure_threshold = 3;  // failed health probes in a row before a restart
  // A ready replica that stops answering its health probe (ProbeResult::kNoAnswer) leaves
  // the gateway's rotation at once (readiness) but is restarted only when it stays silent
  // this long (liveness): a replica that is merely busy must not be restarted.
  Seconds liveness_timeout{60};
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
  Seconds stable_after{300};         // running this long resets the backoff doubling
  Seconds stop_grace{30};            // SIGTERM -> SIGKILL
  Seconds drain_grace{30};           // see "Drain" in replica_book.h
  scale::CapabilitySet capabilities;  // reported by Capacity(), e.g. {"gpu"}
};

// Errors: kInvalidArgument naming the field (service, command[i], gpus_per_replica,
// state_dir, port_range_start/end, or a negative duration).
Status ValidateLocalProcessConfig(const LocalProcessConfig& config);

// Readiness/health probe of GET 127.0.0.1:<port><path> (http_probe.h).
using ReadinessProbe = std::function<ProbeResult(int port, const std::string& path)>;

class LocalProcessOrchestrator final : public ServiceOrchestrator {
 public:
  // `probe` defaults to HttpProbe with config.probe_timeout. Errors: those of
  // ValidateLocalProcessConfig; kUnavailable when the log directory cannot be created.
  static Result<std::unique_ptr<LocalProcessOrchestrator>> Create(LocalProcessConfig config,
                                                                  alloc::LeaseLedger& ledger,
                                                                  GpuSource gpus,
                                                                  ReadinessProbe probe = {});
  LocalProcessOrchestrator(const LocalProcessOrchestrator&) = delete;
  LocalProcessOrchestrator& operator=(const LocalProcessOrchestrator&) = delete;

  // scale::ReplicaOrchestrator. Start: kResourceExhausted when max_replicas exist; a
  // replica that gets no GPUs is returned `pending` (reason in ReplicaInfo::last_error).
  // Place: kResourceExhausted with the allocator's reason, kUnavailable when GPUs cannot be
  // read. Stop does not wait: see the header comment.
  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  void PrepareProbes(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override;
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  // Drives every replica's life (see the header comment); call it every control tick.
  void Poll(Seconds now) override;

  // Re-adopts persisted replicas. REQUIRES: called before any Start (no replicas yet).
  AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) override;

  // In-flight requests (running + waiting) of a replica, from the daemon's scrape.
  // Errors: kNotFound.
  Status ReportOutstanding(const std::string& id, int outstanding) override;
  bool HasProcesses() const override;

  // Every replica including stopping ones, creation order.
  std::vector<ReplicaInfo> Replicas(Seconds now) const override;
  // For the store: what Adopt() needs after a restart (stopping replicas included).
  std::vector<ReplicaRecord> Records() const override;
  // Events since the last call, oldest first.
  std::vector<OrchestratorEvent> TakeEvents() override;
  // The adapter's heartbeat: max replicas (config, else GPUs / gpus_per_replica, or 0 when
  // GPUs cannot be read), one process per replica, configured capabilities.
  scale::AdapterCapacity Capacity(Seconds now) const override;

  const LocalProcessConfig& config() const { return config_; }

  // Makes this orchestrator pool `pool` of `budget` (one pool of a disaggregated service,
  // alloc/pool_budget.h): a placement asks budget->Acquire(gpus_per_replica) before leasing
  // GPUs, and a refusal leaves the replica pending with the budget's reason (last_error, the
  // replica_pending event; Place answers kResourceExhausted, a state and no error); GPUs
  // released (a stop, an exit while draining) are given back, and adopted replicas' GPUs are
  // counted (PoolBudget::Restore). A crashed replica keeps its GPUs and its share while it
  // restarts. `budget` must outlive this object. REQUIRES: no replica yet.
  void SetPoolBudget(alloc::PoolBudget* budget, int pool);

 private:
  // kReaping: the leader exited but processes of its group live on (an engine's workers,
  // which may hold the GPUs): they are signalled as a stop would (SIGTERM, SIGKILL after the
  // grace) and the replica's GPUs stay leased until the group is gone.
  enum class Proc { kNone, kRunning, kBackoff, kTerminating, kReaping };
  // The process part of a replica; the rest is the book's (replica_book.h).
  struct Replica : ReplicaEntry {
    std::string owner;  // lease owner
    Proc proc = Proc::kNone;
    bool restart_after = false;  // kTerminating for a restart (timeout, unhealthy)
    bool kill_sent = false;
    int pid = 0;
    int exit_code = 0;  // kReaping: the leader's (DescribeExit)
    std::vector<int> gpus;
    std::vector<std::string> gpu_keys;
    int budget_gpus = 0;  // GPUs counted in the pool budget (SetPoolBudget) for this replica
    Seconds term_sent_at{0};
    int health_failures = 0;
    // Why its last launch failed (no process could be started); "" once one runs.
    std::string start_error;
  };

  LocalProcessOrchestrator(LocalProcessConfig config, alloc::LeaseLedger& ledger, GpuSource gpus,
                           ReadinessProbe probe);

  // Leases the replica's GPUs (after its pool budget's share): kResourceExhausted or
  // kUnavailable with the reason in r.last_error.
  Status LeaseGpus(Replica& r, Seconds now);
  Status TryPlace(Replica& r, Seconds now);
  // The pool budget's share for `r` (no-op without a budget or GPUs): kResourceExhausted
  // with the budget's reason in r.last_error.
  Status AcquireBudget(Replica& r);
  void ReleaseBudget(Replica& r);
  void ReleaseGpus(Replica& r);
  // lifecycle (local_process_lifecycle.cc)
  void Launch(Replica& r, Seconds now);
  // A launch that started no process: GPUs released, restart scheduled (start_error = why).
  void LaunchFailed(Replica& r, Seconds now, const std::string& why);
  // The end of a backoff: leases GPUs again when a failed launch gave them back (none free:
  // `pending`, for Place), then launches.
  void Relaunch(Replica& r, Seconds now);
  void ScheduleRestart(Replica& r, Seconds now, const std::string& why);
  void Terminate(Replica& r, Seconds now, bool restart_after);
  void OnExit(Replica& r, int code, Seconds now);  // sets r.proc; may mark r removable
  void BeginReaping(Replica& r, int code, Seconds now);  // the leader exited, its group lives
  // Probe results of this poll, by replica id (ProbeDueReplicas).
  using ProbeResults = std::map<std::string, ProbeResult>;
  bool PollOne(Replica& r, Seconds now, const ProbeResults& probed);  // false: remove r
  void PollRunning(Replica& r, Seconds now, const ProbeResults& probed);
  bool ProbeDue(const Replica& r, Seconds now) const;
  static constexpr size_t kProbeThreads = 32;
  // Probes every replica due for one at the same time (up to kProbeThreads at once), so that
  // hung replicas cost the tick about one probe timeout, not one each.
  ProbeResults ProbeDueReplicas(Seconds now);
  ProbeResult Probe(const Replica& r) const;
  std::set<int> PortsInUse() const;
  // adoption (local_process_adoption.cc)
  void AdoptOne(const ReplicaRecord& record, Seconds now, AdoptionReport& report);
  Replica AdoptedReplica(const ReplicaRecord& record, const std::string& owner, Seconds now);
  Status ReacquireLeases(const ReplicaRecord& record, Seconds now);

  LocalProcessConfig config_;
  alloc::LeaseLedger& ledger_;
  GpuSource gpu_source_;
  ReadinessProbe probe_;
  alloc::PoolBudget* budget_ = nullptr;  // SetPoolBudget; null: no budget
  int budget_pool_ = 0;
  ReplicaBook<Replica> book_;  // every replica, stopping ones included; the events
  // PrepareProbes' results for the Poll at the same `now`.
  std::optional<std::pair<Seconds, ProbeResults>> prepared_;
};

}  // namespace gpuscale::orch
