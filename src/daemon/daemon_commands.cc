// Daemon: applying the API's queued changes at the start of a tick (daemon.h). Runs on the
// loop thread with loop_mu_ held, so orchestrators are touched by one thread only.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/service_policy.h"

namespace gpuscale::daemon {

void Daemon::ApplyCommands(Seconds now) {
  std::vector<Command> commands;
  {
    MutexLock lock(mu_);
    commands.swap(commands_);
  }
  std::vector<store::EventRow> events;
  std::vector<Command> deferred;
  for (Command& c : commands) {
    // A re-created service waits until the old one's replicas are gone: replica ids and
    // stored rows are per service name.
    const bool retiring = std::any_of(retiring_.begin(), retiring_.end(),
                                      [&](const auto& s) { return s->name == c.service; });
    if (c.kind == Command::Kind::kCreate && retiring) {
      deferred.push_back(std::move(c));
      continue;
    }
    ApplyCommand(c, now, events);
  }
  if (!deferred.empty()) {
    MutexLock lock(mu_);
    commands_.insert(commands_.begin(), std::make_move_iterator(deferred.begin()),
                     std::make_move_iterator(deferred.end()));
  }
  events_->Append(events);
}

void Daemon::ApplyCommand(Command& c, Seconds now, std::vector<store::EventRow>& events) {
  switch (c.kind) {
    case Command::Kind::kCreate:
    case Command::Kind::kUpdate:
      return ApplySpec(c, now, events);
    case Command::Kind::kDelete:
      return ApplyDelete(c, now, events);
    case Command::Kind::kRules:
      return ApplyRules(c, now, events);
    case Command::Kind::kManual:
      return ApplyManual(c, now, events);
  }
}

// A new or changed spec: a fresh orchestrator and runtime. On update the new orchestrator
// adopts the running replicas (same processes, same GPUs): their leases move to it, so they
// are released from the old one first.
void Daemon::ApplySpec(Command& c, Seconds now, std::vector<store::EventRow>& events) {
  Result<std::unique_ptr<Slot>> slot = MakeSlot(c.config, now);
  if (!slot) {
    events.push_back(MakeEvent(now, c.service, "service_error", "", slot.error().ToString()));
    return;
  }
  if (auto it = services_.find(c.service); it != services_.end()) {
    std::vector<orch::ReplicaRecord> records = it->second->orch->Records();
    for (const orch::ReplicaRecord& r : records) ledger_.ReleaseOwner(r.lease_owner);
    for (orch::OrchestratorEvent& e : it->second->orch->TakeEvents()) {
      events.push_back(MakeEvent(e.at, c.service, e.kind, e.replica, e.message));
    }
    (void)(*slot)->orch->Adopt(records, now);
    (*slot)->created_at = it->second->created_at;
  }
  if (c.manual && !c.config.disaggregated) {
    (void)(*slot)->runtimes.front()->SetManualReplicas(c.manual);
  }
  state_->ForgetDecision(c.service);  // a new spec's first decision is always recorded
  services_[c.service] = std::move(*slot);
  events.push_back(MakeEvent(
      now, c.service, c.kind == Command::Kind::kCreate ? "service_created" : "service_updated", "",
      "spec applied"));
}

void Daemon::ApplyDelete(Command& c, Seconds now, std::vector<store::EventRow>& events) {
  auto it = services_.find(c.service);
  if (it == services_.end()) return;
  it->second->deleting = true;  // its store row goes once the replicas are gone
  Retire(std::move(it->second), now);
  services_.erase(it);
  {
    MutexLock lock(mu_);
    metrics_.ForgetService(c.service);
  }
  events.push_back(MakeEvent(now, c.service, "service_deleted", "",
                             "replicas stopped; GPUs are released as they exit"));
}

void Daemon::ApplyRules(Command& c, Seconds now, std::vector<store::EventRow>& events) {
  auto it = services_.find(c.service);
  if (it == services_.end() || it->second->pooled != nullptr) return;  // pools keep theirs
  Result<std::vector<store::RuleRow>> rules = store_->rules().ListForService(c.service);
  Result<std::unique_ptr<scale::Policy>> policy =
      rules ? BuildServicePolicy(it->second->runtimes.front()->config(), *rules)
            : Result<std::unique_ptr<scale::Policy>>(Unexpected<Error>(rules.error()));
  if (!policy) {
    events.push_back(MakeEvent(now, c.service, "service_error", "",
                               "rules not applied: " + policy.error().ToString()));
    return;
  }
  it->second->runtimes.front()->ReplacePolicy(std::move(*policy));
  events.push_back(MakeEvent(now, c.service, "rules_changed", "",
                             fmt::format("{} rules in effect", rules->size())));
}

void Daemon::ApplyManual(Command& c, Seconds now, std::vector<store::EventRow>& events) {
  auto it = services_.find(c.service);
  if (it == services_.end() || it->second->pooled != nullptr) return;  // refused by the API
  if (Status s = it->second->runtimes.front()->SetManualReplicas(c.manual); !s) {
    events.push_back(MakeEvent(now, c.service, "service_error", "", s.error().ToString()));
    return;
  }
  events.push_back(MakeEvent(now, c.service, "manual_override", "",
                             c.manual ? fmt::format("desired replicas set to {}", *c.manual)
                                      : std::string("control handed back to the policy")));
}

}  // namespace gpuscale::daemon
