// ServiceSlot: one running service as the daemon's loop holds it -- its orchestrator, one
// ServiceRuntime per pool, and the bookkeeping around them (which desired state it applied,
// its start failure, its metric-error events, its view's rendered spec). Built by
// ServiceFactory; converged by Reconciler; ticked, viewed and routed by the Daemon.
//
// Ownership: owns its orchestrator and runtimes (the runtimes borrow the orchestrator, a
// disaggregated service's pools and budget belong to it). Thread-safety: none; the loop
// thread (under Daemon's loop_mu_) is its only user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloc/pool_budget.h"
#include "core/clock.h"
#include "daemon/metric_error_events.h"
#include "daemon/service_runtime.h"
#include "daemon/start_failure.h"
#include "daemon_api/daemon_api.h"
#include "gateway/gateway_state.h"
#include "orch/pooled_orchestrator.h"
#include "orch/variant_orchestrator.h"
#include "scale/replica_orchestrator.h"
#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

struct ServiceSlot {
  std::string name;
  std::unique_ptr<orch::ServiceOrchestrator> orch;
  // One runtime per pool: the service's own, or a disaggregated service's prefill and
  // decode (each driving its pool of `pooled`); empty for orphans being stopped.
  std::vector<std::unique_ptr<ServiceRuntime>> runtimes;
  // A disaggregated service: `orch` as pools, and the GPU budget they share (owned by orch).
  orch::PooledOrchestrator* pooled = nullptr;
  // A mixed-fleet service (config.variants): `orch` as its variants' engines.
  orch::VariantOrchestrator* variants = nullptr;
  const alloc::PoolBudget* budget = nullptr;
  // A disaggregated service: the pools' last ticks as one (CombinePoolTicks), what the view,
  // the decision row and the history show.
  std::optional<ServiceTickResult> combined;
  ServiceConfig config;  // the spec (a disaggregated one's runtimes hold its pools')

  // Which runtime replica `id` belongs to (0 for a service of one pool).
  size_t RuntimeIndexOf(const std::string& id) const {
    const int pool = pooled != nullptr ? pooled->PoolOf(id) : 0;
    return pool < 0 ? 0 : static_cast<size_t>(pool);
  }
  // The tick the views show: the only runtime's, or the pools' combined one.
  const std::optional<ServiceTickResult>& LastTick() const {
    return pooled != nullptr ? combined : runtimes.front()->last_tick();
  }
  // The policy family as the live runtime names it (a rules policy's may change), or the
  // spec's for a disaggregated service (its pools' families).
  std::string PolicyFamily() const;
  // What the API shows of the service (its spec, replica counts, last decision, pools). The
  // spec's YAML is rendered again only when the spec changed (spec_yaml).
  ServiceView View() const;
  // The service's models and ready replicas for the gateway at `now`; a disaggregated
  // service's prefill pool (runtime 0) as the route's prefill replicas, its decode pool as
  // the replicas requests are relayed to (docs/gateway.md).
  // Local replicas told where to publish their KV events ({kv_events_endpoint} in the
  // command) carry that endpoint, under `state_dir`.
  gateway::ServiceRoute Route(Seconds now, const std::string& state_dir) const;
  // Stops every replica and drops the runtimes; the slot then waits in a retiring list until
  // its processes are gone (Daemon::PollRetiring).
  void StopAll(Seconds now);
  // A deleted service (or an orphan): its store row, marked deleting, goes once the
  // replicas are gone (PollRetiring). False for services retired by Shutdown.
  bool deleting = false;
  Seconds created_at{0};
  // Which desired state this slot was built from and has applied (Reconciler).
  uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
  MetricErrorEvents metric_events;  // which metric-error events the log gets
  // Whether its replicas cannot start (the view's `failure`, the gateway's fast 503), and
  // which of that the log was told (Daemon::PublishViews).
  StartFailure start_failure;
  // When the ready replicas are scraped next, while no policy of the service reads them
  // (scrape.view_only_interval_seconds; TickCollector).
  Seconds next_view_scrape{0};
  // Whether some runtime's policy reads the replicas' scrapes.
  bool PolicyReadsReplicas() const {
    for (const auto& runtime : runtimes) {
      if (runtime->PolicyReadsReplicas()) return true;
    }
    return runtimes.empty();  // an orphan being stopped: every tick, for its drains' counts
  }
  // The spec last rendered for the API view and its YAML (View; the loop thread only).
  mutable std::optional<std::pair<ServiceConfig, std::string>> spec_yaml;

 private:
  // A disaggregated service's pools and budget into its view.
  void AddPoolViews(ServiceView& view) const;
};

// The running services by name, and the deleted ones (and orphans) whose replicas are still
// stopping.
using ServiceSlots = std::map<std::string, std::unique_ptr<ServiceSlot>>;
using RetiringSlots = std::vector<std::unique_ptr<ServiceSlot>>;

// Adds each replica's phase to a view's counts: replicas (not draining), ready, pending,
// draining. `View`: ServiceView or PoolView.
template <typename View>
void CountPhases(const std::vector<scale::ReplicaStatus>& replicas, View& v) {
  for (const scale::ReplicaStatus& r : replicas) {
    const bool draining = r.phase == scale::ReplicaPhase::kDraining;
    v.replicas += draining ? 0 : 1;
    v.ready_replicas += r.phase == scale::ReplicaPhase::kReady ? 1 : 0;
    v.pending_replicas += r.phase == scale::ReplicaPhase::kPending ? 1 : 0;
    v.draining_replicas += draining ? 1 : 0;
  }
}

}  // namespace gpuscale::daemon
