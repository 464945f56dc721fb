// ReplicaState: what the API, the store and the daemon's loop say a replica is doing, finer
// than scale::ReplicaPhase (which the controller plans with): a replica waiting out a restart
// backoff is `restarting` (phase starting), one sent SIGTERM is `stopping` (no longer in
// ListReplicas). One name table converts to and from the wire strings (API JSON, store rows),
// which are the phase names for the four states that have a phase.
//
// Pure values and functions.
#pragma once

#include <string_view>

#include "core/result.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::orch {

enum class ReplicaState { kPending, kStarting, kReady, kDraining, kRestarting, kStopping };

// "pending", "starting", "ready", "draining", "restarting", "stopping".
std::string_view ReplicaStateName(ReplicaState state);
// The state of `name` (as ReplicaStateName spells it). Errors: kInvalidArgument naming
// `field`, listing the known names.
Result<ReplicaState> ParseReplicaState(std::string_view name, std::string_view field = "state");
// The state of a replica in `phase` that is neither restarting nor stopping.
ReplicaState StateOfPhase(scale::ReplicaPhase phase);
// The phase a replica in `state` is planned with (restarting: starting; stopping: pending,
// as a stopping replica no longer counts).
scale::ReplicaPhase PhaseOfState(ReplicaState state);
// Whether the replica is on its way somewhere (starting, restarting, draining, stopping): the
// daemon's loop then ticks at the probe interval.
bool IsSettling(ReplicaState state);

}  // namespace gpuscale::orch
