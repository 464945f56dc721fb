// EventKind: what an event in the daemon's log is about (a decision, a replica that crashed,
// an experiment that ended...). The orchestrators, the task manager and the daemon's loop
// produce events of these kinds; one name table converts each to the wire name that the
// store's `events.kind` column, the REST API, the SSE stream and the web dashboard carry, and
// back (an API's `?kind=` filter).
//
// The wire names never change: stored databases and the dashboard depend on them. A row
// written by another version may hold a name this table lacks; readers keep such a kind as
// text (daemon::EventView::kind) rather than parsing it, so that it still shows.
//
// Pure values and functions.
#pragma once

#include <span>
#include <string_view>

#include "core/result.h"

namespace gpuscale::events {

enum class EventKind {
  // The daemon and its services.
  kDaemonStarted,
  kConfigReloaded,
  kConfigReloadFailed,
  kReplicasTableRebuilt,
  kReplicaProcessStopped,  // a marked replica process the daemon found and stopped
  kDecision,
  kActionFailed,
  kManualOverride,
  kRulesChanged,
  kMetricsError,
  kMetricsRecovered,
  kServiceCreated,
  kServiceUpdated,
  kServiceDeleted,
  kServiceError,
  kServiceSkipped,
  kAdoptionError,
  kOrphanError,
  kOrphanUnmanaged,
  // One replica, from its orchestrator.
  kReplicaPending,
  kReplicaScheduled,
  kReplicaStarted,
  kReplicaReady,
  kReplicaServing,
  kReplicaNotServing,
  kReplicaUnhealthy,
  kReplicaCrashed,
  kReplicaRestartScheduled,
  kReplicaStartFailed,
  kReplicaStartupTimeout,
  kReplicaKilled,
  kReplicaGroupLingers,
  kReplicaStopped,
  kReplicaStopFailed,  // an engine did not take the stop yet; retried
  kReplicaAdopted,
  kReplicaCleanedUp,
  kReplicaPreempting,  // a spot notice: drains, then goes by the deadline (issue 47)
  kReplicaPreempted,   // the preempted replica stopped and its GPUs were freed
  // A service's engine (its Slurm controller) as a whole.
  kEngineUnavailable,
  kEngineRecovered,
  // Tasks and experiments.
  kTaskSubmitted,
  kTaskFinished,
  kTaskCancelled,
  kTaskStoreError,
  kExperimentQueued,
  kExperimentStarted,
  kExperimentRunning,
  kExperimentSucceeded,
  kExperimentFailed,
  kExperimentCancelled,
  // The SSE stream's gateway figures: sent, never stored. Stays last (kEventKindCount).
  kGatewayStats,
};

inline constexpr int kEventKindCount = static_cast<int>(EventKind::kGatewayStats) + 1;

// The wire name: "decision", "replica_started", "experiment_succeeded", "gateway_stats"...
std::string_view EventKindName(EventKind kind);
// The kind named `name` (as EventKindName spells it). Errors: kInvalidArgument naming
// `field`, listing the known names.
Result<EventKind> ParseEventKind(std::string_view name, std::string_view field = "kind");
// Every kind, in declaration order.
std::span<const EventKind> AllEventKinds();

}  // namespace gpuscale::events
