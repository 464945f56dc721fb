// Daemon start-up: GPU backend, store, services, adoption of persisted replicas
// (daemon.h describes the order and why).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include "daemon/daemon.h"
#include "daemon/replica_processes.h"
#include "daemon/replica_rows.h"
#include "gpumon/backend_factory.h"
#include "orch/parallel.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

using events::EventKind;

Daemon::Daemon(DaemonConfig config, Clock& clock, DaemonOptions options)
    : config_(std::move(config)), clock_(clock), options_(std::move(options)) {}

Result<std::unique_ptr<Daemon>> Daemon::Open(DaemonConfig config, Clock& clock,
                                             DaemonOptions options) {
  if (!options.log) {
    options.log = [](std::string_view m) {
      std::fprintf(stderr, "gpuscale serve: %.*s\n", static_cast<int>(m.size()), m.data());
    };
  }
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(config), clock, std::move(options)));
  {
    // No other thread runs yet; held because OpenState builds the loop's state.
    MutexLock loop_lock(daemon->loop_mu_);
    GS_RETURN_IF_ERROR(daemon->OpenState());
    // Adopted replicas are routable before the first tick.
    if (daemon->options_.gateway) daemon->PublishRoutes(clock.Now());
  }
  if (daemon->options_.gateway) {
    // A request waiting for a service with no ready replica starts a tick at once.
    daemon->options_.gateway->SetDemandListener(
        [d = daemon.get()](const std::string&) { d->Wake(); });
  }
  return daemon;
}

Status Daemon::OpenState() {
  const Seconds now = clock_.Now();
  GS_ASSIGN_OR_RETURN(backend_, gpu::MakeBackend(config_.gpu.backend));
  if (backend_->Name() == "simulated") {  // leased GPUs show what emulated replicas report
    gpu_load_ = std::make_shared<gpu::GpuLoadBoard>();
    backend_ = std::make_unique<gpu::LoadedSimulatedBackend>(std::move(backend_), gpu_load_);
  }
  gpu::MonitorOptions monitor_options;
  monitor_options.cache_ttl = config_.gpu.cache_ttl;
  monitor_options.sample_interval = config_.gpu.sample_interval;
  monitor_ = std::make_unique<gpu::Monitor>(*backend_, clock_, monitor_options);
  if (config_.state_dir.empty()) return InvalidArgument("must not be empty", "state_dir");
  GS_ASSIGN_OR_RETURN(StateDirLock lock, StateDirLock::Acquire(config_.state_dir));
  state_lock_ = std::make_unique<StateDirLock>(std::move(lock));
  const std::string db_path = config_.state_dir + "/gpuscale.db";
  store::OpenOptions store_options;
  store_options.max_bytes = options_.store_max_bytes;
  GS_ASSIGN_OR_RETURN(store_, store::Store::Open(db_path, now, store_options));
  events_ = std::make_unique<state::EventLog>(store_->events(), store_health_);
  GS_RETURN_IF_ERROR(events_->Open());
  state_ =
      std::make_unique<state::StateWriter>(*store_, store_health_, options_.decision_heartbeat);
  retention_ = std::make_unique<state::HistoryRetention>(*store_);
  factory_ = std::make_unique<ServiceFactory>(
      ServiceFactoryOptions{config_.state_dir, options_.probe_interval, options_.health_interval,
                            options_.restart_backoff_initial, options_.restart_backoff_max,
                            options_.stop_grace, options_.engine_calls},
      ledger_, *monitor_, *store_);
  reconciler_ =
      std::make_unique<Reconciler>(*factory_, ledger_, *store_, *state_, options_.apply_retry_max,
                                   [this](std::string_view message) { Log(message); });
  // The state as it was at this start, for a restore after the database is damaged
  // (docs/operations.md). Without room for it the daemon still runs; the log says so.
  if (Status backup = store_->database().BackupTo(db_path + ".bak"); !backup) {
    options_.log(fmt::format("warning: {}", backup.error().message));
  }
  GS_ASSIGN_OR_RETURN(std::vector<ServiceConfig> services, LoadServices(now));
  std::vector<store::EventRow> events;
  for (size_t i = 0; i < services.size(); ++i) {
    Result<std::unique_ptr<ServiceSlot>> slot = factory_->MakeSlot(services[i], now);
    if (!slot) {
      Error e = slot.error();
      e.field = yaml::Join(fmt::format("services[{}]", i), e.field);
      return Unexpected<Error>(std::move(e));
    }
    RestoreManual(**slot, now, events);
    ServiceSlot& made = **slot;
    {
      MutexLock lock(mu_);  // what the loop converges on: what runs now
      const uint64_t generation = ++generation_;
      const std::optional<int> manual =
          made.pooled != nullptr ? std::nullopt : made.runtimes.front()->manual_replicas();
      desired_[made.name] = DesiredService{made.config, manual, generation, generation, generation};
      made.incarnation = made.spec_generation = made.rules_generation = generation;
    }
    services_[services[i].name] = std::move(*slot);
  }
  events_->Append(events);
  GS_RETURN_IF_ERROR(AdoptAll(now));
  GS_RETURN_IF_ERROR(OpenTasks());
  PublishViews(now);
  monitor_->Start();
  return OkStatus();
}

