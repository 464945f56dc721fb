#include "orch/local_process_orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "orch/argv_template.h"
#include "orch/http_probe.h"

namespace gpuscale::orch {

using events::EventKind;

namespace {

// `view` (ReplicaInfo or ReplicaRecord) with the process part of replica `r`.
template <typename View, typename R>
View WithProcess(View view, const R& r) {
  view.pid = r.pid;
  view.gpus = r.gpus;
  view.gpu_keys = r.gpu_keys;
  view.lease_owner = r.owner;
  return view;
}

Status ValidateDurations(const LocalProcessConfig& c) {
  const std::pair<const char*, Seconds> durations[] = {
      {"startup_timeout", c.startup_timeout},
      {"probe_interval", c.probe_interval},
      {"probe_timeout", c.probe_timeout},
      {"health_interval", c.health_interval},
      {"restart_backoff_initial", c.restart_backoff_initial},
      {"restart_backoff_max", c.restart_backoff_max},
      {"stable_after", c.stable_after},
      {"stop_grace", c.stop_grace},
      {"drain_grace", c.drain_grace}};
  for (const auto& [name, value] : durations) {
    if (value < Seconds{0}) {
      return InvalidArgument(fmt::format("expected a duration >= 0 s, got {} s", value.count()),
                             name);
    }
  }
  if (c.restart_backoff_max < c.restart_backoff_initial) {
    return InvalidArgument("restart_backoff_max must be >= restart_backoff_initial",
                           "restart_backoff_max");
  }
  return OkStatus();
}

}  // namespace

Status ValidateLocalProcessConfig(const LocalProcessConfig& c) {
  if (c.service.empty()) return InvalidArgument("expected the service name", "service");
  GS_RETURN_IF_ERROR(ValidateArgvTemplate(c.command));
  if (c.gpus_per_replica < 0) {
    return InvalidArgument(fmt::format("expected >= 0, got {}", c.gpus_per_replica),
                           "gpus_per_replica");
  }
  if (c.min_memory_free_mb < 0) {
    return InvalidArgument("expected >= 0 MiB", "min_memory_free_mb");
  }
  if (c.max_replicas < 0) return InvalidArgument("expected >= 0 (0 = no limit)", "max_replicas");
  if (c.state_dir.empty()) {
    return InvalidArgument("expected a state directory for replica logs", "state_dir");
  }
  if (c.port_range_start != 0 &&
      (c.port_range_start < 1 || c.port_range_end > 65535 ||
       c.port_range_end < c.port_range_start)) {
    return InvalidArgument(fmt::format("expected 1 <= port_range_start <= port_range_end <= "
                                       "65535, got {}..{}",
                                       c.port_range_start, c.port_range_end),
                           "port_range_start");
  }
  if (c.health_failure_threshold < 1) {
    return InvalidArgument("expected >= 1", "health_failure_threshold");
  }
  return ValidateDurations(c);
}

Result<std::unique_ptr<LocalProcessOrchestrator>> LocalProcessOrchestrator::Create(
    LocalProcessConfig config, alloc::LeaseLedger& ledger, GpuSource gpus,
    ReadinessProbe probe) {
  GS_RETURN_IF_ERROR(ValidateLocalProcessConfig(config));
  const std::filesystem::path logs = std::filesystem::path(config.state_dir) / "logs";
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) {
    return Unavailable(fmt::format("cannot create log directory '{}': {}", logs.string(),
                                   ec.message()),
                       "state_dir");
  }
  if (!probe) {
    probe = [timeout = config.probe_timeout](int port, const std::string& path) {
      return HttpProbe(port, path, timeout);
    };
  }
  return std::unique_ptr<LocalProcessOrchestrator>(new LocalProcessOrchestrator(
      std::move(config), ledger, std::move(gpus), std::move(probe)));
}

LocalProcessOrchestrator::LocalProcessOrchestrator(LocalProcessConfig config,
                                                   alloc::LeaseLedger& ledger, GpuSource gpus,
                                                   ReadinessProbe probe)
    : config_(std::move(config)),
      ledger_(ledger),
      gpu_source_(std::move(gpus)),
      probe_(std::move(probe)),
      book_(ReplicaBookConfig{config_.service, config_.drain_grace,
                              config_.restart_backoff_initial, config_.restart_backoff_max}) {}

Status LocalProcessOrchestrator::LeaseGpus(Replica& r, Seconds now) {
  if (config_.gpus_per_replica <= 0) return OkStatus();
  Result<gpu::GpuSnapshot> snapshot = gpu_source_(now);
  if (!snapshot) {
    r.last_error = "cannot read GPUs: " + snapshot.error().ToString();
    return Unavailable(r.last_error);
  }
  // The budget first: GPUs it refuses must not be leased meanwhile.
  GS_RETURN_IF_ERROR(AcquireBudget(r));
  alloc::SelectionRequest request;
  request.gpu_count = config_.gpus_per_replica;
  request.min_memory_free_mb = config_.min_memory_free_mb;
  request.gpu_type = config_.gpu_type;
  Result<alloc::Selection> selection = ledger_.Allocate(*snapshot, request, r.owner, now);
  if (!selection) {
    ReleaseBudget(r);
    r.last_error = selection.error().message;
    return Unexpected<Error>(selection.error());
  }
  r.gpus.clear();
  r.gpu_keys.clear();
  for (const alloc::SelectedGpu& g : selection->gpus) {
    r.gpus.push_back(g.index);
    r.gpu_keys.push_back(alloc::LeaseKeyOf(snapshot->gpus[g.position]));
  }
  return OkStatus();
}

