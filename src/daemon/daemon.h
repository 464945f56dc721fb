// Daemon: `gpuscale serve`'s core. It owns the GPU backend and monitor, the lease ledger, the
// state store (<state_dir>/gpuscale.db) and one orchestrator (local processes or Slurm jobs,
// by the service's engine) + ServiceRuntime per service, runs the control loop, and answers
// the REST API (DaemonApi).
//
// Open(): services = the config's (upserted into the store; the config wins for a name in
// both) + those created earlier through the API (from the store), each with the manual
// override stored for it. Each service's orchestrator then Adopt()s the replica rows
// persisted for it; rows of services that no longer exist are adopted by a temporary
// orchestrator of the removed service's engine (from its row, kept marked deleting until the
// replicas are gone) and stopped: Slurm jobs are cancelled through Slurm. The lease ledger
// ends up holding exactly the re-acquired leases, and the store's lease table is rewritten
// to match (stale leases dropped). Adoption outcomes become events.
//
// One Tick(): converge the running services on the desired ones (below); per service, orchestrator
// Poll; scrape every ready or draining replica and run the policies' PromQL queries (all services
// in parallel, metric_collector.h; a scrape or query left at the `scrape:` cutoff goes on into the
// next tick, replica_scrapes.h); ServiceRuntime::Tick (metrics -> policy or manual override ->
// reconcile); persist replicas and leases when they changed, the decision when the desired,
// current or ready count or the actions changed, or DaemonOptions::decision_heartbeat after
// the last one (state grows with events, not with time: an idle service writes 288 rows a
// day at any loop interval, 1,000 of them ~3.5 MB an hour), and events:
// orchestrator events, desired-count changes, failed actions, metric errors when they change.
// A failing store write is logged and counted (gpuscale_store_errors_total); the loop goes on.
//
// API changes (create/update/delete service, rules, manual override) and reloads are
// validated and persisted at once, shown by the API at once, and recorded as the service's
// desired state. Every tick compares the desired services with the running ones and
// converges (level-triggered, as a Kubernetes controller): a service wanted but not running
// is created, one with an older spec rebuilt (its replicas adopted), one no longer wanted
// deleted; changed rules and manual overrides are applied. What cannot be applied (the
// engine cannot be set up: an unreadable Slurm token file, say) is tried again on a later
// tick with backoff -- one loop interval, doubling to DaemonOptions::apply_retry_max -- and
// shown meanwhile in the service's view (`apply_failure`) and as a service_error event when
// the error first shows or changes. A deleted service's row stays (marked deleting) until its
// replicas are gone; a re-created one starts once they are.
//
// Replica views: a cluster engine's replica whose job has no node yet (port 0) shows an
// empty host, not the loopback default the orchestrator reports.
//
// Pieces it holds and delegates to, one concern each: ServiceSlot (one running service),
// ServiceFactory (a spec's engine and runtimes), Reconciler (desired against running, with
// retries), TickCollector (a tick's scrapes and queries), TaskService (tasks and
// experiments), plus the store's EventLog, StateWriter, StoreHealth and HistoryRetention. Its
// own members live in daemon_open.cc (Open, adoption), daemon_loop.cc (the loop, Tick,
// Shutdown) and daemon.cc (the DaemonApi requests, Reload).
//
// Ownership: owns everything above; replica processes outlive the Daemon unless
// Shutdown(true) stopped them (so that a restarted daemon adopts them).
// Thread-safety: DaemonApi methods may be called from any thread, concurrently with the loop.
// loop_mu_ serializes ticks and shutdown and guards services_/retiring_/reconciler_
// (orchestrators are single-threaded); mu_ guards the API-visible snapshots, the desired
// services and counters. Lock order: loop_mu_ before mu_.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "daemon/daemon_metrics.h"
#include "daemon/memory_trim.h"
#include "daemon/reconciler.h"
#include "daemon/reload_report.h"
#include "daemon/service_factory.h"
#include "daemon/service_history.h"
#include "daemon/service_metric_view.h"
#include "daemon/service_runtime.h"
#include "daemon/service_slot.h"
#include "daemon/state_dir_lock.h"
#include "daemon/task_service.h"
#include "daemon/tick_collector.h"
#include "daemon_api/daemon_api.h"
#include "experiments/task_manager.h"
#include "gateway/gateway_state.h"
#include "gpumon/monitor.h"
#include "gpumon/simulated_load.h"
#include "orch/serial_calls.h"
#include "scale/tick_interval.h"
#include "serve_config/daemon_config.h"
#include "state/event_log.h"
#include "state/history_retention.h"
#include "state/state_writer.h"
#include "state/store_health.h"
#include "store/store.h"

