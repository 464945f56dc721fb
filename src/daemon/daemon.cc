// Daemon: the DaemonApi requests and the desired state they write (daemon.h), and the config
// reload, which applies through the same create and update paths, so a reload and a PUT
// behave alike. Requests validate and persist at once, update the API's view and the
// service's desired state; the control loop converges on it from its next tick (orchestrators
// are driven by the loop thread only).
#include "daemon/daemon.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <utility>

#include "daemon/api_views.h"
#include "daemon/service_policy.h"
#include "daemon/service_validation.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

Unexpected<Error> NoService(const std::string& name) {
  return NotFound(fmt::format("no service named '{}' (GET /v1/services lists them)", name), "name");
}

}  // namespace

Result<gpu::GpuSnapshot> Daemon::Gpus() { return monitor_->Snapshot(); }

gpu::ScoreWeights Daemon::ScoreWeights() const { return config_.gpu.backend.weights; }

std::vector<gpu::HistoryPoint> Daemon::GpuHistory(Seconds window) {
  const Seconds since = clock_.Now() - window;
  std::vector<gpu::HistoryPoint> points = monitor_->History();
  std::erase_if(points, [&](const gpu::HistoryPoint& p) { return p.taken_at < since; });
  return points;
}

std::vector<ServiceView> Daemon::ListServices() {
  MutexLock lock(mu_);
  return ListOfViews();
}

std::vector<ServiceView> Daemon::ListOfViews() const {
  std::vector<ServiceView> views;
  views.reserve(views_.size());
  for (const auto& [name, view] : views_) views.push_back(view);
  return views;
}

std::shared_ptr<const std::vector<ServiceView>> Daemon::ServicesSnapshot() {
  MutexLock lock(mu_);
  if (!views_list_) views_list_ = std::make_shared<const std::vector<ServiceView>>(ListOfViews());
  return views_list_;
}

Result<ServiceView> Daemon::GetService(const std::string& name) {
  MutexLock lock(mu_);
  auto it = views_.find(name);
  if (it == views_.end()) return NoService(name);
  return it->second;
}

Result<ServiceView> Daemon::CreateService(const ServiceConfig& config) {
  GS_ASSIGN_OR_RETURN(ServiceConfig valid, ValidateService(config, {}, config_.state_dir));
  GS_RETURN_IF_ERROR(CheckFitsInventory(valid, monitor_->Snapshot()));
  const Seconds now = clock_.Now();
  MutexLock lock(mu_);
  if (views_.count(valid.name) != 0) {
    return FailedPrecondition(fmt::format("service '{}' already exists (PUT "
                                          "/v1/services/{} changes it)",
                                          valid.name, valid.name),
                              "name");
  }
  if (auto stuck = unstoppable_.find(valid.name); stuck != unstoppable_.end()) {
    return FailedPrecondition(
        fmt::format("service '{}' was deleted but its replicas could not be stopped ({}); "
                    "fix that and restart the daemon, which stops them, then create the "
                    "service again (or choose another name)",
                    valid.name, stuck->second),
        "name");
  }
  store::ServiceRow row = store::MakeServiceRow(valid.name, ServiceConfigToYaml(valid), now, now);
  GS_RETURN_IF_ERROR(ApiWrite("creating service " + valid.name, store_->services().Put(row)));
  ServiceView view;
  view.config = valid;
  view.spec_yaml = row.spec;
  view.policy_family = valid.policy_family;
  view.created_at = now;
  views_[valid.name] = view;
  views_list_.reset();
  const uint64_t generation = ++generation_;
  desired_[view.config.name] =
      DesiredService{std::move(valid), std::nullopt, generation, generation, 0};
  return view;
}

