#include "daemon/reconciler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "daemon/service_policy.h"
#include "state/event_log.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

std::string Attempts(int failures) {
  return fmt::format("{} failed attempt{}", failures, failures == 1 ? "" : "s");
}

}  // namespace

std::vector<std::string> Reconciler::Run(std::vector<WantedService> wants, ServiceSlots& services,
                                         RetiringSlots& retiring, Seconds now,
                                         Seconds retry_initial,
                                         std::vector<store::EventRow>& events) {
  Pass pass{services, retiring, now, retry_initial, events};
  std::set<std::string> wanted;
  for (const WantedService& w : wants) wanted.insert(w.name);
  // Deleted services first, and those deleted and created again (another incarnation): the
  // new one starts once the old one's replicas are gone (ApplySpec).
  std::vector<std::string> gone;
  for (const auto& [name, slot] : services) {
    if (wanted.count(name) == 0) gone.push_back(name);
  }
  for (const WantedService& w : wants) {
    auto it = services.find(w.name);
    if (it != services.end() && it->second->incarnation != w.incarnation) gone.push_back(w.name);
  }
  std::vector<std::string> deleted;
  for (const std::string& name : gone) {
    if (services.count(name) == 0) continue;
    ApplyDelete(name, pass);
    deleted.push_back(name);
  }
  std::erase_if(unapplied_, [&](const auto& u) { return wanted.count(u.first) == 0; });
  for (WantedService& w : wants) Converge(w, pass);
  return deleted;
}

std::optional<ApplyFailure> Reconciler::FailureOf(const std::string& service) const {
  auto u = unapplied_.find(service);
  if (u == unapplied_.end()) return std::nullopt;
  const ApplyRetry& retry = u->second.retry;
  return ApplyFailure{retry.message(), retry.failures(), retry.next_try()};
}

void Reconciler::Converge(WantedService& w, Pass& pass) {
  if (auto u = unapplied_.find(w.name); u != unapplied_.end()) {
    const Unapplied& failed = u->second;
    const bool same = failed.incarnation == w.incarnation &&
                      failed.spec_generation == w.spec_generation &&
                      failed.rules_generation == w.rules_generation;
    if (same && !failed.retry.Due(pass.now)) return;  // backing off
  }
  if (w.config && !ApplySpec(w, pass)) return;
  auto it = pass.services.find(w.name);
  if (it == pass.services.end()) return;  // waiting for the old incarnation's replicas to go
  ServiceSlot& slot = *it->second;
  if (slot.rules_generation != w.rules_generation && !ApplyRules(w, slot, pass)) return;
  ApplyManual(w, slot, pass);
}

void Reconciler::ApplyFailed(const WantedService& w, std::string message, Pass& pass) {
  Unapplied& u = unapplied_[w.name];
  if (u.incarnation != w.incarnation || u.spec_generation != w.spec_generation ||
      u.rules_generation != w.rules_generation) {
    u = Unapplied{w.incarnation, w.spec_generation, w.rules_generation, ApplyRetry()};
  }
  if (!u.retry.Failed(message, pass.now, pass.retry_initial, apply_retry_max_)) return;
  const std::string text = fmt::format("{} (tried again in {:.3g} s, then with backoff)", message,
                                       (u.retry.next_try() - pass.now).count());
  log_(fmt::format("service '{}': {}", w.name, text));
  pass.events.push_back(state::MakeEvent(pass.now, w.name, EventKind::kServiceError, "", text));
}

std::string Reconciler::Recovered(const std::string& service) {
  auto u = unapplied_.find(service);
  if (u == unapplied_.end()) return "";
  const std::string after = " after " + Attempts(u->second.retry.failures());
  unapplied_.erase(u);
  return after;
}

