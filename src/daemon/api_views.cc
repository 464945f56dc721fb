// Daemon records -> API views (api_views.h).
#include "daemon/api_views.h"

#include "orch/replica_state.h"

namespace gpuscale::daemon {

ReplicaView ToReplicaView(const orch::ReplicaInfo& r) {
  return ReplicaView{.id = r.id,
                     .phase = r.phase,
                     .state = std::string(orch::ReplicaStateName(r.state)),
                     .phase_since = r.phase_since,
                     .host = r.host,
                     .port = r.port,
                     .gpus = r.gpus,
                     .gpu_keys = r.gpu_keys,
                     .lease_owner = r.lease_owner,
                     .pid = r.pid,
                     .log_path = r.log_path,
                     .restarts = r.restarts,
                     .started_at = r.started_at,
                     .uptime = r.uptime,
                     .outstanding_requests = r.outstanding_requests,
                     .adopted = r.adopted,
                     .serving = r.serving,
                     .last_error = r.last_error,
                     .start_error = r.start_error,
                     .variant = r.variant,
                     .capacity = r.capacity,
                     .preempt_deadline = r.preempt_deadline};
}

RuleView ToRuleView(const store::RuleRow& row) {
  return RuleView{.id = row.id,
                  .service = row.service,
                  .name = row.name,
                  .source = row.source,
                  .metric = row.metric,
                  .aggregation = row.aggregation,
                  .comparator = row.comparator,
                  .threshold = row.threshold,
                  .step_size = row.step_size,
                  .cooldown = row.cooldown,
                  .min_replicas = row.min_replicas,
                  .max_replicas = row.max_replicas,
                  .enabled = row.enabled,
                  .created_at = row.created_at};
}

store::RuleRow ToRuleRow(const RuleView& rule) {
  return store::RuleRow{.id = rule.id,
                        .service = rule.service,
                        .name = rule.name,
                        .source = rule.source,
                        .metric = rule.metric,
                        .aggregation = rule.aggregation,
                        .comparator = rule.comparator,
                        .threshold = rule.threshold,
                        .step_size = rule.step_size,
                        .cooldown = rule.cooldown,
                        .min_replicas = rule.min_replicas,
                        .max_replicas = rule.max_replicas,
                        .enabled = rule.enabled,
                        .created_at = rule.created_at};
}

EventView ToEventView(const store::EventRow& row) {
  return EventView{.id = row.id,
                   .at = row.at,
                   .service = row.service,
                   .kind = row.kind,
                   .replica = row.replica,
                   .message = row.message,
                   .data = row.data};
}

store::EventQuery ToStoreQuery(const EventQuery& query) {
  return store::EventQuery{
      .since_id = query.since_id,
      .service = query.service,
      .kind = query.kind ? std::string(events::EventKindName(*query.kind)) : std::string(),
      .limit = query.limit};
}

}  // namespace gpuscale::daemon
