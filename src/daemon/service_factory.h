// ServiceFactory: builds a service's engine and runtimes from its spec -- local processes,
// Slurm jobs or a fleet (by ServiceConfig::engine), and for a disaggregated service its two
// pools of local processes on one alloc::PoolBudget, each with a policy and a ServiceRuntime
// of its own (PoolServiceConfig), shown to the rest of the daemon as one service by an
// orch::PooledOrchestrator. The daemon calls it at Open, when the loop applies a new or
// changed spec (Reconciler) and for the throw-away engines that stop an orphan's replicas.
//
// Ownership: borrows the ledger, the GPU monitor and the store (they outlive it); owns the
// Slurm clusters the services share listings through, so it must outlive every slot it made.
// Thread-safety: not thread-safe; the daemon calls it with loop_mu_ held.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "core/result.h"
#include "daemon/service_slot.h"
#include "gpumon/monitor.h"
#include "orch/local_process_orchestrator.h"
#include "orch/serial_calls.h"
#include "orch/service_orchestrator.h"
#include "orch/slurm_shared_listing.h"
#include "scale/tick_interval.h"
#include "serve_config/daemon_config.h"
#include "store/store.h"

namespace gpuscale::daemon {

// The engines' settings (DaemonOptions' and the config's state_dir).
struct ServiceFactoryOptions {
  std::string state_dir;  // replica markers, logs and job scripts go under it
  Seconds probe_interval = scale::kDefaultProbeInterval;
  Seconds health_interval{10};
  Seconds restart_backoff_initial{1};
  Seconds restart_backoff_max{60};
  Seconds stop_grace{10};
  orch::SerialCalls::Mode engine_calls = orch::SerialCalls::Mode::kThread;
};

class ServiceFactory {
 public:
  ServiceFactory(ServiceFactoryOptions options, alloc::LeaseLedger& ledger, gpu::Monitor& monitor,
                 store::Store& store)
      : options_(std::move(options)), ledger_(ledger), monitor_(monitor), store_(store) {}
  ServiceFactory(const ServiceFactory&) = delete;
  ServiceFactory& operator=(const ServiceFactory&) = delete;

  // A slot for `service`: its engine and runtimes, its policy from the spec or from the
  // rules stored for it, and its creation time from its store row (else `now`). Errors:
  // the policy's, the engine's (an unreadable Slurm token file: kInvalidArgument naming the
  // field), a disaggregated service's naming disaggregated.<role>.<field>.
  Result<std::unique_ptr<ServiceSlot>> MakeSlot(const ServiceConfig& service, Seconds now);
  // The service's engine alone (local processes, Slurm jobs or a fleet, by service.engine).
  Result<std::unique_ptr<orch::ServiceOrchestrator>> MakeOrchestrator(const ServiceConfig& service);

 private:
  Result<std::unique_ptr<orch::LocalProcessOrchestrator>> MakeLocalOrchestrator(
      const ServiceConfig& service);
  // A mixed-fleet service's engine (service.variants): one local engine per variant, priced
  // from the inventory. Errors name variants[i].gpu_type.
  Result<std::unique_ptr<orch::ServiceOrchestrator>> MakeVariantOrchestrator(
      const ServiceConfig& service);
  // A disaggregated service's orchestrator (its pools on a shared GPU budget) and runtimes,
  // into `slot`. Errors name disaggregated.<role>.<field>.
  Status MakePools(const ServiceConfig& service, ServiceSlot& slot);

  const ServiceFactoryOptions options_;
  alloc::LeaseLedger& ledger_;
  gpu::Monitor& monitor_;
  store::Store& store_;
  // The Slurm clusters services run on, so that services of one cluster share its listings
  // (thread-safe; its hubs live as long as a service's transport uses them).
  orch::SlurmClusters slurm_clusters_;
};

}  // namespace gpuscale::daemon