namespace gpuscale::daemon {

struct DaemonOptions {
  Seconds scrape_timeout{2};      // per replica scrape
  size_t collector_threads = 16;  // concurrent scrapes/queries per tick
  Seconds decision_heartbeat{300};  // an unchanged decision is stored this often
  Seconds stop_grace{10};         // replica SIGTERM -> SIGKILL (scale-in and shutdown)
  Seconds probe_interval = scale::kDefaultProbeInterval;  // readiness probes of starting replicas
  Seconds health_interval{10};    // health probes of ready replicas; 0 = none
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
  // The longest wait before the loop tries again to apply a service's spec or rules that it
  // could not apply (the first wait is one loop interval, doubling up to this).
  Seconds apply_retry_max{60};
  // The state database's size cap in bytes (store::OpenOptions::max_bytes): a write past it
  // fails as on a full disk. 0 = none (the disk's own); tests fill a "disk" with it.
  int64_t store_max_bytes = 0;
  // Where operational messages go (store errors, shutdown); default: stderr.
  std::function<void(std::string_view)> log;
  // The gateway in front of the replicas (null: none). After every tick the daemon publishes
  // each service's models and ready replicas to it; a drain finishes when both the gateway's
  // exact in-flight count and the replica's scraped one are 0; requests waiting in its
  // activator queue wake the loop at once and hold a service at zero at one replica.
  std::shared_ptr<gateway::GatewayState> gateway;
  // Where engines with a remote controller (Slurm, a fleet) make their calls: on a thread of
  // each service's own, so a slow controller never holds the tick (orch/serial_calls.h), or
  // inline in the tick, for tests that step a fake clock and expect each tick's calls done.
  orch::SerialCalls::Mode engine_calls = orch::SerialCalls::Mode::kThread;
};

class Daemon final : public DaemonApi {
 public:
  // Builds everything and adopts persisted replicas (see the header comment); starts the GPU
  // sampler but not the loop. Errors: the GPU backend's (kUnavailable "no GPU found ..."),
  // the store's (kUnavailable naming the database path), kInvalidArgument naming
  // services[i].<field> for a config service whose policy or command is invalid.
  static Result<std::unique_ptr<Daemon>> Open(DaemonConfig config, Clock& clock,
                                              DaemonOptions options = {});
  // Stops the loop (not the replicas: see Shutdown).
  ~Daemon() override;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Starts the loop thread: Tick(), then wait loop_interval (interruptible). No-op when
  // running.
  void Run() GS_EXCLUDES(mu_);
  // Stops the loop thread; then, when `stop_replicas`, stops every replica and waits (about
  // stop_grace at most, escalating to SIGKILL) until their processes are gone; otherwise
  // leaves them running for a later adoption. Idempotent.
  void Shutdown(bool stop_replicas) GS_EXCLUDES(loop_mu_, mu_);
  // One control tick at clock.Now() (the loop calls it; tests call it directly).
  void Tick() GS_EXCLUDES(loop_mu_);
  // Ends the loop's current wait: the next tick starts now (the gateway's activator calls it
  // when a request waits for a service with no ready replica). Any thread.
  void Wake() GS_EXCLUDES(mu_);
  // `gpuscale serve` on SIGCHLD: wakes the loop when a replica process exited, so that its
  // crash is handled now (orch::WatchExit); other children's exits (nvidia-smi, squeue) do
  // not wake it. Any thread.
  void OnChildExited() GS_EXCLUDES(mu_);