Result<ServiceView> Daemon::UpdateService(const ServiceConfig& config) {
  {
    MutexLock lock(mu_);
    if (views_.count(config.name) == 0) return NoService(config.name);
  }
  GS_ASSIGN_OR_RETURN(std::vector<store::RuleRow> rules,
                      store_->rules().ListForService(config.name));
  GS_ASSIGN_OR_RETURN(ServiceConfig valid, ValidateService(config, rules, config_.state_dir));
  GS_RETURN_IF_ERROR(CheckFitsInventory(valid, monitor_->Snapshot()));
  const Seconds now = clock_.Now();
  MutexLock lock(mu_);
  auto it = views_.find(valid.name);
  if (it == views_.end()) return NoService(valid.name);
  ServiceView& view = it->second;
  // Replica ids differ between the shapes ("<name>-<n>", "<name>.<role>-<n>"): the running
  // replicas could not be handed over.
  if (view.config.disaggregated.has_value() != valid.disaggregated.has_value()) {
    return FailedPrecondition(
        fmt::format("service '{}' cannot change between aggregated and disaggregated while it "
                    "runs; delete it and create it again",
                    valid.name),
        "disaggregated");
  }
  std::optional<int> manual = view.manual_replicas;
  if (manual &&
      (valid.disaggregated || *manual < valid.min_replicas || *manual > valid.max_replicas)) {
    manual.reset();  // outside the new bounds: the policy decides again
  }
  store::ServiceRow row = store::MakeServiceRow(valid.name, ServiceConfigToYaml(valid), now, now);
  row.manual_replicas = manual;
  GS_RETURN_IF_ERROR(ApiWrite("updating service " + valid.name, store_->services().Put(row)));
  view.config = valid;
  view.spec_yaml = row.spec;
  view.policy_family = valid.policy_family;
  view.manual_replicas = manual;
  views_list_.reset();
  DesiredService& desired = desired_[valid.name];
  desired.config = std::move(valid);
  desired.manual = manual;
  desired.spec_generation = ++generation_;
  return view;
}

Status Daemon::DeleteService(const std::string& name) {
  MutexLock lock(mu_);
  if (views_.count(name) == 0) return NoService(name);
  // The row (with the spec: which engine runs the replicas) stays, marked deleting, until the
  // replicas are gone, so a daemon restarted meanwhile still stops them (AdoptOrphans).
  GS_RETURN_IF_ERROR(ApiWrite("deleting service " + name, store_->services().MarkDeleting(name)));
  views_.erase(name);
  views_list_.reset();
  desired_.erase(name);
  return OkStatus();
}

Result<std::vector<RuleView>> Daemon::ListRules(const std::string& service) {
  {
    MutexLock lock(mu_);
    if (views_.count(service) == 0) return NoService(service);
  }
  GS_ASSIGN_OR_RETURN(std::vector<store::RuleRow> rows, store_->rules().ListForService(service));
  std::vector<RuleView> rules;
  rules.reserve(rows.size());
  for (const store::RuleRow& row : rows) rules.push_back(ToRuleView(row));
  return rules;
}

Result<RuleView> Daemon::AddRule(const std::string& service, const RuleView& rule) {
  MutexLock lock(mu_);
  auto it = views_.find(service);
  if (it == views_.end()) return NoService(service);
  const ServiceConfig& config = it->second.config;
  if (!config.policy_yaml.empty() || config.disaggregated) {
    return FailedPrecondition(
        fmt::format("service '{}' has a {} policy in its spec; stored rules apply only to "
                    "services without a `policy` block",
                    service, config.policy_family),
        "policy");
  }
  store::RuleRow row = ToRuleRow(rule);
  GS_RETURN_IF_ERROR(RuleFromRow(row, config));
  row.service = service;
  row.created_at = clock_.Now();
  Result<int64_t> id = store_->rules().Add(row);
  GS_RETURN_IF_ERROR(ApiWrite("adding a rule to " + service,
                              id ? OkStatus() : Status(Unexpected<Error>(id.error()))));
  desired_[service].rules_generation = ++generation_;
  GS_ASSIGN_OR_RETURN(store::RuleRow added, store_->rules().Get(*id));
  return ToRuleView(added);
}

Status Daemon::DeleteRule(const std::string& service, int64_t rule_id) {
  MutexLock lock(mu_);
  if (views_.count(service) == 0) return NoService(service);
  Result<store::RuleRow> rule = store_->rules().Get(rule_id);
  if (!rule || rule->service != service) {
    return NotFound(fmt::format("service '{}' has no rule {}", service, rule_id), "id");
  }
  GS_RETURN_IF_ERROR(ApiWrite("deleting a rule of " + service, store_->rules().Delete(rule_id)));
  desired_[service].rules_generation = ++generation_;
  return OkStatus();
}

Result<ServiceView> Daemon::SetDesiredReplicas(const std::string& service,
                                               std::optional<int> replicas) {
  MutexLock lock(mu_);
  auto it = views_.find(service);
  if (it == views_.end()) return NoService(service);
  const ServiceConfig& config = it->second.config;
  if (config.disaggregated) {
    return FailedPrecondition(
        fmt::format("service '{}' is disaggregated: each pool's policy sets its replicas (a "
                    "manual count would not say which pool)",
                    service),
        "replicas");
  }
  if (replicas && (*replicas < config.min_replicas || *replicas > config.max_replicas)) {
    return InvalidArgument(fmt::format("must be within the service's bounds [{}, {}], got {}",
                                       config.min_replicas, config.max_replicas, *replicas),
                           "replicas");
  }
  // Stored at once: the override survives a daemon restart (RestoreManual).
  GS_RETURN_IF_ERROR(ApiWrite("setting the replicas of " + service,
                              store_->services().SetManualReplicas(service, replicas)));
  it->second.manual_replicas = replicas;
  views_list_.reset();
  desired_[service].manual = replicas;
  return it->second;
}

