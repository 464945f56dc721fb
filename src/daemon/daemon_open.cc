// Daemon start-up: GPU backend, store, services, adoption of persisted replicas
// (daemon.h describes the order and why).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"
#include "daemon/replica_rows.h"
#include "daemon/service_policy.h"
#include "daemon/slurm_adapter.h"
#include "gpumon/backend_factory.h"
#include "orch/fleet_orchestrator.h"
#include "orch/parallel.h"
#include "orch/process_util.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {

using events::EventKind;

store::EventRow MakeEvent(Seconds now, std::string service, EventKind kind, std::string replica,
                          std::string message) {
  store::EventRow e;
  e.at = now;
  e.service = std::move(service);
  e.kind = events::EventKindName(kind);
  e.replica = std::move(replica);
  e.message = std::move(message);
  return e;
}

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
  events_ = std::make_unique<EventLog>(store_->events(), store_health_);
  GS_RETURN_IF_ERROR(events_->Open());
  state_ = std::make_unique<StateWriter>(*store_, store_health_, options_.decision_heartbeat);
  retention_ = std::make_unique<HistoryRetention>(*store_);
  // The state as it was at this start, for a restore after the database is damaged
  // (docs/operations.md). Without room for it the daemon still runs; the log says so.
  if (Status backup = store_->database().BackupTo(db_path + ".bak"); !backup) {
    options_.log(fmt::format("warning: {}", backup.error().message));
  }
  GS_ASSIGN_OR_RETURN(std::vector<ServiceConfig> services, LoadServices(now));
  std::vector<store::EventRow> events;
  for (size_t i = 0; i < services.size(); ++i) {
    Result<std::unique_ptr<Slot>> slot = MakeSlot(services[i], now);
    if (!slot) {
      Error e = slot.error();
      e.field = yaml::Join(fmt::format("services[{}]", i), e.field);
      return Unexpected<Error>(std::move(e));
    }
    RestoreManual(**slot, now, events);
    Slot& made = **slot;
    {
      MutexLock lock(mu_);  // what the loop converges on: what runs now
      const uint64_t generation = ++generation_;
      const std::optional<int> manual =
          made.pooled != nullptr ? std::nullopt : made.runtimes.front()->manual_replicas();
      desired_[made.name] = Desired{made.config, manual, generation, generation, generation};
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
      events.push_back(
          MakeEvent(now, row.name, EventKind::kServiceSkipped, "", parsed.error().ToString()));
      continue;
    }
    services.push_back(std::move(*parsed));
  }
  events_->Append(events);
  return services;
}