  // `gpuscale serve` on SIGHUP: applies the config file read again (`reread`, or why it could
  // not be read: then nothing changes). Its services: new names are created, changed specs
  // updated as by PUT /v1/services/{name} (a manual override within the new bounds stays),
  // identical ones left alone; an invalid one is reported and left as it was while the rest
  // apply. Services the file no longer names keep running, as after a restart with this file
  // (the store keeps them); DELETE /v1/services/{name} removes one. `prometheus` (the server
  // PromQL metrics are read from), `scrape` (the collect cutoff and staleness), `tasks` (the
  // experiment scheduler's re-check interval, backfill threshold and stop grace) and
  // `loop_interval_seconds` apply live, before the
  // services (listed in applied_live); the other sections (gpu, api, state_dir) take effect at
  // the next start and are listed in needs_restart. Records a config_reloaded event
  // (config_reload_failed when the file could not be read). Changes apply on the next tick,
  // like API changes; a new loop interval from the wait after the current one.
  ReloadReport Reload(const Result<DaemonConfig>& reread);

  // DaemonApi (daemon_api/daemon_api.h).
  Result<gpu::GpuSnapshot> Gpus() override;
  gpu::ScoreWeights ScoreWeights() const override;
  std::vector<gpu::HistoryPoint> GpuHistory(Seconds window) override;
  std::vector<ServiceView> ListServices() override;
  std::shared_ptr<const std::vector<ServiceView>> ServicesSnapshot() override;
  Result<ServiceView> GetService(const std::string& name) override;
  Result<ServiceView> CreateService(const ServiceConfig& config) override;
  Result<ServiceView> UpdateService(const ServiceConfig& config) override;
  Status DeleteService(const std::string& name) override;
  Result<std::vector<RuleView>> ListRules(const std::string& service) override;
  Result<RuleView> AddRule(const std::string& service, const RuleView& rule) override;
  Status DeleteRule(const std::string& service, int64_t rule_id) override;
  Result<ServiceView> SetDesiredReplicas(const std::string& service,
                                         std::optional<int> replicas) override;
  Result<std::vector<ReplicaView>> ListReplicas(const std::string& service) override;
  Result<PreemptNotice> PreemptReplica(const std::string& replica,
                                       std::optional<Seconds> notice) override;
  Result<HistorySeries> History(const std::string& service, std::optional<Seconds> from,
                                std::optional<Seconds> to, Seconds step) override;
  std::vector<alloc::Lease> Leases() override;
  Result<std::vector<EventView>> Events(const EventQuery& query) override;
  int64_t WaitForEvents(int64_t after_id, Seconds timeout) override;
  Result<task::TaskRecord> SubmitTask(task::TaskDefinition definition,
                                      std::string source_text) override;
  std::vector<task::TaskRecord> ListTasks() override;
  Result<task::TaskRecord> GetTask(int64_t id) override;
  Result<task::TaskRecord> CancelTask(int64_t id) override;
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id) override;
  Result<task::ExperimentRecord> GetExperiment(int64_t id) override;
  std::string MetricsText() override;
  Status Ready() override;

 private:
  Daemon(DaemonConfig config, Clock& clock, DaemonOptions options);

  // Open (daemon_open.cc)
  Status OpenState() GS_REQUIRES(loop_mu_);
  Result<std::vector<ServiceConfig>> LoadServices(Seconds now);
  void RestoreManual(ServiceSlot& slot, Seconds now, std::vector<store::EventRow>& events);
  // Errors: kFailedPrecondition when the replicas table cannot be read and a replica process
  // marked for this state directory cannot be identified (ReplicaRowsFromProcesses).
  Status AdoptAll(Seconds now) GS_REQUIRES(loop_mu_);
  size_t StaleLeaseCount();
  void AdoptOrphans(const std::vector<store::ReplicaRow>& rows, Seconds now) GS_REQUIRES(loop_mu_);
  ServiceConfig OrphanConfig(const std::string& service);
  void DropEngineRecords(const std::string& service, std::vector<orch::ReplicaRecord>& records,
                         Seconds now, std::vector<store::EventRow>& events);
  void FinishDeletedServices(const std::set<std::string>& with_replicas) GS_REQUIRES(loop_mu_);
  // The TaskService, after adoption (its experiments' leases were not re-acquired, so a
  // restarted daemon reconciles them without leaks).
  Status OpenTasks();
  void ShutdownTasks() GS_EXCLUDES(loop_mu_);

