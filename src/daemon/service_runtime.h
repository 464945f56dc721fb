// ServiceRuntime: one service's control step in the daemon, independent of how replicas run.
// It owns the service's policy (behind scale::OverridablePolicy: the manual override and the
// activator rule), the scale::Controller and the ServiceMetricView, and borrows a
// scale::ReplicaOrchestrator (local processes live, testing::FakeOrchestrator in tests and
// bench/control_loop_bench.cc).
//
// One Tick(now, observation):
//   1. every new exposition is Recorded into the metric view; the replica's in-flight
//      requests (vllm:num_requests_running + waiting) go to `report_outstanding` (the
//      orchestrator uses them to finish drains); a failed scrape, or a carried error (the
//      last failure, or staleness: replica_scrapes.h), is a metric error; a replica whose
//      scrape is still in flight keeps its previous values;
//   2. the view fills the ScalingInput (per-replica values, service values, kernel metrics
//      from the GPU snapshot), then the PromQL results are added (failures are metric
//      errors, so the policy never scales in on them); a metric the policy reads
//      (Policy::MetricNames) that no ready replica exports is a metric error too, by name;
//   3. scale::Controller::Tick evaluates the policy -- or the manual override, whose decision
//      says "manual override", or the activator rule, fed the gateway's activator queue --
//      and applies the reconciler's actions.
// I/O (scraping, queries, orchestrator polling) is the caller's: the daemon does it in
// parallel for all services before ticking them.
//
// Ownership: owns policy, controller and metric view; borrows the orchestrator (must outlive
// this object). Thread-safety: not thread-safe; the daemon's control-loop thread calls it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "daemon/service_metric_view.h"
#include "daemon/service_policy.h"
#include "gpu/gpu_info.h"
#include "metrics/prometheus_text_parser.h"
#include "scale/controller.h"
#include "scale/overridable_policy.h"
#include "scale/policy.h"
#include "scale/replica_orchestrator.h"
#include "scrape/sample_kind.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// What the daemon observed of one ready or draining replica this tick.
struct ReplicaObservation {
  std::string id;
  std::vector<int> gpus;  // device indices, for kernel metrics
  bool ready = true;      // false: draining (scraped for its in-flight count only)
  // The scrape's result; an error makes the tick's input carry metrics_error.
  Result<metrics::Exposition> exposition = Unavailable("not scraped");
  // kNew: `exposition` ended since the last tick. kKept: no scrape ended, `exposition` is
  // ignored and the replica's previous values stand (none before its first scrape). kCarried:
  // `exposition` is an error reported before (a metric error again, not another failed scrape).
  metrics::SampleKind sample = metrics::SampleKind::kNew;
};

// A PromQL result for one PromQuery key (error: the query failed or no server is set).
struct QueryObservation {
  std::string key;
  Result<double> value = Unavailable("not queried");
};

struct ServiceObservation {
  std::vector<ReplicaObservation> replicas;
  std::vector<QueryObservation> queries;
  // Requests waiting in the gateway's activator queue (no replica ready): the input's
  // requests_waiting_without_replica, so a policy that chose 0 replicas gets one while any
  // wait (scale::OverridablePolicy's activator rule; the decision's reason says so).
  int gateway_waiting = 0;
  // The gateway's cumulative measurements of the service (nullopt: no gateway, or it has not
  // seen a request of the service yet).
  std::optional<gateway::ServiceStatsView> gateway;
};

struct ServiceTickResult {
  scale::ControllerTick tick;
  bool desired_changed = false;  // desired_replicas differs from the previous tick's
  int scrape_errors = 0;         // scrapes that ended in an error this tick (kNew only)
  // Scrape and query failures and metrics no ready replica exports, one line each.
  std::vector<std::string> metric_errors;
  std::optional<GatewayFigures> gateway;   // what the gateway measured (nullopt: nothing)
};

