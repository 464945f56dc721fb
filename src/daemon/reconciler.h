// Reconciler: converges the running services on the desired ones at the start of each tick
// (daemon.h, "API changes"). Level-triggered, as a Kubernetes controller: what the API and
// reloads asked for is compared with what runs on every tick, so a change that could not be
// applied (the engine cannot be set up: an unreadable Slurm token file, say) is tried again
// on a later tick with backoff (ApplyRetry) without a second request, and shown meanwhile in
// the service's view (FailureOf) and as a service_error event when it first shows or changes.
//
// A service wanted but not running is created, one with an older spec rebuilt (its replicas
// adopted), one no longer wanted (or deleted and created again) retired; changed rules and
// manual overrides are applied.
//
// Ownership: owns the failures waiting for a retry; borrows the factory, ledger, store and
// state writer (the daemon's, which outlive it). Thread-safety: none; the daemon's loop thread
// calls it with loop_mu_ held, so orchestrators are touched by one thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "daemon/apply_retry.h"
#include "daemon/service_factory.h"
#include "daemon/service_slot.h"
#include "daemon_api/daemon_api.h"
#include "serve_config/daemon_config.h"
#include "state/state_writer.h"
#include "store/store.h"

namespace gpuscale::daemon {

// What the API and reloads asked one service to be (Daemon's desired services). Generations
// come from one counter, so each write is told apart from every other.
struct DesiredService {
  ServiceConfig config;       // validated
  std::optional<int> manual;  // PUT /replicas; nullopt = the policy decides
  uint64_t incarnation = 0;   // the create's generation: a deleted and re-created service differs
  uint64_t spec_generation = 0;   // the last create or update
  uint64_t rules_generation = 0;  // the last rule added or deleted
};

// One service's desired state as one tick reconciles it: copied from the desired services
// under the daemon's mu_, applied without it.
struct WantedService {
  std::string name;
  uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
  std::optional<int> manual;
  std::optional<ServiceConfig> config;  // only when the running slot's spec is older
};

class Reconciler {
 public:
  // `apply_retry_max`: the longest wait before a retry (DaemonOptions::apply_retry_max).
  // `log`: where a failure to apply is said (besides its event).
  Reconciler(ServiceFactory& factory, alloc::LeaseLedger& ledger, store::Store& store,
             state::StateWriter& state, Seconds apply_retry_max,
             std::function<void(std::string_view)> log)
      : factory_(factory),
        ledger_(ledger),
        store_(store),
        state_(state),
        apply_retry_max_(apply_retry_max),
        log_(std::move(log)) {}

  // Converges `services` on `wants` (every desired service, by name) at `now`: deletions
  // first (into `retiring`, their replicas stopping), then each wanted service's spec, rules
  // and manual override. `retry_initial`: the first wait after a failure (the loop interval).
  // Appends what happened to `events`; returns the names of the services deleted.
  std::vector<std::string> Run(std::vector<WantedService> wants, ServiceSlots& services,
                               RetiringSlots& retiring, Seconds now, Seconds retry_initial,
                               std::vector<store::EventRow>& events);
  // Why `service`'s desired state is not applied yet, and when it is tried again (nullopt:
  // nothing waits).
  std::optional<ApplyFailure> FailureOf(const std::string& service) const;

 private:
  // A desired state the loop could not apply yet, and its retry.
  struct Unapplied {
    uint64_t incarnation = 0, spec_generation = 0, rules_generation = 0;
    ApplyRetry retry;
  };
  // One tick's run: what every step below reads and appends to.
  struct Pass {
    ServiceSlots& services;
    RetiringSlots& retiring;
    Seconds now;
    Seconds retry_initial;
    std::vector<store::EventRow>& events;
  };

  void Converge(WantedService& want, Pass& pass);
  // Each returns false when it could not apply (the failure is recorded in unapplied_).
  bool ApplySpec(WantedService& want, Pass& pass);
  bool ApplyRules(WantedService& want, ServiceSlot& slot, Pass& pass);
  void ApplyManual(const WantedService& want, ServiceSlot& slot, Pass& pass);
  void ApplyDelete(const std::string& service, Pass& pass);
  void ApplyFailed(const WantedService& want, std::string message, Pass& pass);
  // " after N failed attempts" when `service` had failed to apply (the failure is dropped).
  std::string Recovered(const std::string& service);

  ServiceFactory& factory_;
  alloc::LeaseLedger& ledger_;
  store::Store& store_;
  state::StateWriter& state_;
  const Seconds apply_retry_max_;
  const std::function<void(std::string_view)> log_;
  // Desired services not applied yet, by name.
  std::map<std::string, Unapplied> unapplied_;
};

}  // namespace gpuscale::daemon