Result<std::vector<ReplicaView>> Daemon::ListReplicas(const std::string& service) {
  MutexLock lock(mu_);
  if (views_.count(service) == 0) return NoService(service);
  std::vector<ReplicaView> views;
  auto it = replicas_.find(service);
  if (it == replicas_.end()) return views;
  views.reserve(it->second.size());
  for (const orch::ReplicaInfo& replica : it->second) views.push_back(ToReplicaView(replica));
  return views;
}

// Queues a spot notice for a replica of the last tick's views; the next tick, woken now,
// applies it (ApplyPreempts).
Result<PreemptNotice> Daemon::PreemptReplica(const std::string& replica,
                                             std::optional<Seconds> notice) {
  if (notice && !(notice->count() >= 0 && notice->count() <= 86400)) {
    return InvalidArgument("expected seconds in [0, 86400]", "notice_seconds");
  }
  Result<PreemptNotice> queued = [&]() -> Result<PreemptNotice> {
    MutexLock lock(mu_);
    for (const auto& [service, replicas] : replicas_) {
      auto r = std::find_if(replicas.begin(), replicas.end(),
                            [&](const orch::ReplicaInfo& info) { return info.id == replica; });
      if (r == replicas.end()) continue;
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
        if (!notice && v.name == r->variant) given = v.preemption_notice;
      }
      pending_preempts_.push_back({service, replica, given});
      return pending_preempts_.back();
    }
    return NotFound(
        fmt::format("no replica '{}' (GET /v1/services/{{name}}/replicas lists them)", replica),
        "replica");
  }();
  if (queued) Wake();  // applied by the next tick, not a loop interval later
  return queued;
}

Result<HistorySeries> Daemon::History(const std::string& service, std::optional<Seconds> from_at,
                                      std::optional<Seconds> to_at, Seconds step) {
  {
    MutexLock lock(mu_);
    if (views_.count(service) == 0) return NoService(service);
  }
  const Seconds to = to_at.value_or(clock_.Now());
  const Seconds from = from_at.value_or(to - Seconds{3600});
  return history_.Query(service, from, to, step);  // no tick yet: every step empty
}

std::vector<alloc::Lease> Daemon::Leases() { return ledger_.Leases(); }

Result<std::vector<EventView>> Daemon::Events(const EventQuery& query) {
  GS_ASSIGN_OR_RETURN(std::vector<store::EventRow> rows, events_->Query(ToStoreQuery(query)));
  std::vector<EventView> events;
  events.reserve(rows.size());
  for (const store::EventRow& row : rows) events.push_back(ToEventView(row));
  return events;
}

int64_t Daemon::WaitForEvents(int64_t after_id, Seconds timeout) {
  return events_->WaitAfter(after_id, timeout);
}

std::string Daemon::MetricsText() {
  Result<gpu::GpuSnapshot> gpus = monitor_->Snapshot();
  const size_t leases = ledger_.size();
  MutexLock lock(mu_);
  std::vector<ServiceGauges> gauges;
  for (const auto& [name, view] : views_) {
    ServiceGauges g;
    g.service = name;
    g.pending = view.pending_replicas;
    g.starting = view.replicas - view.pending_replicas - view.ready_replicas;
    g.ready = view.ready_replicas;
    g.draining = view.draining_replicas;
    g.desired = view.desired_replicas;
    gauges.push_back(std::move(g));
  }
  metrics_.set_store_errors(store_health_.error_count());
  std::string text =
      metrics_.Render(gpus ? &*gpus : nullptr, config_.gpu.backend.weights, gauges, leases);
  if (options_.gateway) text += options_.gateway->MetricsText();  // gpuscale_gateway_*
  return text;
}

namespace {
// The StoreHealth kind of API requests' writes (/readyz names the last that failed).
constexpr std::string_view kApiWrites = "API writes";
}  // namespace

Status Daemon::ApiWrite(std::string_view what, Status written) {
  if (written) {
    store_health_.Written(kApiWrites);
  } else if (written.error().code == ErrorCode::kUnavailable) {  // not a constraint or a bug
    store_health_.Failed(what, written.error(), kApiWrites);
  }
  return written;
}

void Daemon::ProbeStore() {
  if (!store_health_.AwaitsProbe()) return;
  // A failed probe is not logged again: /readyz already names the write that failed.
  if (store_->ProbeWrite()) store_health_.ProbeSucceeded();
}

