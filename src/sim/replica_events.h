// The pieces of the event loop that the aggregated engine (engine.cc) and each pool of a
// disaggregated run (disagg_pool.h) share: the queue of replica events (segment ends and
// cold starts done) over one SimOrchestrator's slots, the scrape of its replicas and its row
// of the timeline.
//
// Order at equal times: segment ends before cold starts done, then by slot, so runs are
// reproducible. A segment end is stale once its slot's version moved on (the replica's next
// event time changed) or the slot is gone; stale events are dropped when met.
// Ownership: the queue holds values only; the orchestrator is the caller's.
// Thread-safety: none (one simulation thread).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "route/picker.h"
#include "route/prefix_index.h"
#include "scale/controller.h"
#include "sim/metric_view.h"
#include "sim/sim_orchestrator.h"
#include "sim/simulation.h"

namespace gpuscale::sim {

struct ReplicaEvent {
  double t = 0;
  int kind = 0;  // 0: segment end, 1: cold start done
  int slot = 0;
  uint32_t version = 0;
  bool operator>(const ReplicaEvent& o) const {
    if (t != o.t) return t > o.t;
    if (kind != o.kind) return kind > o.kind;
    return slot > o.slot;
  }
};

class ReplicaEvents {
 public:
  // Queues the slot's next segment end, making its earlier ones stale.
  void Schedule(SimOrchestrator& orchestrator, int slot);
  // Queues the end of a cold start that began at `now` for a slot just placed.
  void ColdStart(double ready_at, int slot) { heap_.push({ready_at, 1, slot, 0}); }
  // The time of the earliest live event; +infinity when none.
  double NextTime(SimOrchestrator& orchestrator);
  // REQUIRES: NextTime() returned a finite time just before.
  ReplicaEvent Pop();

 private:
  std::priority_queue<ReplicaEvent, std::vector<ReplicaEvent>, std::greater<ReplicaEvent>> heap_;
};

// The ready replica (slot) `picker` routes a request to at `now`, or -1 when none is ready.
// Candidates go in creation order (ready_slots'), so ties go to the oldest replica;
// `candidates` is scratch space reused between calls. With `request` (null: a request
// without a prompt), prefix affinity keys on its first block and prefix_cache routing sees
// each replica's cached prefix: from `index` (the approximate mode, which then records where
// the request went) or, when `index` is null, from the replica's own cache (precise).
// `max_in_flight` > 0: only replicas with fewer requests outstanding are candidates (the
// door's admission.max_in_flight_per_replica). -1 when no replica may take the request.
int PickReady(route::Picker& picker, SimOrchestrator& orchestrator,
              std::vector<route::Candidate>& candidates, double now,
              const RequestRecord* request = nullptr, route::PrefixIndex* index = nullptr,
              int max_in_flight = 0);

// Adds every ready or draining replica's metrics to `view` at `now`.
void ScrapeReplicas(double now, SimOrchestrator& orchestrator, MetricView& view);

// Seconds from a control tick to the next by the daemon's rule (scale::TickInterval), with
// a replica settling while one starts or drains and `queued` requests waiting for a replica.
double NextTickSeconds(double control_interval, const SimOrchestrator& orchestrator, int queued);

// The timeline row of the orchestrator's replicas at a tick; `router_queued` requests wait at
// the router (counted in `waiting`).
TimelineRow MakeTimelineRow(double now, double arrival_rate, const scale::ControllerTick& tick,
                            SimOrchestrator& orchestrator, int router_queued);

}  // namespace gpuscale::sim
