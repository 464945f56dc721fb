#include "daemon/service_factory.h"

#include <map>
#include <utility>
#include <vector>

#include "daemon/service_policy.h"
#include "daemon/slurm_adapter.h"
#include "daemon/variant_prices.h"
#include "orch/fleet_orchestrator.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

Result<std::unique_ptr<ServiceSlot>> ServiceFactory::MakeSlot(const ServiceConfig& service,
                                                              Seconds now) {
  auto slot = std::make_unique<ServiceSlot>();
  slot->name = service.name;
  slot->config = service;
  if (service.disaggregated) {
    GS_RETURN_IF_ERROR(MakePools(service, *slot));
  } else {
    std::vector<store::RuleRow> rules;
    if (service.policy_yaml.empty()) {
      GS_ASSIGN_OR_RETURN(rules, store_.rules().ListForService(service.name));
    }
    GS_ASSIGN_OR_RETURN(std::unique_ptr<scale::Policy> policy, BuildServicePolicy(service, rules));
    GS_ASSIGN_OR_RETURN(slot->orch, MakeOrchestrator(service));
    slot->variants = dynamic_cast<orch::VariantOrchestrator*>(slot->orch.get());
    slot->runtimes.push_back(
        std::make_unique<ServiceRuntime>(service, std::move(policy), *slot->orch));
  }
  slot->created_at = now;
  if (Result<store::ServiceRow> row = store_.services().Get(service.name)) {
    slot->created_at = row->created_at;
  }
  return slot;
}

// A service's engine: local processes (default), Slurm jobs (engine: slurm) or a fleet.
Result<std::unique_ptr<orch::ServiceOrchestrator>> ServiceFactory::MakeOrchestrator(
    const ServiceConfig& service) {
  if (!service.variants.empty()) return MakeVariantOrchestrator(service);
  if (service.engine == "fleet") {
    orch::FleetConfig fleet;
    fleet.service = service.name;
    fleet.url = service.fleet_url;
    fleet.readiness_path = service.readiness_path;
    fleet.max_replicas = service.max_replicas;
    GS_ASSIGN_OR_RETURN(std::unique_ptr<orch::FleetOrchestrator> orchestrator,
                        orch::FleetOrchestrator::Create(std::move(fleet), options_.engine_calls));
    return std::unique_ptr<orch::ServiceOrchestrator>(std::move(orchestrator));
  }
  if (service.engine == "slurm") {
    SlurmAdapterOptions o;
    o.state_dir = options_.state_dir;
    o.probe_interval = options_.probe_interval;
    o.restart_backoff_initial = options_.restart_backoff_initial;
    o.restart_backoff_max = options_.restart_backoff_max;
    o.calls = options_.engine_calls;
    o.clusters = &slurm_clusters_;
    GS_ASSIGN_OR_RETURN(std::unique_ptr<orch::SlurmOrchestrator> slurm,
                        MakeSlurmOrchestrator(service, o));
    return std::unique_ptr<orch::ServiceOrchestrator>(std::move(slurm));
  }
  GS_ASSIGN_OR_RETURN(std::unique_ptr<orch::LocalProcessOrchestrator> local,
                      MakeLocalOrchestrator(service));
  return std::unique_ptr<orch::ServiceOrchestrator>(std::move(local));
}

Result<std::unique_ptr<orch::LocalProcessOrchestrator>> ServiceFactory::MakeLocalOrchestrator(
    const ServiceConfig& service) {
  orch::LocalProcessConfig c;
  c.service = service.name;
  c.command = service.command;
  c.env = service.env;
  c.gpus_per_replica = service.gpus_per_replica;
  c.min_memory_free_mb = service.min_memory_free_mb;
  c.gpu_type = service.gpu_type;
  c.state_dir = options_.state_dir;
  c.readiness_path = service.readiness_path;
  c.startup_timeout = service.startup_timeout;
  c.probe_interval = options_.probe_interval;
  c.health_interval = options_.health_interval;
  c.restart_backoff_initial = options_.restart_backoff_initial;
  c.restart_backoff_max = options_.restart_backoff_max;
  c.stop_grace = options_.stop_grace;
  c.capabilities = {"gpu"};
  gpu::Monitor* monitor = &monitor_;
  return orch::LocalProcessOrchestrator::Create(std::move(c), ledger_,
                                                [monitor](Seconds) { return monitor->Snapshot(); });
}

// Each pool is a service of its own to the machinery every service uses (PoolServiceConfig:
// a local orchestrator, a policy, a ServiceRuntime), on one alloc::PoolBudget the pools'
// orchestrators ask before every placement; the PooledOrchestrator shows them to the rest of
// the daemon (polling, adoption, store rows, events, drains) as the one service they are.
Status ServiceFactory::MakePools(const ServiceConfig& service, ServiceSlot& slot) {
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

Result<std::unique_ptr<orch::ServiceOrchestrator>> ServiceFactory::MakeVariantOrchestrator(
    const ServiceConfig& service) {
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot gpus, monitor_.Snapshot());
  GS_ASSIGN_OR_RETURN(std::vector<orch::VariantPlacement> placements,
                      PriceVariants(service, gpus, ""));
  std::vector<orch::PooledOrchestrator::Pool> pools;
  for (const VariantConfig& v : service.variants) {
    // One engine per variant, named "<service>.<variant>" as a disaggregated service's pools
    // are ('.' is in no service name), leasing only GPUs of its type.
    ServiceConfig one = service;
    one.name = service.name + "." + v.name;
    one.variants.clear();
    one.gpu_type = v.gpu_type;
    one.gpus_per_replica = v.gpus_per_replica;
    GS_ASSIGN_OR_RETURN(std::unique_ptr<orch::LocalProcessOrchestrator> local,
                        MakeLocalOrchestrator(one));
    pools.push_back({one.name, std::move(local)});
  }
  gpu::Monitor* monitor = &monitor_;
  alloc::LeaseLedger* ledger = &ledger_;
  orch::FreeGpuCounts free = [monitor, ledger](Seconds) {
    Result<gpu::GpuSnapshot> now = monitor->Snapshot();
    return now ? UnleasedGpusByType(*now, *ledger) : std::map<std::string, int>{};
  };
  return std::unique_ptr<orch::ServiceOrchestrator>(std::make_unique<orch::VariantOrchestrator>(
      std::move(placements), std::move(pools), std::move(free)));
}

}  // namespace gpuscale::daemon