// A new or changed spec: a fresh orchestrator and runtime. On update the new orchestrator
// adopts the running replicas (same processes, same GPUs): their leases move to it, so they
// are released from the old one first.
bool Reconciler::ApplySpec(WantedService& w, Pass& pass) {
  const Seconds now = pass.now;
  auto it = pass.services.find(w.name);
  const bool retiring = std::any_of(pass.retiring.begin(), pass.retiring.end(),
                                    [&](const auto& s) { return s->name == w.name; });
  // Replica ids and stored rows are per service name: a re-created service waits.
  if (it == pass.services.end() && retiring) return false;
  Result<std::unique_ptr<ServiceSlot>> made = factory_.MakeSlot(*w.config, now);
  if (!made) {
    ApplyFailed(w, "spec not applied: " + made.error().ToString(), pass);
    return false;
  }
  ServiceSlot& slot = **made;
  slot.incarnation = w.incarnation;
  slot.spec_generation = w.spec_generation;
  slot.rules_generation = w.rules_generation;  // MakeSlot read the rules after w was taken
  const bool update = it != pass.services.end();
  if (update) {
    std::vector<orch::ReplicaRecord> records = it->second->orch->Records();
    for (const orch::ReplicaRecord& r : records) ledger_.ReleaseOwner(r.lease_owner);
    for (orch::OrchestratorEvent& e : it->second->orch->TakeEvents()) {
      pass.events.push_back(state::MakeEvent(e.at, w.name, e.kind, e.replica, e.message));
    }
    for (const std::string& error : slot.orch->Adopt(records, now).errors) {
      pass.events.push_back(state::MakeEvent(now, w.name, EventKind::kServiceError, "",
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
  const std::string message = "spec applied" + Recovered(w.name);
  state_.ForgetDecision(w.name);  // a new spec's first decision is always recorded
  pass.services[w.name] = std::move(*made);
  pass.events.push_back(state::MakeEvent(
      now, w.name, update ? EventKind::kServiceUpdated : EventKind::kServiceCreated, "", message));
  return true;
}

void Reconciler::ApplyDelete(const std::string& service, Pass& pass) {
  auto it = pass.services.find(service);
  it->second->deleting = true;  // its store row goes once the replicas are gone
  it->second->StopAll(pass.now);
  pass.retiring.push_back(std::move(it->second));
  pass.services.erase(it);
  pass.events.push_back(state::MakeEvent(pass.now, service, EventKind::kServiceDeleted, "",
                                         "replicas stopped; GPUs are released as they exit"));
}

bool Reconciler::ApplyRules(WantedService& w, ServiceSlot& slot, Pass& pass) {
  if (slot.pooled != nullptr) {  // pools keep their policies (AddRule refuses them)
    slot.rules_generation = w.rules_generation;
    return true;
  }
  Result<std::vector<store::RuleRow>> rules = store_.rules().ListForService(w.name);
  Result<std::unique_ptr<scale::Policy>> policy =
      rules ? BuildServicePolicy(slot.runtimes.front()->config(), *rules)
            : Result<std::unique_ptr<scale::Policy>>(Unexpected<Error>(rules.error()));
  if (!policy) {
    ApplyFailed(w, "rules not applied: " + policy.error().ToString(), pass);
    return false;
  }
  slot.runtimes.front()->ReplacePolicy(std::move(*policy));
  slot.rules_generation = w.rules_generation;
  const std::string message = fmt::format("{} rules in effect", rules->size()) + Recovered(w.name);
  pass.events.push_back(state::MakeEvent(pass.now, w.name, EventKind::kRulesChanged, "", message));
  return true;
}

void Reconciler::ApplyManual(const WantedService& w, ServiceSlot& slot, Pass& pass) {
  if (slot.pooled != nullptr) return;  // the API refuses an override of pools
  ServiceRuntime& runtime = *slot.runtimes.front();
  if (runtime.manual_replicas() == w.manual) return;
  if (Status s = runtime.SetManualReplicas(w.manual); !s) {
    // The API checked the bounds of the spec now running, so this is not expected; retried
    // with backoff like a spec, and shown the same way.
    ApplyFailed(w, "manual override not applied: " + s.error().ToString(), pass);
    return;
  }
  unapplied_.erase(w.name);
  pass.events.push_back(state::MakeEvent(pass.now, w.name, EventKind::kManualOverride, "",
                                         w.manual
                                             ? fmt::format("desired replicas set to {}", *w.manual)
                                             : std::string("control handed back to the policy")));
}

}  // namespace gpuscale::daemon
