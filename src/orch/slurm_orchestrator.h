// SlurmOrchestrator: runs one service's replicas as Slurm batch jobs (ServiceOrchestrator,
// the port the daemon drives), through a SlurmTransport (slurmrestd or the CLI). Slurm
// decides where a replica runs and on which GPUs; gpuscale leases none itself. Ids, command
// guards, drain accounting, restart backoff and events follow the rules in replica_book.h;
// this class adds the job part.
//
// Life of a replica (one job each):
//   Start: pick a port from the configured range, unique among this service's replicas
//     (ports are per node, and Slurm may put several replicas on one node); build the job
//     script (slurm_job_script.h: {port}, {replica}; {gpus} = $SLURM_JOB_GPUS on the node);
//     submit it as job "gpuscale.<service>.<replica>" with comment
//     "gpuscale service=<service> replica=<replica>", --gres=gpu[:type]:N, the configured
//     partition / account / time limit / extra sbatch args, output to
//     <state_dir>/logs/<replica>.log -> `pending` (state "pending", reason in last_error).
//   Poll(now): one jobs listing and one nodes listing per call (see "Calls" below).
//     PENDING -> `pending` with Slurm's reason ("Resources", "Priority", ...); RUNNING ->
//     `starting` with host = the batch node's NodeAddr, until GET
//     http://<host>:<port><readiness_path> answers 200 -> `ready` (probed every probe_interval; no
//     answer within startup_timeout -> the job is cancelled and resubmitted). A job that ended (or
//     vanished) while its replica was wanted
//     -> `replica_crashed`, resubmitted after the backoff. Jobs carrying this service's
//     name prefix that belong to no replica (e.g. a submission whose answer was lost) are
//     cancelled, so a lost answer never leaves a duplicate running.
//   Drain: see replica_book.h; a job that ends while draining counts as stopped.
//   Stop: cancel the job (Slurm sends SIGTERM, then SIGKILL after its KillWait); the replica
//     stays in Records()/HasProcesses() until Slurm lists the job as ended. A cancel that
//     fails because Slurm is unreachable is retried every Poll.
//   Place: a pending replica's job waits in Slurm's queue; Place answers kResourceExhausted
//     with Slurm's reason (the scheduler, not gpuscale, decides when it runs).
//
// Controller outage: when a listing fails, Poll changes no replica (no stop, no submit, no
//   crash on missing data), emits "engine_unavailable" once with the error, and every
//   ReplicaInfo carries it in last_error; the first good listing emits "engine_recovered".
//   Start returns kUnavailable (no replica is created) while the last listing failed.
// Calls: every transport call (listings, sbatch, scancel) runs on the service's own
//   SerialCalls thread (serial_calls.h), so a slow or hung controller (up to the transport's
//   15 s timeout) delays only this service's view of Slurm, never the daemon's tick. Poll
//   posts a listing when none is in flight and applies the answers that arrived since the
//   last Poll, in the order the calls ran; Start creates the replica `pending` ("submitting")
//   at once and its job id arrives with the sbatch's answer (a failed submission: the
//   replica waits out the backoff and is submitted again). A listing is applied to a replica
//   only when it ran after the replica's sbatch answered: the calls run in posting order, so
//   a listing that ran earlier is applied while the replica is still submitting and skips it.
//   A replica stopped while its sbatch is in flight keeps that state until the answer comes,
//   then its job is cancelled. Cancels of strays and timed-out jobs are not repeated while
//   one is in flight.
// Adoption: a record whose job Slurm lists as still pending/running under this replica's
//   job name is adopted (no new job); others are dropped (reported cleaned up); stopping
//   records have their job cancelled again. When Slurm cannot be reached during Adopt,
//   records with a job id are adopted as they were and verified by the first good Poll.
//
// Time: every call takes `now` (the daemon's clock). Probes block for at most their
// timeout; Adopt lists synchronously (once, before the loop runs the service).
// Ownership: owns its transport and its replicas' bookkeeping; the jobs outlive it.
// Thread-safety: not thread-safe; one control loop thread calls every method.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "orch/replica_book.h"
#include "orch/serial_calls.h"
#include "orch/service_orchestrator.h"
#include "orch/slurm_transport.h"
#include "scale/tick_interval.h"

