// DaemonApi: everything the REST API (api/) may ask of the running daemon, as one narrow
// interface, so the HTTP layer holds no business logic and can be tested with a fake.
// Implemented by daemon::Daemon. An interface-only module: api/ and k8s/ link this, not the
// daemon, and the views are plain values of their own (daemon_api/record_views.h).
//
// Error codes map to HTTP statuses in api/ (one each): kInvalidArgument -> 400 (Error::field
// names the offending field), kNotFound -> 404, kFailedPrecondition -> 409 (e.g. a service
// that already exists), kResourceExhausted -> 409, kUnavailable -> 503, others -> 500.
//
// Thread-safety: every method may be called from any HTTP worker thread concurrently with
// the control loop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "core/result.h"
#include "daemon_api/gateway_figures.h"
#include "daemon_api/history_series.h"
#include "daemon_api/record_views.h"
#include "gpu/availability_score.h"
#include "gpu/gpu_info.h"
#include "gpu/gpu_stats.h"
#include "serve_config/daemon_config.h"
#include "task/task_types.h"

namespace gpuscale::daemon {

// A service as the API shows it.
// One pool of a disaggregated service (ServiceView::pools).
struct PoolView {
  std::string role;  // "prefill", "decode"
  std::string policy_family;
  int min_replicas = 0, max_replicas = 0, gpus_per_replica = 0;
  int desired_replicas = 0;
  int replicas = 0, ready_replicas = 0, pending_replicas = 0, draining_replicas = 0;
  int gpus_held = 0;        // of the service's GPU budget
  std::string last_reason;  // the pool policy's last decision
};

// Why the daemon has not applied a service's spec (or rules, or manual override) yet; the
// control loop tries again at next_retry_at (daemon.h: one loop interval after the first
// failure, doubling up to a minute).
struct ApplyFailure {
  std::string message;  // e.g. "spec not applied: slurm.token_file: cannot read token file ..."
  int attempts = 0;     // failed so far
  Seconds next_retry_at{0};
};

struct ServiceView {
  ServiceConfig config;
  std::string spec_yaml;               // ServiceConfigToYaml(config)
  std::string policy_family;           // "target", "rules", ...
  int desired_replicas = 0;            // what the last tick aimed at (after override/clamp)
  std::optional<int> manual_replicas;  // PUT /replicas override; nullopt = policy decides
  int replicas = 0;                    // pending + starting + ready (not draining)
  int ready_replicas = 0;
  int pending_replicas = 0;
  int draining_replicas = 0;
  std::string last_reason;  // the last Decision's reason ("" before the first tick)
  std::vector<std::string> last_details;
  std::optional<Seconds> last_decision_at;
  std::vector<std::string> metric_errors;  // from the last tick's collection
  // Why the service's replicas cannot start, while none is ready (e.g. "cannot start 'vllm':
  // No such file or directory ..."); "" otherwise (daemon/start_failure.h).
  std::string failure;
  // The spec shown is not applied yet (nullopt: it is).
  std::optional<ApplyFailure> apply_failure;
  // What the gateway measured for this service at the last tick (nullopt: no gateway, or no
  // request of the service reached it yet).
  std::optional<GatewayFigures> gateway;
  Seconds created_at{0};
  // A disaggregated service: its prefill and decode pools (the counts above are their sums)
  // and the GPU budget they share. Empty / 0 otherwise.
  std::vector<PoolView> pools = {};
  int gpu_budget = 0;
  int gpus_held = 0;
};

// A spot notice as the daemon took it (DaemonApi::PreemptReplica).
struct PreemptNotice {
  std::string service;
  std::string replica;
  Seconds notice{0};
};

class DaemonApi {
 public:
  virtual ~DaemonApi() = default;

  // GPUs through the daemon's monitor (cached). Errors: the backend's.
  virtual Result<gpu::GpuSnapshot> Gpus() = 0;
  // Availability score weights the daemon ranks GPUs with (for the API's `score` field).
  virtual gpu::ScoreWeights ScoreWeights() const = 0;
  // Sampler history points taken within the last `window` seconds, oldest first.
  virtual std::vector<gpu::HistoryPoint> GpuHistory(Seconds window) = 0;