// Config services first (written to the store: the config wins), then API-created ones.
// Config services come before store ones so that index i in an error is services[i]. Rows
// marked deleting are no services: AdoptOrphans stops their replicas.
Result<std::vector<ServiceConfig>> Daemon::LoadServices(Seconds now) {
  std::vector<ServiceConfig> services = config_.services;
  std::set<std::string> names;
  for (const ServiceConfig& s : services) {
    names.insert(s.name);
    store::ServiceRow row;
    row.name = s.name;
    row.spec = ServiceConfigToYaml(s);
    row.created_at = now;
    row.updated_at = now;
    // The spec is the config's; a manual override set through the API stays.
    if (Result<store::ServiceRow> stored = store_->services().Get(s.name)) {
      row.manual_replicas = stored->manual_replicas;
    }
    GS_RETURN_IF_ERROR(store_->services().Put(row));
  }
  GS_ASSIGN_OR_RETURN(std::vector<store::ServiceRow> rows, store_->services().List());
  std::vector<store::EventRow> events;
  for (const store::ServiceRow& row : rows) {
    if (names.count(row.name) != 0 || row.deleting) continue;
    Result<ServiceConfig> parsed = ParseServiceConfigText(row.spec, "stored service " + row.name);
    if (!parsed) {
      // A spec this binary cannot read (written by another version): leave it in the store.
      Log(fmt::format("service '{}' skipped: {}", row.name, parsed.error().ToString()));
      events.push_back(state::MakeEvent(now, row.name, EventKind::kServiceSkipped, "",
                                        parsed.error().ToString()));
      continue;
    }
    services.push_back(std::move(*parsed));
  }
  events_->Append(events);
  return services;
}

// The manual override the API set before the restart (kept in the service's row). One the
// service's bounds no longer allow (the config changed meanwhile) is dropped, with an event.
void Daemon::RestoreManual(ServiceSlot& slot, Seconds now, std::vector<store::EventRow>& events) {
  Result<store::ServiceRow> row = store_->services().Get(slot.name);
  if (!row || !row->manual_replicas) return;
  const int manual = *row->manual_replicas;
  Status s = slot.pooled != nullptr
                 ? FailedPrecondition("a disaggregated service's pools have no manual count")
                 : slot.runtimes.front()->SetManualReplicas(manual);
  if (!s) {
    if (Status cleared = store_->services().SetManualReplicas(slot.name, std::nullopt); !cleared) {
      store_health_.Failed("clearing the manual override of " + slot.name, cleared.error());
    }
    events.push_back(
        state::MakeEvent(now, slot.name, EventKind::kManualOverride, "",
                         fmt::format("stored override of {} replicas dropped ({}); control "
                                     "handed back to the policy",
                                     manual, s.error().ToString())));
    return;
  }
  events.push_back(state::MakeEvent(
      now, slot.name, EventKind::kManualOverride, "",
      fmt::format("desired replicas kept at {} (set before the restart)", manual)));
}

// Stored leases the ledger no longer holds (adoption did not re-acquire them).
size_t Daemon::StaleLeaseCount() {
  Result<std::vector<store::LeaseRow>> stored = store_->leases().List();
  if (!stored) return 0;
  std::set<std::string> held;
  for (const alloc::Lease& l : ledger_.Leases()) held.insert(l.key);
  size_t stale = 0;
  for (const store::LeaseRow& lease : *stored) stale += held.count(lease.key) == 0 ? 1 : 0;
  return stale;
}

