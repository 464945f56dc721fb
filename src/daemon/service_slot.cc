#include "daemon/service_slot.h"

#include <utility>

#include "orch/argv_template.h"

namespace gpuscale::daemon {

std::string ServiceSlot::PolicyFamily() const {
  if (pooled != nullptr) return config.policy_family;
  return std::string(runtimes.front()->policy_family());
}

ServiceView ServiceSlot::View() const {
  ServiceView v;
  v.config = config;
  // Rendered again only when the spec changed: every service's view is rebuilt every tick.
  if (!spec_yaml || spec_yaml->first != v.config) {
    spec_yaml.emplace(v.config, ServiceConfigToYaml(v.config));
  }
  v.spec_yaml = spec_yaml->second;
  v.policy_family = PolicyFamily();
  v.manual_replicas = runtimes.front()->manual_replicas();
  v.created_at = created_at;
  CountPhases(orch->ListReplicas(), v);
  if (pooled != nullptr) AddPoolViews(v);
  if (const auto& last = LastTick()) {
    v.desired_replicas = last->tick.desired_replicas;
    v.last_reason = last->tick.decision.reason;
    v.last_details = last->tick.decision.details;
    v.last_decision_at = last->tick.now;
    v.metric_errors = last->metric_errors;
    // No figures before the service's first request through the gateway.
    if (last->gateway && last->gateway->HasTraffic()) {
      v.gateway = last->gateway;
    }
  }
  return v;
}

void ServiceSlot::AddPoolViews(ServiceView& view) const {
  view.gpu_budget = budget->budget();
  view.gpus_held = budget->total_held();
  for (size_t i = 0; i < runtimes.size(); ++i) {
    const ServiceRuntime& runtime = *runtimes[i];
    const ServiceConfig& c = runtime.config();
    PoolView pool;
    pool.role = kPoolRoles[i];
    pool.policy_family = std::string(runtime.policy_family());
    pool.min_replicas = c.min_replicas;
    pool.max_replicas = c.max_replicas;
    pool.gpus_per_replica = c.gpus_per_replica;
    pool.gpus_held = budget->held(static_cast<int>(i));
    CountPhases(pooled->pool(i).ListReplicas(), pool);
    if (const auto& last = runtime.last_tick()) {
      pool.desired_replicas = last->tick.desired_replicas;
      pool.last_reason = last->tick.decision.reason;
    }
    view.pools.push_back(std::move(pool));
  }
}

gateway::ServiceRoute ServiceSlot::Route(Seconds now, const std::string& state_dir) const {
  gateway::ServiceRoute route{name, config.ServedModels(), {}};
  route.disaggregated = pooled != nullptr;
  route.unavailable_reason = start_failure.failure();
  const bool kv_events = !route.disaggregated && config.engine == "local" &&
                         orch::NamesPlaceholder(config.command, orch::kKvEventsEndpointVar);
  for (const orch::ReplicaInfo& r : orch->Replicas(now)) {
    if (r.phase != scale::ReplicaPhase::kReady || !r.serving || r.port <= 0 || r.host.empty()) {
      continue;
    }
    const bool prefill = route.disaggregated && RuntimeIndexOf(r.id) == 0;
    (prefill ? route.prefill_replicas : route.replicas)
        .push_back({r.id, r.host, r.port, (now - r.phase_since).count(), r.capacity,
                    kv_events ? orch::KvEventsEndpoint(state_dir, r.id) : ""});
  }
  return route;
}

void ServiceSlot::StopAll(Seconds now) {
  orch->StopAll(now);
  runtimes.clear();
}

}  // namespace gpuscale::daemon