  // Reload (daemon.cc): applies the re-read prometheus, tasks and loop_interval sections;
  // returns their names where they changed.
  std::vector<std::string> ApplyLiveSections(const DaemonConfig& reread) GS_EXCLUDES(loop_mu_, mu_);

  // Tick (daemon_loop.cc)
  // The running services converged on desired_ (Reconciler).
  void Reconcile(Seconds now, std::vector<store::EventRow>& events) GS_REQUIRES(loop_mu_);
  std::vector<WantedService> Wanted(Seconds& retry_initial) GS_REQUIRES(loop_mu_) GS_EXCLUDES(mu_);
  // A view for a desired service its slot does not show yet: the API's, with the failure.
  void ShowUnapplied(std::map<std::string, ServiceView>& views) GS_REQUIRES(loop_mu_, mu_);
  TickObservations Collect(Seconds now) GS_REQUIRES(loop_mu_);
  void TickService(ServiceSlot& slot, Seconds now, TickObservations& observed,
                   const gpu::GpuSnapshot* gpus, std::vector<store::EventRow>& events);
  void TickEvents(ServiceSlot& slot, const ServiceTickResult& result, Seconds now,
                  std::vector<store::EventRow>& events);
  void PollRetiring(Seconds now, std::vector<store::EventRow>& events) GS_REQUIRES(loop_mu_);
  // The spot notices the API queued (pending_preempts_), applied at the tick's start.
  void ApplyPreempts(Seconds now, std::vector<store::EventRow>& events) GS_REQUIRES(loop_mu_);
  // State to the store through state_ (StateWriter: only what changed is written).
  void PersistReplicas(const std::string& service, const orch::ServiceOrchestrator& orch);
  void PersistLeases();
  // The `retention:` section's trimming of decisions and events (HistoryRetention).
  void TrimHistory(Seconds now) GS_REQUIRES(loop_mu_);
  void PersistDecision(const ServiceSlot& slot, const ServiceTickResult& result, Seconds now);
  void RecordHistory(const std::string& service, const ServiceTickResult& result, Seconds now);
  // Appends to the event log (events_), for calls with a temporary list (the reload report,
  // the TaskManager's publisher). Any thread.
  void PublishEvents(std::vector<store::EventRow> events);
  void PublishViews(Seconds now) GS_REQUIRES(loop_mu_);
  std::vector<ServiceView> ListOfViews() const GS_REQUIRES(mu_);  // views_, by name
  // The route table for the gateway (options_.gateway), from this tick's replicas.
  void PublishRoutes(Seconds now) GS_REQUIRES(loop_mu_);
  void PrepareProbes(Seconds now) GS_REQUIRES(loop_mu_);
  void Log(std::string_view message);
  // An API request's write, passed through: one that failed because the store cannot be
  // written (kUnavailable: a full disk, an I/O error) makes /readyz answer 503 at once; a
  // later API write that succeeds, or a probe on a tick (ProbeStore), clears it.
  Status ApiWrite(std::string_view what, Status written);
  // One probe write while a failing kind of write waits for one (StoreHealth::AwaitsProbe),
  // so readiness returns on the first tick after the disk is freed.
  void ProbeStore();
  void LoopMain() GS_EXCLUDES(loop_mu_, mu_);
  // The loop's interval now: loop_interval, or 1 s while requests wait at the gateway, or
  // probe_interval while a replica settles (whichever is shortest).
  Seconds LoopInterval() GS_EXCLUDES(mu_);

  DaemonConfig config_;
  Clock& clock_;
  DaemonOptions options_;