  virtual std::vector<ServiceView> ListServices() = 0;  // by name
  // ListServices as one shared, immutable list: readers of every service (GET /v1/services)
  // serialize it without copying 1,000 views or holding the daemon's lock. The daemon builds
  // it at most once per change of its views (in practice once per tick); this default copies.
  virtual std::shared_ptr<const std::vector<ServiceView>> ServicesSnapshot() {
    return std::make_shared<const std::vector<ServiceView>>(ListServices());
  }
  virtual Result<ServiceView> GetService(const std::string& name) = 0;
  // Errors: kInvalidArgument (bad name/fields), kFailedPrecondition when the name exists.
  virtual Result<ServiceView> CreateService(const ServiceConfig& config) = 0;
  // Replaces the spec of an existing service (name from config.name); replicas started
  // with the old command keep running until scaled in. Errors: kNotFound, kInvalidArgument.
  virtual Result<ServiceView> UpdateService(const ServiceConfig& config) = 0;
  // Stops the service's replicas (drain skipped), releases their GPUs, forgets the service.
  virtual Status DeleteService(const std::string& name) = 0;

  // Rules of a `rules`-policy service stored in SQLite (Backend.AI's rule API).
  virtual Result<std::vector<RuleView>> ListRules(const std::string& service) = 0;
  // Validates (comparator, source, step_size != 0, min <= max ...) and stores; the
  // service's rules policy is rebuilt on the next tick. Errors: kNotFound (service),
  // kInvalidArgument naming the field, kFailedPrecondition when the service's policy is
  // not `rules` from the store (its policy is in its spec).
  virtual Result<RuleView> AddRule(const std::string& service, const RuleView& rule) = 0;
  virtual Status DeleteRule(const std::string& service, int64_t rule_id) = 0;

  // Manual override of the desired count (clamped to [min, max] is NOT applied: a value
  // outside gets kInvalidArgument naming "replicas"); nullopt returns control to the policy.
  virtual Result<ServiceView> SetDesiredReplicas(const std::string& service,
                                                 std::optional<int> replicas) = 0;
  virtual Result<std::vector<ReplicaView>> ListReplicas(const std::string& service) = 0;
  // A cloud's spot notice for replica `replica` (POST /v1/replicas/{id}/preempt): it takes no
  // new requests, is stopped by now + notice at the latest (its GPUs freed), and a
  // replacement starts on the cheapest variant with free GPUs (orch/variant_orchestrator.h).
  // Applied by the next tick, which this wakes. `notice` unset: its variant's
  // preemption_notice_seconds. Errors: kNotFound (no such replica in any service's last
  // view), kFailedPrecondition (its service lists no variants), kInvalidArgument naming
  // notice_seconds (negative or over a day).
  virtual Result<PreemptNotice> PreemptReplica(const std::string& replica,
                                               std::optional<Seconds> notice) = 0;
  // The service's ticks over [from, to) at `step` (daemon/service_history.h; defaults: to =
  // now, from = to - 1 h, step 0 = the daemon picks). Errors: kNotFound for an unknown service;
  // kInvalidArgument naming "from" or "step".
  virtual Result<HistorySeries> History(const std::string& service, std::optional<Seconds> from,
                                        std::optional<Seconds> to, Seconds step) = 0;

  virtual std::vector<alloc::Lease> Leases() = 0;

  // Stored events (decisions, replica lifecycle, adoption...). Errors: store's.
  virtual Result<std::vector<EventView>> Events(const EventQuery& query) = 0;
  // Blocks until an event with id > after_id exists or `timeout` passes (SSE). Returns the
  // newest event id (== after_id on timeout).
  virtual int64_t WaitForEvents(int64_t after_id, Seconds timeout) = 0;

  // Tasks and experiments (experiments/task_manager.h has the semantics and errors).
  virtual Result<task::TaskRecord> SubmitTask(task::TaskDefinition definition,
                                              std::string source_text) = 0;
  virtual std::vector<task::TaskRecord> ListTasks() = 0;  // newest first
  virtual Result<task::TaskRecord> GetTask(int64_t id) = 0;
  virtual Result<task::TaskRecord> CancelTask(int64_t id) = 0;
  virtual Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id) = 0;
  virtual Result<task::ExperimentRecord> GetExperiment(int64_t id) = 0;

  // gpuscale's own metrics in Prometheus text format (HELP/TYPE): GPU gauges per GPU,
  // desired/ready replicas per service, decisions, scrape errors, loop duration.
  virtual std::string MetricsText() = 0;

  // Liveness is implied by answering; readiness = state loaded and first tick done.
  // Errors: kUnavailable with what is missing.
  virtual Status Ready() = 0;
};

}  // namespace gpuscale::daemon
