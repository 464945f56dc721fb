// Daemon: the DaemonApi requests and the desired state they write (daemon.h). Requests
// validate and persist at once, update the API's view and the service's Desired; the control
// loop converges on it from its next tick (orchestrators are driven by the loop thread only).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "daemon/api_views.h"
#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/service_policy.h"
#include "daemon/variant_prices.h"

namespace gpuscale::daemon {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
  return name[0] != '-' && std::all_of(name.begin(), name.end(), ok);
}

Unexpected<Error> NoService(const std::string& name) {
  return NotFound(fmt::format("no service named '{}' (GET /v1/services lists them)", name), "name");
}

}  // namespace

Result<ServiceConfig> Daemon::ValidatePools(const ServiceConfig& config) {
  for (int role = 0; role < 2; ++role) {
    const ServiceConfig pool = PoolServiceConfig(config, role);
    orch::LocalProcessConfig local;
    local.service = pool.name;
    local.command = pool.command;
    local.gpus_per_replica = pool.gpus_per_replica;
    local.state_dir = config_.state_dir;
    Status valid = orch::ValidateLocalProcessConfig(local);
    Result<std::unique_ptr<scale::Policy>> policy =
        valid ? BuildServicePolicy(pool, {})
              : Result<std::unique_ptr<scale::Policy>>(Unexpected<Error>(valid.error()));
    if (!policy) {
      Error e = policy.error();
      e.field = fmt::format("disaggregated.{}.{}", kPoolRoles[role], e.field);
      return Unexpected<Error>(std::move(e));
    }
  }
  if (Result<alloc::PoolBudget> budget = MakePoolBudget(*config.disaggregated); !budget) {
    Error e = budget.error();
    e.field = "disaggregated." + e.field;
    return Unexpected<Error>(std::move(e));
  }
  return config;
}

Result<ServiceConfig> Daemon::ValidateService(const ServiceConfig& config,
                                              const std::vector<store::RuleRow>& rules) {
  if (!ValidName(config.name)) {
    return InvalidArgument(fmt::format("expected [a-z0-9][a-z0-9-]{{0,62}}, got '{}'", config.name),
                           "name");
  }
  if (config.min_replicas < 0) return InvalidArgument("must be >= 0", "min_replicas");
  if (config.max_replicas < config.min_replicas) {
    return InvalidArgument(fmt::format("must be >= min_replicas ({}), got {}", config.min_replicas,
                                       config.max_replicas),
                           "max_replicas");
  }
  if (config.max_replicas > kMaxReplicasPerService) {
    return InvalidArgument(
        fmt::format("must be <= {}, got {}", kMaxReplicasPerService, config.max_replicas),
        "max_replicas");
  }
  if (config.disaggregated) return ValidatePools(config);
  orch::LocalProcessConfig local;
  local.service = config.name;
  local.command = config.command;
  local.gpus_per_replica = config.gpus_per_replica;
  local.state_dir = config_.state_dir;
  GS_RETURN_IF_ERROR(orch::ValidateLocalProcessConfig(local));
  GS_ASSIGN_OR_RETURN(std::unique_ptr<scale::Policy> policy, BuildServicePolicy(config, rules));
  ServiceConfig valid = config;
  valid.policy_family = std::string(policy->Family());
  return valid;
}

Status Daemon::CheckFitsInventory(const ServiceConfig& config) {
  if (config.disaggregated) {
    for (int role = 0; role < 2; ++role) {
      if (Status fits = CheckFitsInventory(PoolServiceConfig(config, role)); !fits) {
        Error e = fits.error();
        e.field = fmt::format("disaggregated.{}.{}", kPoolRoles[role], e.field);
        return Unexpected<Error>(std::move(e));
      }
    }
    return OkStatus();
  }
  if (config.engine != "local" || config.gpus_per_replica <= 0) return OkStatus();
  Result<gpu::GpuSnapshot> snapshot = monitor_->Snapshot();
  if (!snapshot) return OkStatus();
  // A mixed fleet's counts are in capacity, not GPUs: each variant needs its type, priced.
  if (!config.variants.empty()) {
    Result<std::vector<orch::VariantPlacement>> priced = PriceVariants(config, *snapshot, "");
    if (!priced) return ResourceExhausted(priced.error().message, priced.error().field);
    return OkStatus();
  }
  // A typed service fits only on GPUs of its type; "this machine's inventory" means those.
  const std::string of_type =
      config.gpu_type.empty() ? "" : fmt::format(" of type {}", config.gpu_type);
  const int64_t gpus = std::count_if(
      snapshot->gpus.begin(), snapshot->gpus.end(),
      [&](const gpu::GpuInfo& g) { return config.gpu_type.empty() || g.type == config.gpu_type; });
  if (gpus == 0) {
    return ResourceExhausted(fmt::format("this machine's inventory has no GPU{}; it has {}",
                                         of_type, alloc::CountsByType(*snapshot)),
                             "gpu_type");
  }
  if (config.gpus_per_replica > gpus) {
    return ResourceExhausted(
        fmt::format("a replica needs {} GPUs{}; this machine's inventory has {}, so it would "
                    "wait for ever",
                    config.gpus_per_replica, of_type, gpus),
        "gpus_per_replica");
  }
  const int64_t floor = static_cast<int64_t>(config.min_replicas) * config.gpus_per_replica;
  if (floor > gpus) {
    return ResourceExhausted(
        fmt::format("min_replicas {} x gpus_per_replica {} = {} GPUs{}; this machine's inventory "
                    "has {}",
                    config.min_replicas, config.gpus_per_replica, floor, of_type, gpus),
        "min_replicas");
  }
  return OkStatus();
}

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
  GS_ASSIGN_OR_RETURN(ServiceConfig valid, ValidateService(config, {}));
  GS_RETURN_IF_ERROR(CheckFitsInventory(valid));
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
  desired_[view.config.name] = Desired{std::move(valid), std::nullopt, generation, generation, 0};
  return view;
}

Result<ServiceView> Daemon::UpdateService(const ServiceConfig& config) {
  {
    MutexLock lock(mu_);
    if (views_.count(config.name) == 0) return NoService(config.name);
  }
  GS_ASSIGN_OR_RETURN(std::vector<store::RuleRow> rules,
                      store_->rules().ListForService(config.name));
  GS_ASSIGN_OR_RETURN(ServiceConfig valid, ValidateService(config, rules));
  GS_RETURN_IF_ERROR(CheckFitsInventory(valid));
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
  Desired& desired = desired_[valid.name];
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

}  // namespace gpuscale::daemon