  std::unique_ptr<gpu::GpuBackend> backend_;
  // The simulated backend's load board (emulated replicas' gauges, posted every tick); null
  // on real GPUs.
  std::shared_ptr<gpu::GpuLoadBoard> gpu_load_;
  // Every tick's replica scrapes and PromQL queries; a scrape or query may outlast its tick
  // (the loop thread only, under loop_mu_).
  TickCollector collector_{options_.collector_threads, options_.scrape_timeout};
  std::unique_ptr<gpu::Monitor> monitor_;
  alloc::LeaseLedger ledger_;
  // Builds each service's engine and runtimes (set by Open; used under loop_mu_). Declared
  // before the slots: it owns the Slurm clusters their transports share.
  std::unique_ptr<ServiceFactory> factory_;
  // Some replica is starting, restarting, draining or stopping (set by PublishViews): the
  // loop then ticks at probe_interval.
  std::atomic<bool> settling_{false};
  std::unique_ptr<StateDirLock> state_lock_;  // held from Open to destruction
  std::unique_ptr<store::Store> store_;
  // Failing store writes, shown by /readyz (thread-safe; outlives the two below).
  state::StoreHealth store_health_{[this](std::string_view message) { Log(message); }};
  // The event log and the state writer, over store_ (each thread-safe, with its own lock).
  std::unique_ptr<state::EventLog> events_;
  std::unique_ptr<state::StateWriter> state_;
  // Each service's recent ticks for charts (thread-safe: the loop records, the API reads).
  HistoryBook history_;
  // Tasks/experiments (opened by Open); destroyed before the store and ledger it borrows.
  TaskService tasks_;

  // The loop's own state: held by Tick, Shutdown, Open and the reload of live sections, so
  // orchestrators are touched by one thread at a time. Taken before mu_, never after it.
  Mutex loop_mu_;
  ServiceSlots services_ GS_GUARDED_BY(loop_mu_);
  // Deleted services and orphans whose replicas are still stopping.
  RetiringSlots retiring_ GS_GUARDED_BY(loop_mu_);
  int64_t tick_count_ GS_GUARDED_BY(loop_mu_) = 0;
  // Converges services_ on desired_ every tick, retrying what it could not apply (set by
  // Open).
  std::unique_ptr<Reconciler> reconciler_ GS_GUARDED_BY(loop_mu_);
  // Trims decisions and events by the config's `retention:` (over store_; set by Open).
  std::unique_ptr<state::HistoryRetention> retention_ GS_GUARDED_BY(loop_mu_);
  MemoryTrim memory_trim_ GS_GUARDED_BY(loop_mu_);

  // What API threads read and queue: held briefly, never across I/O.
  mutable Mutex mu_;
  std::map<std::string, ServiceView> views_ GS_GUARDED_BY(mu_);  // API-visible services
  // views_ as a list, built on the first ServicesSnapshot after views_ changed (null: not
  // yet); every change of views_ resets it (ViewsChanged).
  std::shared_ptr<const std::vector<ServiceView>> views_list_ GS_GUARDED_BY(mu_);
  // Last tick's replicas.
  std::map<std::string, std::vector<orch::ReplicaInfo>> replicas_ GS_GUARDED_BY(mu_);
  // What the API and reloads asked for, by name (Reconcile converges on it every tick).
  std::map<std::string, DesiredService> desired_ GS_GUARDED_BY(mu_);
  uint64_t generation_ GS_GUARDED_BY(mu_) = 0;  // the last desired generation given out
  // Spot notices (PreemptReplica) for the next tick, in arrival order.
  std::vector<PreemptNotice> pending_preempts_ GS_GUARDED_BY(mu_);
  // Removed services whose replicas this daemon could not stop (AdoptOrphans: their engine
  // could not be set up), by name -> why. Their names stay taken until a restart stops them:
  // a new service of that name would overwrite the rows that still track the old replicas.
  std::map<std::string, std::string> unstoppable_ GS_GUARDED_BY(mu_);
  DaemonMetrics metrics_ GS_GUARDED_BY(mu_);
  bool first_tick_done_ GS_GUARDED_BY(mu_) = false;
  bool stop_ GS_GUARDED_BY(mu_) = false;
  bool shut_down_ GS_GUARDED_BY(mu_) = false;
  bool wake_ GS_GUARDED_BY(mu_) = false;  // Wake() was called
  CondVar loop_cv_;                       // wakes the loop's wait on stop_ or wake_
  std::thread loop_;
};

}  // namespace gpuscale::daemon