// Called with each scraped replica's in-flight request count before the controller runs, and
// with kNotScraped for a ready replica with no new scrape this tick (the daemon then reports
// the gateway's exact count, when there is a gateway).
inline constexpr int kNotScraped = -1;
using OutstandingSink = std::function<void(const std::string& replica, int outstanding)>;

class ServiceRuntime {
 public:
  // REQUIRES: policy != nullptr. `orchestrator` must outlive the runtime. The SLO violation
  // ratios are measured against config.slo.
  ServiceRuntime(ServiceConfig config, std::unique_ptr<scale::Policy> policy,
                 scale::ReplicaOrchestrator& orchestrator);
  ~ServiceRuntime();
  ServiceRuntime(const ServiceRuntime&) = delete;
  ServiceRuntime& operator=(const ServiceRuntime&) = delete;

  // One control step (see the header comment). `gpus` may be null (no kernel metrics).
  // Returns last_tick()'s value, valid until the next Tick (not copied: 1,000 services a
  // tick). REQUIRES: `now` does not go backwards.
  const ServiceTickResult& Tick(Seconds now, const ServiceObservation& observation,
                                const gpu::GpuSnapshot* gpus,
                                const OutstandingSink& report_outstanding);

  // Manual desired count; nullopt hands control back to the policy. Errors: kInvalidArgument
  // (field "replicas") outside [min_replicas, max_replicas].
  Status SetManualReplicas(std::optional<int> replicas);
  std::optional<int> manual_replicas() const;

  // Swaps the policy (rules changed); the override and metric windows are kept. Rules
  // cooldowns restart with the new instance. REQUIRES: policy != nullptr.
  void ReplacePolicy(std::unique_ptr<scale::Policy> policy);

  // Queries the current policy needs from a Prometheus server.
  std::vector<PromQuery> PromQueries() const;
  // Whether the policy reads a metric of the replicas' scrapes (false: only the gateway's
  // measurements, PromQL, or nothing; the scrapes then feed the view and the drains only).
  bool PolicyReadsReplicas() const;

  const ServiceConfig& config() const { return config_; }
  std::string_view policy_family() const;
  // Adds the scrape families this service's view and policy read (ServiceMetricView::
  // AddReadFamilies), so the daemon parses nothing else.
  void AddScrapedFamilies(std::set<std::string, std::less<>>& families) const;
  const std::optional<ServiceTickResult>& last_tick() const { return last_; }
  scale::ReplicaOrchestrator& orchestrator() { return orchestrator_; }

 private:
  scale::ScalingInput Observe(Seconds now, const ServiceObservation& observation,
                              const gpu::GpuSnapshot* gpus, const OutstandingSink& sink,
                              ServiceTickResult& result);
  void ReportUnexported(const std::vector<ReadyReplicaRef>& ready, const scale::ScalingInput& input,
                        ServiceTickResult& result) const;
  // What the policy reads, derived once per policy instance (a policy's metrics change only
  // with the policy: ReplacePolicy), not on every tick.
  void LearnPolicyMetrics();

  ServiceConfig config_;
  scale::ReplicaOrchestrator& orchestrator_;
  scale::OverridablePolicy* policy_;  // owned by controller_
  std::unique_ptr<scale::Controller> controller_;
  ServiceMetricView view_;
  std::vector<std::string> metric_names_;     // policy_->inner().MetricNames()
  std::vector<std::string> scraped_metrics_;  // those not asked of Prometheus
  std::optional<ServiceTickResult> last_;
  // Observe's lists of this tick's ready and observed replicas: views of the observation,
  // read during its Tick only; kept to reuse their storage.
  std::vector<ReadyReplicaRef> ready_;
  std::vector<std::string_view> seen_;
};

// Sum of the samples of family `name` in `exposition` (over label sets); nullopt when absent.
std::optional<double> SumOfFamily(const metrics::Exposition& exposition, std::string_view name);

}  // namespace gpuscale::daemon