// A service's engine: local processes (default) or Slurm jobs (engine: slurm).
Result<std::unique_ptr<orch::ServiceOrchestrator>> Daemon::MakeOrchestrator(
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
    o.state_dir = config_.state_dir;
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

Result<std::unique_ptr<orch::LocalProcessOrchestrator>> Daemon::MakeLocalOrchestrator(
    const ServiceConfig& service) {
  orch::LocalProcessConfig c;
  c.service = service.name;
  c.command = service.command;
  c.env = service.env;
  c.gpus_per_replica = service.gpus_per_replica;
  c.min_memory_free_mb = service.min_memory_free_mb;
  c.gpu_type = service.gpu_type;
  c.state_dir = config_.state_dir;
  c.readiness_path = service.readiness_path;
  c.startup_timeout = service.startup_timeout;
  c.probe_interval = options_.probe_interval;
  c.health_interval = options_.health_interval;
  c.restart_backoff_initial = options_.restart_backoff_initial;
  c.restart_backoff_max = options_.restart_backoff_max;
  c.stop_grace = options_.stop_grace;
  c.capabilities = {"gpu"};
  gpu::Monitor* monitor = monitor_.get();
  return orch::LocalProcessOrchestrator::Create(std::move(c), ledger_,
                                                [monitor](Seconds) { return monitor->Snapshot(); });
}

Result<std::unique_ptr<Daemon::Slot>> Daemon::MakeSlot(const ServiceConfig& service, Seconds now) {
  auto slot = std::make_unique<Slot>();
  slot->name = service.name;
  slot->config = service;
  if (service.disaggregated) {
    GS_RETURN_IF_ERROR(MakePools(service, *slot));
  } else {
    std::vector<store::RuleRow> rules;
    if (service.policy_yaml.empty()) {
      GS_ASSIGN_OR_RETURN(rules, store_->rules().ListForService(service.name));
    }
    GS_ASSIGN_OR_RETURN(std::unique_ptr<scale::Policy> policy, BuildServicePolicy(service, rules));
    GS_ASSIGN_OR_RETURN(slot->orch, MakeOrchestrator(service));
    slot->variants = dynamic_cast<orch::VariantOrchestrator*>(slot->orch.get());
    slot->runtimes.push_back(
        std::make_unique<ServiceRuntime>(service, std::move(policy), *slot->orch));
  }
  slot->created_at = now;
  if (Result<store::ServiceRow> row = store_->services().Get(service.name)) {
    slot->created_at = row->created_at;
  }
  return slot;
}

// The manual override the API set before the restart (kept in the service's row). One the
// service's bounds no longer allow (the config changed meanwhile) is dropped, with an event.
void Daemon::RestoreManual(Slot& slot, Seconds now, std::vector<store::EventRow>& events) {
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
    events.push_back(MakeEvent(now, slot.name, EventKind::kManualOverride, "",
                               fmt::format("stored override of {} replicas dropped ({}); control "
                                           "handed back to the policy",
                                           manual, s.error().ToString())));
    return;
  }
  events.push_back(
      MakeEvent(now, slot.name, EventKind::kManualOverride, "",
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
// replica processes marked for this state directory (replicas_from_processes.cc); see
// daemon.h.
Status Daemon::AdoptAll(Seconds now) {
  std::vector<store::EventRow> events;
  Result<std::vector<store::ReplicaRow>> rows = store_->replicas().List();
  if (!rows) {
    const Error unreadable = rows.error();
    rows = ReplicaRowsFromProcesses(unreadable, now, events);
    if (!rows) return Unexpected<Error>(rows.error());
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
  std::vector<Slot*> slots;
  std::vector<size_t> concurrent;
  for (auto& [name, slot] : services_) {
    if (slot->orch->AdoptsConcurrently()) concurrent.push_back(slots.size());
    slots.push_back(slot.get());
    records[name];  // every service has its entry before the threads read the map
  }
  std::vector<std::optional<orch::AdoptionReport>> reports(slots.size());
  orch::ParallelFor(concurrent.size(), options_.collector_threads, [&](size_t i) {
    Slot& slot = *slots[concurrent[i]];
    reports[concurrent[i]] = slot.orch->Adopt(records.at(slot.name), now);
  });
  size_t adopted = 0, cleaned = 0;
  std::vector<std::string> other_state_dir;
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& slot = *slots[i];
    const std::string& name = slot.name;
    if (!reports[i]) reports[i] = slot.orch->Adopt(records[name], now);
    const orch::AdoptionReport& report = *reports[i];
    adopted += report.adopted.size();
    cleaned += report.cleaned_up.size();
    other_state_dir.insert(other_state_dir.end(), report.other_state_dir.begin(),
                           report.other_state_dir.end());
    for (const std::string& error : report.errors) {
      events.push_back(MakeEvent(now, name, EventKind::kAdoptionError, "", error));
    }
    for (orch::OrchestratorEvent& e : slot.orch->TakeEvents()) {
      events.push_back(MakeEvent(e.at, name, e.kind, e.replica, e.message));
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
  const size_t unknown = StopUnknownReplicaProcesses(*rows, now, events);
  std::set<std::string> orphan_services;
  for (const store::ReplicaRow& row : orphans) orphan_services.insert(row.service);
  FinishDeletedServices(orphan_services);
  const size_t dropped = StaleLeaseCount();
  PersistLeases();
  events.push_back(
      MakeEvent(now, "", EventKind::kDaemonStarted, "",
                fmt::format("{} services; adopted {} running replicas, cleaned up {}, stopped {} "
                            "unrecorded replica processes; {} stale leases dropped",
                            services_.size(), adopted, cleaned, unknown, dropped)));
  events_->Append(events);
  return OkStatus();
}

// A replica process of this state directory (its marker, orch/process_util.h) that no
// record and no orchestrator knows was started by a daemon that died before saving it. It
// may hold GPUs the ledger thinks free, so it is killed, process group and all, before the
// first tick places anything; the daemon waits (up to 5 s) until it is gone.
size_t Daemon::StopUnknownReplicaProcesses(const std::vector<store::ReplicaRow>& rows,
                                           Seconds now, std::vector<store::EventRow>& events) {
  std::set<int> known;  // replica process group leaders
  for (const store::ReplicaRow& row : rows) {
    if (row.pid > 0) known.insert(static_cast<int>(row.pid));
  }
  for (auto& [name, slot] : services_) {
    for (const orch::ReplicaInfo& r : slot->orch->Replicas(now)) {
      if (r.pid > 0) known.insert(r.pid);
    }
  }
  const std::string marker = fmt::format("{}={}", orch::kReplicaMarkerEnv,
                                         orch::ReplicaMarkerValue(config_.state_dir));
  std::set<int> groups;
  for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(marker)) {
    if (known.count(p.pid) == 0 && known.count(p.pgid) == 0) groups.insert(p.pgid);
  }
  for (int pgid : groups) {
    orch::SignalGroup(pgid, SIGKILL);
    events.push_back(MakeEvent(now, "", EventKind::kReplicaProcessStopped, "",
                               fmt::format("killed process group {}: a replica process of this "
                                           "state directory that no record knows (a daemon "
                                           "died before saving it)",
                                           pgid)));
  }
  for (int i = 0; i < 100; ++i) {
    bool alive = false;
    for (int pgid : groups) alive = alive || orch::ProcessAlive(pgid);
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return groups.size();
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
    Result<std::unique_ptr<orch::ServiceOrchestrator>> orch = MakeOrchestrator(config);
    if (!orch) {
      const std::string message =
          fmt::format("cannot stop the replicas of removed service '{}' (retried at the next "
                      "start): {}",
                      service, orch.error().ToString());
      Log(message);
      events.push_back(MakeEvent(now, service, EventKind::kOrphanError, "", message));
      MutexLock lock(mu_);
      unstoppable_[service] = orch.error().ToString();
      continue;
    }
    auto slot = std::make_unique<Slot>();
    slot->name = service;
    slot->orch = std::move(*orch);
    slot->deleting = true;
    // What cannot be adopted (a lease held by someone else) is said; the rest is stopped below.
    for (const std::string& error : slot->orch->Adopt(records, now).errors) {
      const std::string message =
          fmt::format("service '{}' (deleted, stopping its replicas): {}", service, error);
      Log(message);
      events.push_back(MakeEvent(now, service, EventKind::kOrphanError, "", message));
    }
    for (orch::OrchestratorEvent& e : slot->orch->TakeEvents()) {
      events.push_back(MakeEvent(e.at, service, e.kind, e.replica, e.message));
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
  events.push_back(MakeEvent(now, service, EventKind::kOrphanUnmanaged, "", message));
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

}  // namespace gpuscale::daemon
