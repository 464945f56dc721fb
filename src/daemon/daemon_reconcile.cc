// Daemon: converging the running services on the desired ones at the start of each tick
// (daemon.h, "API changes"). Level-triggered: what the API and reloads asked for is compared
// with what runs on every tick, so a change that could not be applied is tried again without
// a second request. Runs on the loop thread with loop_mu_ held, so orchestrators are touched
// by one thread only.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/service_policy.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

std::string Attempts(int failures) {
  return fmt::format("{} failed attempt{}", failures, failures == 1 ? "" : "s");
}

}  // namespace

std::vector<Daemon::Want> Daemon::Wanted(Seconds& retry_initial) {
  MutexLock lock(mu_);
  retry_initial = config_.loop_interval;  // a reload sets it under mu_
  std::vector<Want> wants;
  wants.reserve(desired_.size());
  for (const auto& [name, d] : desired_) {
    Want w{name, d.incarnation, d.spec_generation, d.rules_generation, d.manual, std::nullopt};
    auto it = services_.find(name);
    // Copied only when it must be applied: the loop reconciles every service every tick.
    if (it == services_.end() || it->second->incarnation != d.incarnation ||
        it->second->spec_generation != d.spec_generation) {
      w.config = d.config;
    }
    wants.push_back(std::move(w));
  }
  return wants;
}

void Daemon::Reconcile(Seconds now, std::vector<store::EventRow>& events) {
  Seconds retry_initial{0};
  std::vector<Want> wants = Wanted(retry_initial);
  std::set<std::string> wanted;
  for (const Want& w : wants) wanted.insert(w.name);
  // Deleted services first, and those deleted and created again (another incarnation): the
  // new one starts once the old one's replicas are gone (ApplySpec).
  std::vector<std::string> gone;
  for (const auto& [name, slot] : services_) {
    if (wanted.count(name) == 0) gone.push_back(name);
  }
  for (const Want& w : wants) {
    auto it = services_.find(w.name);
    if (it != services_.end() && it->second->incarnation != w.incarnation) gone.push_back(w.name);
  }
  for (const std::string& name : gone) ApplyDelete(name, now, events);
  std::erase_if(unapplied_, [&](const auto& u) { return wanted.count(u.first) == 0; });
  for (Want& w : wants) Converge(w, now, retry_initial, events);
}

void Daemon::Converge(Want& w, Seconds now, Seconds retry_initial,
                      std::vector<store::EventRow>& events) {
  if (auto u = unapplied_.find(w.name); u != unapplied_.end()) {
    const Unapplied& failed = u->second;
    const bool same = failed.incarnation == w.incarnation &&
                      failed.spec_generation == w.spec_generation &&
                      failed.rules_generation == w.rules_generation;
    if (same && !failed.retry.Due(now)) return;  // backing off
  }
  if (w.config && !ApplySpec(w, now, retry_initial, events)) return;
  auto it = services_.find(w.name);
  if (it == services_.end()) return;  // waiting for the old incarnation's replicas to go
  Slot& slot = *it->second;
  if (slot.rules_generation != w.rules_generation &&
      !ApplyRules(w, slot, now, retry_initial, events)) {
    return;
  }
  ApplyManual(w, slot, now, retry_initial, events);
}

void Daemon::ApplyFailed(const Want& w, std::string message, Seconds now, Seconds retry_initial,
                         std::vector<store::EventRow>& events) {
  Unapplied& u = unapplied_[w.name];
  if (u.incarnation != w.incarnation || u.spec_generation != w.spec_generation ||
      u.rules_generation != w.rules_generation) {
    u = Unapplied{w.incarnation, w.spec_generation, w.rules_generation, ApplyRetry()};
  }
  if (!u.retry.Failed(message, now, retry_initial, options_.apply_retry_max)) return;
  const std::string text = fmt::format("{} (tried again in {:.3g} s, then with backoff)", message,
                                       (u.retry.next_try() - now).count());
  Log(fmt::format("service '{}': {}", w.name, text));
  events.push_back(MakeEvent(now, w.name, EventKind::kServiceError, "", text));
}

