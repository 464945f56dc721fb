#include "events/event_kind.h"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <utility>

#include "core/name_table.h"

namespace gpuscale::events {
namespace {

using K = EventKind;

// The one table: every kind with its wire name, in declaration order.
constexpr std::pair<EventKind, std::string_view> kNames[] = {
    {K::kDaemonStarted, "daemon_started"},
    {K::kConfigReloaded, "config_reloaded"},
    {K::kConfigReloadFailed, "config_reload_failed"},
    {K::kReplicasTableRebuilt, "replicas_table_rebuilt"},
    {K::kReplicaProcessStopped, "replica_process_stopped"},
    {K::kDecision, "decision"},
    {K::kActionFailed, "action_failed"},
    {K::kManualOverride, "manual_override"},
    {K::kRulesChanged, "rules_changed"},
    {K::kMetricsError, "metrics_error"},
    {K::kMetricsRecovered, "metrics_recovered"},
    {K::kServiceCreated, "service_created"},
    {K::kServiceUpdated, "service_updated"},
    {K::kServiceDeleted, "service_deleted"},
    {K::kServiceError, "service_error"},
    {K::kServiceSkipped, "service_skipped"},
    {K::kAdoptionError, "adoption_error"},
    {K::kOrphanError, "orphan_error"},
    {K::kOrphanUnmanaged, "orphan_unmanaged"},
    {K::kReplicaPending, "replica_pending"},
    {K::kReplicaScheduled, "replica_scheduled"},
    {K::kReplicaStarted, "replica_started"},
    {K::kReplicaReady, "replica_ready"},
    {K::kReplicaServing, "replica_serving"},
    {K::kReplicaNotServing, "replica_not_serving"},
    {K::kReplicaUnhealthy, "replica_unhealthy"},
    {K::kReplicaCrashed, "replica_crashed"},
    {K::kReplicaRestartScheduled, "replica_restart_scheduled"},
    {K::kReplicaStartFailed, "replica_start_failed"},
    {K::kReplicaStartupTimeout, "replica_startup_timeout"},
    {K::kReplicaKilled, "replica_killed"},
    {K::kReplicaGroupLingers, "replica_group_lingers"},
    {K::kReplicaStopped, "replica_stopped"},
    {K::kReplicaStopFailed, "replica_stop_failed"},
    {K::kReplicaAdopted, "replica_adopted"},
    {K::kReplicaCleanedUp, "replica_cleaned_up"},
    {K::kReplicaPreempting, "replica_preempting"},
    {K::kReplicaPreempted, "replica_preempted"},
    {K::kEngineUnavailable, "engine_unavailable"},
    {K::kEngineRecovered, "engine_recovered"},
    {K::kTaskSubmitted, "task_submitted"},
    {K::kTaskFinished, "task_finished"},
    {K::kTaskCancelled, "task_cancelled"},
    {K::kTaskStoreError, "task_store_error"},
    {K::kExperimentQueued, "experiment_queued"},
    {K::kExperimentStarted, "experiment_started"},
    {K::kExperimentRunning, "experiment_running"},
    {K::kExperimentSucceeded, "experiment_succeeded"},
    {K::kExperimentFailed, "experiment_failed"},
    {K::kExperimentCancelled, "experiment_cancelled"},
    {K::kGatewayStats, "gateway_stats"},
};
static_assert(std::size(kNames) == kEventKindCount, "every EventKind needs a row in kNames");

constexpr std::array<EventKind, kEventKindCount> kAll = [] {
  std::array<EventKind, kEventKindCount> all{};
  for (size_t i = 0; i < all.size(); ++i) all[i] = kNames[i].first;
  return all;
}();

}  // namespace

std::string_view EventKindName(EventKind kind) { return NameIn<EventKind>(kNames, kind); }

Result<EventKind> ParseEventKind(std::string_view name, std::string_view field) {
  if (std::optional<EventKind> kind = ValueIn<EventKind>(kNames, name)) return *kind;
  return InvalidArgument(
      fmt::format("unknown event kind '{}' (expected one of {})", name, NamesIn<EventKind>(kNames)),
      std::string(field));
}

std::span<const EventKind> AllEventKinds() { return kAll; }

}  // namespace gpuscale::events