// Re-adopts what the previous daemon persisted, or, when its rows cannot be read, the
// replica processes marked for this state directory (replica_processes.h); see
// daemon.h.
Status Daemon::AdoptAll(Seconds now) {
  std::vector<store::EventRow> events;
  Result<std::vector<store::ReplicaRow>> rows = store_->replicas().List();
  if (!rows) {
    const Error unreadable = rows.error();
    rows = ReplicaRowsFromProcesses(config_.state_dir, unreadable, services_, now, events);
    if (!rows) return Unexpected<Error>(rows.error());
    Log(events.back().message);
    if (Status cleared = store_->replicas().DeleteAll(); !cleared) {
      store_health_.Failed("clearing the unreadable replicas table", cleared.error());
    }
  }
  std::map<std::string, std::vector<orch::ReplicaRecord>> records;
  std::vector<store::ReplicaRow> orphans;
  for (const store::ReplicaRow& row : *rows) {
    GS_ASSIGN_OR_RETURN(orch::ReplicaRecord record, ToReplicaRecord(row));
    if (services_.count(row.service) != 0) {
      records[row.service].push_back(std::move(record));
    } else {
      orphans.push_back(row);
    }
  }
  // Engines whose adoption touches only their own state (Slurm, fleet) adopt at the same
  // time, the others one by one; reports are then taken in the services' order.
  std::vector<ServiceSlot*> slots;
  std::vector<size_t> concurrent;
  for (auto& [name, slot] : services_) {
    if (slot->orch->AdoptsConcurrently()) concurrent.push_back(slots.size());
    slots.push_back(slot.get());
    records[name];  // every service has its entry before the threads read the map
  }
  std::vector<std::optional<orch::AdoptionReport>> reports(slots.size());
  orch::ParallelFor(concurrent.size(), options_.collector_threads, [&](size_t i) {
    ServiceSlot& slot = *slots[concurrent[i]];
    reports[concurrent[i]] = slot.orch->Adopt(records.at(slot.name), now);
  });
  size_t adopted = 0, cleaned = 0;
  std::vector<std::string> other_state_dir;
  for (size_t i = 0; i < slots.size(); ++i) {
    ServiceSlot& slot = *slots[i];
    const std::string& name = slot.name;
    if (!reports[i]) reports[i] = slot.orch->Adopt(records[name], now);
    const orch::AdoptionReport& report = *reports[i];
    adopted += report.adopted.size();
    cleaned += report.cleaned_up.size();
    other_state_dir.insert(other_state_dir.end(), report.other_state_dir.begin(),
                           report.other_state_dir.end());
    for (const std::string& error : report.errors) {
      events.push_back(state::MakeEvent(now, name, EventKind::kAdoptionError, "", error));
    }
    for (orch::OrchestratorEvent& e : slot.orch->TakeEvents()) {
      events.push_back(state::MakeEvent(e.at, name, e.kind, e.replica, e.message));
    }
    PersistReplicas(name, *slot.orch);
  }
  if (!other_state_dir.empty()) {
    // Once: the rows were dropped by the writes above.
    Log(fmt::format("{} replica rows name processes of another state directory (this "
                    "database is a copy of that directory's?): dropped and their GPU leases "
                    "released here; the processes were left alone: {}",
                    other_state_dir.size(), fmt::join(other_state_dir, "; ")));
  }
  AdoptOrphans(orphans, now);
  const size_t unknown =
      StopUnrecordedReplicaProcesses(config_.state_dir, *rows, services_, now, events);
  std::set<std::string> orphan_services;
  for (const store::ReplicaRow& row : orphans) orphan_services.insert(row.service);
  FinishDeletedServices(orphan_services);
  const size_t dropped = StaleLeaseCount();
  PersistLeases();
  events.push_back(state::MakeEvent(
      now, "", EventKind::kDaemonStarted, "",
      fmt::format("{} services; adopted {} running replicas, cleaned up {}, stopped {} "
                  "unrecorded replica processes; {} stale leases dropped",
                  services_.size(), adopted, cleaned, unknown, dropped)));
  events_->Append(events);
  return OkStatus();
}

// How to stop the replicas of a service that is no longer managed: its stored spec while
// the row is there (a deletion not finished: the row is marked deleting until the replicas
// are gone), so that Slurm jobs are cancelled through Slurm; otherwise (a row deleted by an
// older gpuscale, or a spec this binary cannot read) a local-process stand-in, which can stop
// local processes only.
ServiceConfig Daemon::OrphanConfig(const std::string& service) {
  if (Result<store::ServiceRow> row = store_->services().Get(service)) {
    Result<ServiceConfig> parsed = ParseServiceConfigText(row->spec, "stored service " + service);
    if (parsed) return std::move(*parsed);
  }
  ServiceConfig orphan;
  orphan.name = service;
  orphan.command = {"orphan"};  // never started: the orchestrator only adopts and stops
  orphan.readiness_path = "";
  return orphan;
}

