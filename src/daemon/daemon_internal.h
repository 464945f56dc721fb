// Daemon's private types, shared by daemon.cc, daemon_open.cc and daemon_requests.cc.
// Not part of the module's interface.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/apply_retry.h"
#include "daemon/daemon.h"
#include "daemon/metric_collector.h"
#include "daemon/metric_error_events.h"
#include "daemon/start_failure.h"
#include "events/event_kind.h"
#include "orch/pooled_orchestrator.h"
#include "orch/variant_orchestrator.h"

namespace gpuscale::daemon {

struct Daemon::Slot {
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
  // spec's for a disaggregated service (its pools' families). daemon_pools.cc.
  std::string PolicyFamily() const;
  // A disaggregated service's pools and budget into its view (daemon_pools.cc).
  void AddPoolViews(ServiceView& view) const;
  // A deleted service (or an orphan): its store row, marked deleting, goes once the
  // replicas are gone (PollRetiring). False for services retired by Shutdown.
  bool deleting = false;
  Seconds created_at{0};
  // Which Desired this slot was built from and has applied (Daemon::Reconcile).
  uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
  MetricErrorEvents metric_events;  // which metric-error events the log gets
  // Whether its replicas cannot start (the view's `failure`, the gateway's fast 503), and
  // which of that the log was told (PublishViews).
  StartFailure start_failure;
  // When the ready replicas are scraped next, while no policy of the service reads them
  // (scrape.view_only_interval_seconds; Daemon::Collect).
  Seconds next_view_scrape{0};
  // Whether some runtime's policy reads the replicas' scrapes.
  bool PolicyReadsReplicas() const {
    for (const auto& runtime : runtimes) {
      if (runtime->PolicyReadsReplicas()) return true;
    }
    return runtimes.empty();  // an orphan being stopped: every tick, for its drains' counts
  }
  // The spec last rendered for the API view and its YAML (ViewOf; the loop thread only).
  mutable std::optional<std::pair<ServiceConfig, std::string>> spec_yaml;
};

// What the API and reloads asked one service to be (Daemon::desired_). The loop compares it
// with the service's slot on every tick and converges (Daemon::Reconcile). Generations come
// from one counter (Daemon::generation_), so each write is told apart from every other.
struct Daemon::Desired {
  ServiceConfig config;       // validated
  std::optional<int> manual;  // PUT /replicas; nullopt = the policy decides
  uint64_t incarnation = 0;   // the create's generation: a deleted and re-created service differs
  uint64_t spec_generation = 0;   // the last create or update
  uint64_t rules_generation = 0;  // the last rule added or deleted
};

// A service whose desired state could not be applied yet: what was tried, and when the loop
// tries again (shown in the service's view; an event when the error first shows or changes).
struct Daemon::Unapplied {
  uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
  ApplyRetry retry;
};

// One service's desired state as one tick reconciles it: copied from desired_ under mu_
// (Daemon::Wanted), applied without it.
struct Daemon::Want {
  std::string name;
  uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
  std::optional<int> manual;
  std::optional<ServiceConfig> config;  // only when the running slot's spec is older
};

// Jobs of one tick, with the slices that belong to each service.
struct Daemon::Observed {
  std::vector<ScrapeJob> scrapes;
  std::vector<QueryJob> queries;
  struct Range {
    size_t scrape_begin = 0, scrape_end = 0, query_begin = 0, query_end = 0;
    std::vector<orch::ReplicaInfo> replicas;  // scraped ones, same order as the scrapes
    std::vector<PromQuery> prom;              // same order as the queries
    std::vector<size_t> prom_runtime;         // which of the slot's runtimes asked each
  };
  std::map<std::string, Range> ranges;  // by service
};

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

// An event row stamped `now`, its kind by the wire name (store::EventRow has no constructor).
store::EventRow MakeEvent(Seconds now, std::string service, events::EventKind kind,
                          std::string replica, std::string message);

}  // namespace gpuscale::daemon