Status Daemon::Ready() {
  MutexLock lock(mu_);
  if (!first_tick_done_) {
    return Unavailable("state loaded; waiting for the first control tick");
  }
  if (std::vector<std::string> failures = store_health_.Failures(); !failures.empty()) {
    return Unavailable(fmt::format(
        "the state database cannot be written ({}); replicas keep running, but state may be "
        "lost until these writes succeed again",
        fmt::join(failures, "; ")));
  }
  return OkStatus();
}

Result<task::TaskRecord> Daemon::SubmitTask(task::TaskDefinition definition,
                                            std::string source_text) {
  return tasks_.Submit(std::move(definition), std::move(source_text));
}

std::vector<task::TaskRecord> Daemon::ListTasks() { return tasks_.ListTasks(); }

Result<task::TaskRecord> Daemon::GetTask(int64_t id) { return tasks_.GetTask(id); }

Result<task::TaskRecord> Daemon::CancelTask(int64_t id) { return tasks_.CancelTask(id); }

Result<std::vector<task::ExperimentRecord>> Daemon::ListExperiments(int64_t task_id) {
  return tasks_.ListExperiments(task_id);
}

Result<task::ExperimentRecord> Daemon::GetExperiment(int64_t id) {
  return tasks_.GetExperiment(id);
}

// The sections read afresh where they are used: the PromQL server, the scrape cutoff and the
// retention (under loop_mu_, which the tick holds), the task scheduler's tuning
// (TaskManager::Retune) and the loop interval (under mu_, which the loop holds to wait).
std::vector<std::string> Daemon::ApplyLiveSections(const DaemonConfig& reread) {
  std::vector<std::string> applied;
  bool retune = false;
  {
    MutexLock loop_lock(loop_mu_);
    if (config_.prometheus != reread.prometheus) {
      config_.prometheus = reread.prometheus;
      applied.push_back("prometheus");
    }
    if (config_.scrape != reread.scrape) {
      config_.scrape = reread.scrape;  // read by the next tick's collect
      applied.push_back("scrape");
    }
    if (config_.retention != reread.retention) {
      config_.retention = reread.retention;  // read by the next tick's persist phase
      applied.push_back("retention");
    }
    if (config_.tasks != reread.tasks) {
      config_.tasks = reread.tasks;  // only OpenTasks reads it otherwise
      retune = true;
      applied.push_back("tasks");
    }
  }
  if (retune) {  // takes the task manager's own locks: none of ours held
    tasks_.Retune({reread.tasks.recheck_interval, reread.tasks.max_head_skips,
                   reread.tasks.stop_grace.value_or(options_.stop_grace)});
  }
  MutexLock lock(mu_);
  if (config_.loop_interval != reread.loop_interval) {
    config_.loop_interval = reread.loop_interval;
    applied.push_back("loop_interval_seconds");
  }
  return applied;
}

ReloadReport Daemon::Reload(const Result<DaemonConfig>& reread) {
  ReloadReport report;
  const Seconds now = clock_.Now();
  if (!reread) {
    report.applied = false;
    report.errors.push_back(reread.error().ToString());
    PublishEvents({state::MakeEvent(now, "", EventKind::kConfigReloadFailed, "",
                                    FormatReloadReport(report))});
    return report;
  }
  // First, so that the services created or updated below query the new server from the start.
  report.applied_live = ApplyLiveSections(*reread);
  std::set<std::string> named;
  for (size_t i = 0; i < reread->services.size(); ++i) {
    const ServiceConfig& service = reread->services[i];
    named.insert(service.name);
    Result<ServiceView> current = GetService(service.name);
    if (current && current->spec_yaml == ServiceConfigToYaml(service)) {
      report.unchanged.push_back(service.name);
      continue;
    }
    Result<ServiceView> applied = current ? UpdateService(service) : CreateService(service);
    if (!applied) {
      Error e = applied.error();
      if (!e.field.empty()) e.field = fmt::format("services[{}].{}", i, e.field);
      report.errors.push_back(
          fmt::format("service '{}' left as it was: {}", service.name, e.ToString()));
      continue;
    }
    (current ? report.updated : report.created).push_back(service.name);
  }
  for (const ServiceView& view : ListServices()) {
    if (named.count(view.config.name) == 0) report.kept.push_back(view.config.name);
  }
  report.needs_restart = SectionsNeedingRestart(config_, *reread);
  PublishEvents(
      {state::MakeEvent(now, "", EventKind::kConfigReloaded, "", FormatReloadReport(report))});
  return report;
}

}  // namespace gpuscale::daemon