// Replicas of services that no longer exist: adopted by a throw-away orchestrator of the
// service's engine only to be stopped (GPU leases are released once the processes are gone,
// the service's row once every replica is: PollRetiring). When that orchestrator cannot be
// built (e.g. Slurm's token file is unreadable), the rows stay for the next start.
void Daemon::AdoptOrphans(const std::vector<store::ReplicaRow>& rows, Seconds now) {
  std::map<std::string, std::vector<orch::ReplicaRecord>> by_service;
  for (const store::ReplicaRow& row : rows) {
    // AdoptAll read every row first and refused to start on a phase it does not know.
    if (Result<orch::ReplicaRecord> record = ToReplicaRecord(row)) {
      by_service[row.service].push_back(std::move(*record));
    }
  }
  std::vector<store::EventRow> events;
  for (auto& [service, records] : by_service) {
    const ServiceConfig config = OrphanConfig(service);
    if (config.engine == "local") DropEngineRecords(service, records, now, events);
    Result<std::unique_ptr<orch::ServiceOrchestrator>> orch = factory_->MakeOrchestrator(config);
    if (!orch) {
      const std::string message =
          fmt::format("cannot stop the replicas of removed service '{}' (retried at the next "
                      "start): {}",
                      service, orch.error().ToString());
      Log(message);
      events.push_back(state::MakeEvent(now, service, EventKind::kOrphanError, "", message));
      MutexLock lock(mu_);
      unstoppable_[service] = orch.error().ToString();
      continue;
    }
    auto slot = std::make_unique<ServiceSlot>();
    slot->name = service;
    slot->orch = std::move(*orch);
    slot->deleting = true;
    // What cannot be adopted (a lease held by someone else) is said; the rest is stopped below.
    for (const std::string& error : slot->orch->Adopt(records, now).errors) {
      const std::string message =
          fmt::format("service '{}' (deleted, stopping its replicas): {}", service, error);
      Log(message);
      events.push_back(state::MakeEvent(now, service, EventKind::kOrphanError, "", message));
    }
    for (orch::OrchestratorEvent& e : slot->orch->TakeEvents()) {
      events.push_back(state::MakeEvent(e.at, service, e.kind, e.replica, e.message));
    }
    slot->orch->StopAll(now);
    retiring_.push_back(std::move(slot));
  }
  events_->Append(events);
}

// Records of a cluster engine's replicas (they carry the engine's job id) whose engine
// settings are gone: a local orchestrator cannot stop them, so the user is told which jobs to
// cancel by hand; their rows go with the next write of the service's replicas.
void Daemon::DropEngineRecords(const std::string& service,
                               std::vector<orch::ReplicaRecord>& records, Seconds now,
                               std::vector<store::EventRow>& events) {
  std::vector<std::string> jobs;
  std::erase_if(records, [&](const orch::ReplicaRecord& r) {
    if (r.engine_id.empty()) return false;
    jobs.push_back(r.engine_id);
    return true;
  });
  if (jobs.empty()) return;
  const std::string message = fmt::format(
      "replicas of removed service '{}' ran as cluster jobs {} but the service's engine "
      "settings are gone; cancel them by hand (Slurm: scancel {})",
      service, fmt::join(jobs, ", "), fmt::join(jobs, " "));
  Log(message);
  events.push_back(state::MakeEvent(now, service, EventKind::kOrphanUnmanaged, "", message));
}

// Rows marked deleting whose replicas were all gone before the restart.
void Daemon::FinishDeletedServices(const std::set<std::string>& with_replicas) {
  Result<std::vector<store::ServiceRow>> rows = store_->services().List();
  if (!rows) return store_health_.Failed("listing services", rows.error());
  for (const store::ServiceRow& row : *rows) {
    if (!row.deleting || with_replicas.count(row.name) != 0) continue;
    if (Status s = store_->services().FinishDeleting(row.name); !s) {
      store_health_.Failed("deleting service " + row.name, s.error());
    }
  }
}

Status Daemon::OpenTasks() {
  experiments::TaskManagerOptions options;
  options.state_dir = config_.state_dir;
  options.recheck_interval = config_.tasks.recheck_interval;
  options.max_head_skips = config_.tasks.max_head_skips;
  options.weights = ScoreWeights();
  options.runner.probe_interval = options_.probe_interval;
  options.runner.stop_grace = config_.tasks.stop_grace.value_or(options_.stop_grace);
  options.runner.gpu_load = gpu_load_;
  options.publish = [this](std::vector<store::EventRow> events) {
    PublishEvents(std::move(events));
  };
  return tasks_.Open(ledger_, *monitor_, *store_, clock_, std::move(options));
}

}  // namespace gpuscale::daemon
