// Daemon: mixed-fleet services (ServiceConfig::variants, issue 47): their engines, one local
// engine per variant under an orch::VariantOrchestrator, and the spot notices the API queues
// for them (daemon.h).
#include <fmt/format.h>

#include <utility>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/variant_prices.h"

namespace gpuscale::daemon {

Result<std::unique_ptr<orch::ServiceOrchestrator>> Daemon::MakeVariantOrchestrator(
    const ServiceConfig& service) {
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot gpus, monitor_->Snapshot());
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
  gpu::Monitor* monitor = monitor_.get();
  alloc::LeaseLedger* ledger = &ledger_;
  orch::FreeGpuCounts free = [monitor, ledger](Seconds) {
    Result<gpu::GpuSnapshot> now = monitor->Snapshot();
    return now ? UnleasedGpusByType(*now, *ledger) : std::map<std::string, int>{};
  };
  return std::unique_ptr<orch::ServiceOrchestrator>(std::make_unique<orch::VariantOrchestrator>(
      std::move(placements), std::move(pools), std::move(free)));
}

Result<PreemptNotice> Daemon::PreemptReplica(const std::string& replica,
                                             std::optional<Seconds> notice) {
  if (notice && !(notice->count() >= 0 && notice->count() <= 86400)) {
    return InvalidArgument("expected seconds in [0, 86400]", "notice_seconds");
  }
  Result<PreemptNotice> taken = QueuePreempt(replica, notice);
  if (taken) Wake();  // applied by the next tick, not a loop interval later
  return taken;
}

Result<PreemptNotice> Daemon::QueuePreempt(const std::string& replica,
                                           std::optional<Seconds> notice) {
  MutexLock lock(mu_);
  for (const auto& [service, replicas] : replicas_) {
    for (const orch::ReplicaInfo& r : replicas) {
      if (r.id != replica) continue;
      auto view = views_.find(service);
      if (view == views_.end() || view->second.config.variants.empty()) {
        return FailedPrecondition(
            fmt::format("service '{}' lists no variants: a spot notice needs a variant to "
                        "replace the replica on",
                        service),
            "replica");
      }
      Seconds given = notice.value_or(Seconds{120});
      for (const VariantConfig& v : view->second.config.variants) {
        if (!notice && v.name == r.variant) given = v.preemption_notice;
      }
      pending_preempts_.push_back({service, replica, given});
      return pending_preempts_.back();
    }
  }
  return NotFound(
      fmt::format("no replica '{}' (GET /v1/services/{{name}}/replicas lists them)", replica),
      "replica");
}

void Daemon::ApplyPreempts(Seconds now, std::vector<store::EventRow>& events) {
  std::vector<PreemptNotice> notices;
  {
    MutexLock lock(mu_);
    notices.swap(pending_preempts_);
  }
  for (const PreemptNotice& n : notices) {
    auto it = services_.find(n.service);
    Status applied = it == services_.end() || it->second->variants == nullptr
                         ? NotFound("the service is gone or lists no variants now")
                         : it->second->variants->Preempt(n.replica, n.notice, now);
    if (!applied) {
      events.push_back(MakeEvent(now, n.service, events::EventKind::kActionFailed, n.replica,
                                 "spot notice not applied: " + applied.error().ToString()));
    }
  }
}

}  // namespace gpuscale::daemon