Status LocalProcessOrchestrator::TryPlace(Replica& r, Seconds now) {
  GS_RETURN_IF_ERROR(LeaseGpus(r, now));
  r.last_error.clear();
  // A replica pending again after failed launches keeps its streak: the backoff goes on.
  if (r.start_error.empty()) r.crash_streak = 0;
  book_.SetPhase(r, scale::ReplicaPhase::kStarting, now);
  Launch(r, now);
  return OkStatus();
}

void LocalProcessOrchestrator::SetPoolBudget(alloc::PoolBudget* budget, int pool) {
  budget_ = budget;
  budget_pool_ = pool;
}

Status LocalProcessOrchestrator::AcquireBudget(Replica& r) {
  if (budget_ == nullptr || config_.gpus_per_replica <= 0) return OkStatus();
  if (Status granted = budget_->Acquire(budget_pool_, config_.gpus_per_replica); !granted) {
    r.last_error = "GPU budget: " + granted.error().message;
    return ResourceExhausted(r.last_error);
  }
  r.budget_gpus = config_.gpus_per_replica;
  return OkStatus();
}

void LocalProcessOrchestrator::ReleaseBudget(Replica& r) {
  if (budget_ != nullptr && r.budget_gpus > 0) budget_->Release(budget_pool_, r.budget_gpus);
  r.budget_gpus = 0;
}

void LocalProcessOrchestrator::ReleaseGpus(Replica& r) {
  ReleaseBudget(r);
  ledger_.ReleaseOwner(r.owner);
  r.gpus.clear();
  r.gpu_keys.clear();
}

std::vector<scale::ReplicaStatus> LocalProcessOrchestrator::ListReplicas() const {
  return book_.ListReplicas();
}

Result<scale::ReplicaStatus> LocalProcessOrchestrator::Start(Seconds now) {
  book_.Touch(now);
  GS_RETURN_IF_ERROR(book_.CheckRoom(book_.ActiveCount(), config_.max_replicas));
  Replica r;
  r.id = book_.NextId();
  r.owner = "replica/" + r.id;
  r.phase_since = now;
  r.log_path = (std::filesystem::path(config_.state_dir) / "logs" / (r.id + ".log")).string();
  Replica& added = book_.Add(std::move(r));
  if (!TryPlace(added, now)) {
    book_.Emit(now, added.id, EventKind::kReplicaPending,
               "no GPUs for a new replica: " + added.last_error);
  }
  return book_.StatusOf(added);
}

Status LocalProcessOrchestrator::Place(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Replica* r, book_.GetPending(id, now));
  return TryPlace(*r, now);
}

Status LocalProcessOrchestrator::Drain(const std::string& id, Seconds now) {
  return book_.Drain(id, now);
}

Status LocalProcessOrchestrator::Resume(const std::string& id, Seconds now) {
  return book_.Resume(id, now);
}

Status LocalProcessOrchestrator::Stop(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Replica* r, book_.BeginStop(id, now));
  if (r->proc == Proc::kRunning) {
    Terminate(*r, now, /*restart_after=*/false);
  } else if (r->proc == Proc::kTerminating || r->proc == Proc::kReaping) {
    r->restart_after = false;  // already going down for a restart: just do not restart
  } else {                     // pending or waiting out a backoff: nothing runs
    ReleaseGpus(*r);
    book_.Emit(now, r->id, EventKind::kReplicaStopped, "stopped (no process was running)");
    book_.Remove(*r);
  }
  return OkStatus();
}

Status LocalProcessOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  return book_.ReportOutstanding(id, outstanding);
}

bool LocalProcessOrchestrator::HasProcesses() const {
  return book_.Any([](const Replica& r) { return r.pid > 0; });
}

std::vector<ReplicaInfo> LocalProcessOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Replica& r : book_.records()) {
    ReplicaInfo info = book_.InfoOf(r, now, /*running=*/r.pid > 0,
                                    /*backoff=*/r.proc == Proc::kBackoff);
    info.start_error = r.start_error;
    out.push_back(WithProcess(std::move(info), r));
  }
  return out;
}

std::vector<ReplicaRecord> LocalProcessOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Replica& r : book_.records()) {
    out.push_back(WithProcess(book_.RecordOf(r), r));
  }
  return out;
}

std::vector<OrchestratorEvent> LocalProcessOrchestrator::TakeEvents() { return book_.TakeEvents(); }

scale::AdapterCapacity LocalProcessOrchestrator::Capacity(Seconds now) const {
  scale::AdapterCapacity capacity;
  capacity.name = "local";
  capacity.workers_per_group = 1;
  capacity.capabilities = config_.capabilities;
  capacity.max_worker_groups = config_.max_replicas;
  if (capacity.max_worker_groups == 0 && config_.gpus_per_replica > 0) {
    Result<gpu::GpuSnapshot> snapshot = gpu_source_(now);
    if (snapshot) {
      capacity.max_worker_groups =
          static_cast<int>(snapshot->gpus.size()) / config_.gpus_per_replica;
    }
  }
  return capacity;
}

}  // namespace gpuscale::orch
