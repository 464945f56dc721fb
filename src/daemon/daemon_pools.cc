// Daemon: a disaggregated service's two pools (daemon.h, daemon_config.h's DisaggSpec). Each
// pool is a service of its own to the machinery every service uses (PoolServiceConfig: a
// local orchestrator, a policy, a ServiceRuntime), on one alloc::PoolBudget the pools'
// orchestrators ask before every placement; a PooledOrchestrator shows them to the rest of
// the daemon (polling, adoption, store rows, events, drains) as the one service they are.
// Also the gateway's route table, where the pools become one route's two steps.
#include <fmt/format.h>

#include <memory>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/service_policy.h"
#include "orch/argv_template.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

Status Daemon::MakePools(const ServiceConfig& service, Slot& slot) {
  const std::string path = "disaggregated";
  Result<alloc::PoolBudget> made = MakePoolBudget(*service.disaggregated);
  if (!made) {
    Error e = made.error();
    e.field = yaml::Join(path, e.field);
    return Unexpected<Error>(std::move(e));
  }
  auto budget = std::make_shared<alloc::PoolBudget>(std::move(*made));
  std::vector<orch::PooledOrchestrator::Pool> pools;
  for (int role = 0; role < 2; ++role) {
    const ServiceConfig pool = PoolServiceConfig(service, role);
    Result<std::unique_ptr<scale::Policy>> policy = BuildServicePolicy(pool, {});
    Result<std::unique_ptr<orch::LocalProcessOrchestrator>> local =
        policy ? MakeLocalOrchestrator(pool)
               : Result<std::unique_ptr<orch::LocalProcessOrchestrator>>(
                     Unexpected<Error>(policy.error()));
    if (!local) {
      Error e = local.error();
      e.field = yaml::Join(yaml::Join(path, kPoolRoles[role]), e.field);
      return Unexpected<Error>(std::move(e));
    }
    (*local)->SetPoolBudget(budget.get(), role);
    // The runtime borrows the pool's orchestrator, which the PooledOrchestrator keeps alive.
    slot.runtimes.push_back(std::make_unique<ServiceRuntime>(pool, std::move(*policy), **local));
    pools.push_back({pool.name, std::move(*local)});
  }
  slot.budget = budget.get();
  auto pooled = std::make_unique<orch::PooledOrchestrator>(std::move(budget), std::move(pools));
  slot.pooled = pooled.get();
  slot.orch = std::move(pooled);
  return OkStatus();
}

std::string Daemon::Slot::PolicyFamily() const {
  if (pooled != nullptr) return config.policy_family;
  return std::string(runtimes.front()->policy_family());
}

void Daemon::Slot::AddPoolViews(ServiceView& view) const {
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

// Every service's models and ready replicas for the gateway; a disaggregated service's
// prefill pool (runtime 0) as the route's prefill replicas, its decode pool as the replicas
// requests are relayed to (docs/gateway.md).
void Daemon::PublishRoutes(Seconds now) {
  if (!options_.gateway) return;
  std::vector<gateway::ServiceRoute> routes;
  for (auto& [name, slot] : services_) {
    gateway::ServiceRoute route{name, slot->config.ServedModels(), {}};
    route.disaggregated = slot->pooled != nullptr;
    route.unavailable_reason = slot->start_failure.failure();
    // Local replicas told where to publish their KV events ({kv_events_endpoint}) publish there.
    const bool kv_events = !route.disaggregated && slot->config.engine == "local" &&
                           orch::NamesPlaceholder(slot->config.command, orch::kKvEventsEndpointVar);
    for (const orch::ReplicaInfo& r : slot->orch->Replicas(now)) {
      if (r.phase != scale::ReplicaPhase::kReady || !r.serving || r.port <= 0 || r.host.empty()) {
        continue;
      }
      const bool prefill = route.disaggregated && slot->RuntimeIndexOf(r.id) == 0;
      (prefill ? route.prefill_replicas : route.replicas)
          .push_back({r.id, r.host, r.port, (now - r.phase_since).count(),
                      kv_events ? orch::KvEventsEndpoint(config_.state_dir, r.id) : ""});
    }
    routes.push_back(std::move(route));
  }
  options_.gateway->Publish(std::move(routes));
}

}  // namespace gpuscale::daemon