// A new or changed spec: a fresh orchestrator and runtime. On update the new orchestrator
// adopts the running replicas (same processes, same GPUs): their leases move to it, so they
// are released from the old one first.
bool Daemon::ApplySpec(Want& w, Seconds now, Seconds retry_initial,
                       std::vector<store::EventRow>& events) {
  auto it = services_.find(w.name);
  const bool retiring = std::any_of(retiring_.begin(), retiring_.end(),
                                    [&](const auto& s) { return s->name == w.name; });
  // Replica ids and stored rows are per service name: a re-created service waits.
  if (it == services_.end() && retiring) return false;
  Result<std::unique_ptr<Slot>> made = MakeSlot(*w.config, now);
  if (!made) {
    ApplyFailed(w, "spec not applied: " + made.error().ToString(), now, retry_initial, events);
    return false;
  }
  Slot& slot = **made;
  slot.incarnation = w.incarnation;
  slot.spec_generation = w.spec_generation;
  slot.rules_generation = w.rules_generation;  // MakeSlot read the rules after w was taken
  const bool update = it != services_.end();
  if (update) {
    std::vector<orch::ReplicaRecord> records = it->second->orch->Records();
    for (const orch::ReplicaRecord& r : records) ledger_.ReleaseOwner(r.lease_owner);
    for (orch::OrchestratorEvent& e : it->second->orch->TakeEvents()) {
      events.push_back(MakeEvent(e.at, w.name, e.kind, e.replica, e.message));
    }
    for (const std::string& error : slot.orch->Adopt(records, now).errors) {
      events.push_back(MakeEvent(now, w.name, EventKind::kServiceError, "",
                                 "adopting a replica of the previous spec: " + error));
    }
    slot.created_at = it->second->created_at;
  }
  if (w.manual && slot.pooled == nullptr) {
    // Kept across the rebuild without an event. Not lost when refused: ApplyManual, next in
    // Converge, finds the override unset, tries again and reports the error.
    const Status kept = slot.runtimes.front()->SetManualReplicas(w.manual);
    (void)kept;
  }
  std::string message = "spec applied";
  if (auto u = unapplied_.find(w.name); u != unapplied_.end()) {
    message += " after " + Attempts(u->second.retry.failures());
    unapplied_.erase(u);
  }
  state_->ForgetDecision(w.name);  // a new spec's first decision is always recorded
  services_[w.name] = std::move(*made);
  events.push_back(MakeEvent(
      now, w.name, update ? EventKind::kServiceUpdated : EventKind::kServiceCreated, "", message));
  return true;
}

void Daemon::ApplyDelete(const std::string& service, Seconds now,
                         std::vector<store::EventRow>& events) {
  auto it = services_.find(service);
  if (it == services_.end()) return;
  it->second->deleting = true;  // its store row goes once the replicas are gone
  Retire(std::move(it->second), now);
  services_.erase(it);
  {
    MutexLock lock(mu_);
    metrics_.ForgetService(service);
  }
  events.push_back(MakeEvent(now, service, EventKind::kServiceDeleted, "",
                             "replicas stopped; GPUs are released as they exit"));
}

bool Daemon::ApplyRules(Want& w, Slot& slot, Seconds now, Seconds retry_initial,
                        std::vector<store::EventRow>& events) {
  if (slot.pooled != nullptr) {  // pools keep their policies (AddRule refuses them)
    slot.rules_generation = w.rules_generation;
    return true;
  }
  Result<std::vector<store::RuleRow>> rules = store_->rules().ListForService(w.name);
  Result<std::unique_ptr<scale::Policy>> policy =
      rules ? BuildServicePolicy(slot.runtimes.front()->config(), *rules)
            : Result<std::unique_ptr<scale::Policy>>(Unexpected<Error>(rules.error()));
  if (!policy) {
    ApplyFailed(w, "rules not applied: " + policy.error().ToString(), now, retry_initial, events);
    return false;
  }
  slot.runtimes.front()->ReplacePolicy(std::move(*policy));
  slot.rules_generation = w.rules_generation;
  std::string message = fmt::format("{} rules in effect", rules->size());
  if (auto u = unapplied_.find(w.name); u != unapplied_.end()) {
    message += " after " + Attempts(u->second.retry.failures());
    unapplied_.erase(u);
  }
  events.push_back(MakeEvent(now, w.name, EventKind::kRulesChanged, "", message));
  return true;
}

void Daemon::ApplyManual(const Want& w, Slot& slot, Seconds now, Seconds retry_initial,
                         std::vector<store::EventRow>& events) {
  if (slot.pooled != nullptr) return;  // the API refuses an override of pools
  ServiceRuntime& runtime = *slot.runtimes.front();
  if (runtime.manual_replicas() == w.manual) return;
  if (Status s = runtime.SetManualReplicas(w.manual); !s) {
    // The API checked the bounds of the spec now running, so this is not expected; retried
    // with backoff like a spec, and shown the same way.
    ApplyFailed(w, "manual override not applied: " + s.error().ToString(), now, retry_initial,
                events);
    return;
  }
  unapplied_.erase(w.name);
  events.push_back(MakeEvent(now, w.name, EventKind::kManualOverride, "",
                             w.manual ? fmt::format("desired replicas set to {}", *w.manual)
                                      : std::string("control handed back to the policy")));
}

void Daemon::ShowUnapplied(std::map<std::string, ServiceView>& views) {
  std::erase_if(views,
                [&](const auto& v) GS_REQUIRES(mu_) { return desired_.count(v.first) == 0; });
  for (const auto& [name, d] : desired_) {
    auto api = views_.find(name);  // what the API request that wrote `d` showed
    auto slot = services_.find(name);
    const bool running = slot != services_.end() && slot->second->incarnation == d.incarnation;
    if (!running) {
      if (api != views_.end()) views[name] = api->second;
    } else if (slot->second->spec_generation != d.spec_generation && api != views_.end()) {
      // The replicas of the spec now running, under the spec asked for.
      ServiceView& view = views[name];
      view.config = api->second.config;
      view.spec_yaml = api->second.spec_yaml;
      view.policy_family = api->second.policy_family;
    }
    auto view = views.find(name);
    if (view == views.end()) continue;
    view->second.manual_replicas = d.manual;  // set by the API, applied by the next tick
    if (auto u = unapplied_.find(name); u != unapplied_.end()) {
      const ApplyRetry& retry = u->second.retry;
      view->second.apply_failure =
          ApplyFailure{retry.message(), retry.failures(), retry.next_try()};
    }
  }
}

}  // namespace gpuscale::daemon