namespace gpuscale::orch {

struct SlurmOrchestratorConfig {
  std::string service;               // required; replicas are "<service>-<n>"
  std::vector<std::string> command;  // argv template: {port} {gpus} {replica}; required
  std::vector<std::pair<std::string, std::string>> env;  // exported by the job script
  int gpus_per_replica = 1;          // --gres=gpu[:type]:N; 0 = no GRES
  std::string gres_type;             // "" = any GPU type
  std::string partition;             // "" = the cluster's default
  std::string account;               // "" = the user's default
  int time_limit_minutes = 0;        // 0 = the partition's default
  std::vector<std::string> extra_sbatch_args;  // CLI transport only
  int max_replicas = 0;              // Start refuses beyond this many; 0 = no limit
  std::string state_dir;             // logs and job scripts under it; required; must be
                                     // visible at the same path on the compute nodes
  std::string readiness_path = "/health";  // "" = ready as soon as the job runs
  int port_range_start = 20000;      // replica ports, inclusive range; unique per service
  int port_range_end = 20999;
  Seconds startup_timeout{900};      // RUNNING but not ready this long -> resubmitted
  Seconds probe_interval = scale::kDefaultProbeInterval;
  Seconds probe_timeout{1};
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
  Seconds drain_grace{30};
  scale::CapabilitySet capabilities;
};

// Errors: kInvalidArgument naming the field.
Status ValidateSlurmOrchestratorConfig(const SlurmOrchestratorConfig& config);

// Readiness probe: true when GET http://<host>:<port><path> answered 200.
using SlurmProbe = std::function<bool(const std::string& host, int port, const std::string& path)>;

class SlurmOrchestrator final : public ServiceOrchestrator {
 public:
  // `probe` defaults to an HTTP GET with config.probe_timeout. Errors: those of
  // ValidateSlurmOrchestratorConfig; kUnavailable when the log directory cannot be created.
  // `calls`: kInline runs the transport calls inside Poll/Start/Stop (tests that step time).
  static Result<std::unique_ptr<SlurmOrchestrator>> Create(
      SlurmOrchestratorConfig config, std::unique_ptr<SlurmTransport> transport,
      SlurmProbe probe = {}, SerialCalls::Mode calls = SerialCalls::Mode::kThread);
  SlurmOrchestrator(const SlurmOrchestrator&) = delete;
  SlurmOrchestrator& operator=(const SlurmOrchestrator&) = delete;

  // scale::ReplicaOrchestrator. Start: kResourceExhausted at max_replicas or when no port
  // is free in the range; kUnavailable while the last listing failed; kInvalidArgument when
  // the job script cannot be built (no replica is created then).
  std::vector<scale::ReplicaStatus> ListReplicas() const override;
  // Its own records and the cluster's listings (shared, slurm_shared_listing.h).
  bool AdoptsConcurrently() const override { return true; }
  Result<scale::ReplicaStatus> Start(Seconds now) override;
  Status Place(const std::string& id, Seconds now) override;
  Status Drain(const std::string& id, Seconds now) override;
  Status Resume(const std::string& id, Seconds now) override;
  Status Stop(const std::string& id, Seconds now) override;

  void Poll(Seconds now) override;
  void PrepareProbes(Seconds now) override;
  AdoptionReport Adopt(const std::vector<ReplicaRecord>& records, Seconds now) override;
  Status ReportOutstanding(const std::string& id, int outstanding) override;
  bool HasProcesses() const override;  // any replica with a job Slurm may still run
  std::vector<ReplicaInfo> Replicas(Seconds now) const override;
  std::vector<ReplicaRecord> Records() const override;
  std::vector<OrchestratorEvent> TakeEvents() override;
  // Replicas that fit: this service's running replicas + per usable node (in the configured
  // partition) floor(free GPUs / gpus_per_replica), from the last nodes listing; capped by
  // max_replicas.
  scale::AdapterCapacity Capacity(Seconds now) const override;

  // The last transport error while Slurm is unreachable; "" when the last listing worked.
  const std::string& engine_error() const { return engine_error_; }
  // Blocks until the transport calls posted so far have run; their answers are applied by
  // the next Poll. For tests and tools.
  void WaitForCalls() { calls_.WaitIdle(); }
  const SlurmOrchestratorConfig& config() const { return config_; }

  // "gpuscale.<service>.<replica>": how gpuscale recognises its jobs.
  static std::string JobName(const std::string& service, const std::string& replica);

