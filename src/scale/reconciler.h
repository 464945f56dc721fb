// The reconciler: turns "desired N replicas" plus the replicas that exist into orchestrator
// actions, the way a Kubernetes ReplicaSet controller closes the gap, with two LLM-serving
// rules on top: a replica is drained before it is stopped (in-flight generations finish),
// and a replica that cannot be placed stays pending and is retried every tick.
//
// Plan is pure (a function of its arguments); it does not call the orchestrator.
// Thread-safety: stateless, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::scale {

struct ReconcilerConfig {
  // A draining replica is stopped when its last request finishes or after this long,
  // whichever comes first (requests still running then are aborted). Default 300 s.
  Seconds drain_timeout{300};
};

struct ReplicaAction {
  enum class Kind { kStart, kPlace, kDrain, kResume, kStop };
  Kind kind = Kind::kStart;
  std::string replica_id;  // empty for kStart
  std::string reason;      // e.g. "scale in: fewest outstanding requests (0)"
};

std::string_view ActionKindName(ReplicaAction::Kind kind);  // "start", "place", ...

// Actions that move `replicas` towards `desired` (>= 0). Active replicas (pending + starting
// + ready) count their `capacity` (1 each unless a mixed fleet says otherwise), so `desired`
// is in reference replicas; a new replica is assumed to bring 1 (the orchestrator picks its
// variant; the next pass corrects the difference):
//  - too little active capacity: resume draining replicas first (most outstanding requests
//    first: they are warm), then start new ones;
//  - too much: stop pending ones (newest first), then starting ones (newest first: least
//    sunk cold start), then drain ready ones, highest drain_rank first, then fewest
//    outstanding requests (ties: newest first); each only while the capacity left still
//    meets `desired`;
//  - every pending replica still wanted gets a kPlace retry;
//  - a draining replica with no outstanding requests, or draining for drain_timeout, gets
//    kStop.
// Order of the result: stops, drains, resumes, places, starts (frees GPUs before placing).
std::vector<ReplicaAction> PlanReconcile(int desired, const std::vector<ReplicaStatus>& replicas,
                                         Seconds now, const ReconcilerConfig& config);

}  // namespace gpuscale::scale