 private:
  // The job part of a replica; the rest is the book's (replica_book.h). started_at is when
  // Slurm was first seen running the job.
  struct Replica : ReplicaEntry {
    std::string job_id;           // "" while waiting to (re)submit or for the sbatch's answer
    bool submitting = false;      // an sbatch is posted and its answer not applied yet
    bool cancel_pending = false;  // Stop()ped but the cancel did not reach Slurm yet
    bool backoff = false;         // waiting until restart_at to resubmit
    bool running = false;         // Slurm says RUNNING
    std::string host;
    std::string node;
    Seconds submitted_at{0};
  };

  SlurmOrchestrator(SlurmOrchestratorConfig config, std::unique_ptr<SlurmTransport> transport,
                    SlurmProbe probe, SerialCalls::Mode calls);

  // A port of the range no other replica holds: the lowest, or for a replica that crashed on
  // `previous`, the next one after it (cyclically), so that a port something else holds on the
  // node is not retried forever; `previous` itself when it is the only one left.
  Result<int> PickPort(int previous = 0) const;
  // Posts `r`'s sbatch (its job script is built here) -> `pending`, submitting.
  Status Submit(Replica& r, Seconds now);
  void ApplySubmit(const std::string& id, Result<std::string> job_id, std::vector<std::string> argv,
                   Seconds now);
  // Posts scancel of `job_id`, listed in cancelling_ until its answer is applied (so none
  // is posted twice); `then` (may be empty) gets the answer on the loop thread: delivered =
  // Slurm took it or no longer knows the job.
  using CancelAnswer = std::function<void(bool delivered, const Status& status, Seconds at)>;
  void PostCancel(const std::string& job_id, CancelAnswer then);
  // Posts scancel of `r`'s job; an undelivered one leaves cancel_pending set.
  void PostStopCancel(Replica& r);
  // poll (slurm_orchestrator_poll.cc)
  struct Listing {
    Result<std::vector<SlurmJob>> jobs;
    Result<std::vector<SlurmNode>> nodes;
  };
  static Listing List(SlurmTransport& transport);  // both listings or the first error
  void PostListing();                              // unless one is in flight
  // Takes a listing's answer: false when Slurm is unreachable (nothing else changes then).
  bool Refresh(Listing listing, Seconds now);
  void ApplyListing(Listing listing, Seconds now);
  bool ApplyJob(Replica& r, const SlurmJob* job, Seconds now);  // false: remove r
  // What needs no listing: resubmits after a backoff, readiness probes.
  void Advance(Seconds now);
  void OnQueued(Replica& r, const SlurmJob& job, Seconds now);
  void OnRunning(Replica& r, const SlurmJob& job, Seconds now);
  void ProbeStarting(Replica& r, Seconds now);
  bool OnEnded(Replica& r, const std::string& why, Seconds now);
  void ScheduleResubmit(Replica& r, Seconds now, const std::string& why);
  void CancelStrays();
  std::string AddressOf(const std::string& node) const;
  const SlurmJob* JobById(const std::string& job_id) const;
  void AdoptOne(const ReplicaRecord& record, Seconds now, bool verified,
                AdoptionReport& report);
  void RestoreFromJob(Replica& r, const ReplicaRecord& record, const SlurmJob& job, Seconds now);

  SlurmOrchestratorConfig config_;
  // Shared with the calls in flight (serial_calls.h: a call owns what it uses).
  std::shared_ptr<SlurmTransport> transport_;
  SlurmProbe probe_;
  // PrepareProbes' readiness answers (replica id -> ready) for the Poll at the same `now`.
  std::optional<std::pair<Seconds, std::map<std::string, bool>>> prepared_;
  std::map<std::string, bool> probed_;  // this Poll's answers, from prepared_
  ReplicaBook<Replica> book_;      // every replica, stopping ones included; the events
  std::vector<SlurmJob> jobs_;     // last good listing
  std::vector<SlurmNode> nodes_;   // last good listing
  std::string engine_error_;
  std::set<std::string> strays_cancelled_;  // job ids, so each is cancelled and reported once
  std::set<std::string> cancelling_;        // job ids with an scancel in flight
  bool listing_ = false;                    // a listing is posted and not applied yet
  SerialCalls calls_;
};

}  // namespace gpuscale::orch
