#include "orch/local_process_orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "orch/argv_template.h"
#include "orch/http_probe.h"

namespace gpuscale::orch {
namespace {

std::string_view StateName(scale::ReplicaPhase phase, bool stopping, bool backoff) {
  if (stopping) return "stopping";
  if (backoff) return "restarting";
  return scale::ReplicaPhaseName(phase);
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
      return HttpGetOk(port, path, timeout);
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
      probe_(std::move(probe)) {}

LocalProcessOrchestrator::Replica* LocalProcessOrchestrator::Find(const std::string& id) {
  for (Replica& r : replicas_) {
    if (r.id == id && !r.stopping) return &r;
  }
  return nullptr;
}

int LocalProcessOrchestrator::OutstandingOf(const Replica& r) const {
  if (r.outstanding) return *r.outstanding;
  // Draining with no report yet: assume busy for drain_grace (see header).
  if (r.phase == scale::ReplicaPhase::kDraining && last_now_ - r.drain_started < config_.drain_grace) {
    return 1;
  }
  return 0;
}

scale::ReplicaStatus LocalProcessOrchestrator::StatusOf(const Replica& r) const {
  return scale::ReplicaStatus{r.id, r.phase, r.phase_since, OutstandingOf(r)};
}

void LocalProcessOrchestrator::SetPhase(Replica& r, scale::ReplicaPhase phase, Seconds now) {
  if (r.phase == phase) return;
  r.phase = phase;
  r.phase_since = now;
}

void LocalProcessOrchestrator::Emit(Seconds now, const std::string& replica, std::string kind,
                                    std::string message) {
  events_.push_back(OrchestratorEvent{now, replica, std::move(kind), std::move(message)});
}

Status LocalProcessOrchestrator::TryPlace(Replica& r, Seconds now) {
  if (config_.gpus_per_replica > 0) {
    Result<gpu::GpuSnapshot> snapshot = gpu_source_(now);
    if (!snapshot) {
      r.last_error = "cannot read GPUs: " + snapshot.error().ToString();
      return Unavailable(r.last_error);
    }
    alloc::SelectionRequest request;
    request.gpu_count = config_.gpus_per_replica;
    request.min_memory_free_mb = config_.min_memory_free_mb;
    Result<alloc::Selection> selection = ledger_.Allocate(*snapshot, request, r.owner, now);
    if (!selection) {
      r.last_error = selection.error().message;
      return Unexpected<Error>(selection.error());
    }
    r.gpus.clear();
    r.gpu_keys.clear();
    for (const alloc::SelectedGpu& g : selection->gpus) {
      r.gpus.push_back(g.index);
      r.gpu_keys.push_back(alloc::LeaseKeyOf(snapshot->gpus[g.position]));
    }
  }
  r.last_error.clear();
  r.crash_streak = 0;
  SetPhase(r, scale::ReplicaPhase::kStarting, now);
  Launch(r, now);
  return OkStatus();
}

void LocalProcessOrchestrator::ReleaseGpus(Replica& r) {
  ledger_.ReleaseOwner(r.owner);
  r.gpus.clear();
  r.gpu_keys.clear();
}

std::vector<scale::ReplicaStatus> LocalProcessOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  for (const Replica& r : replicas_) {
    if (!r.stopping) out.push_back(StatusOf(r));
  }
  return out;
}

Result<scale::ReplicaStatus> LocalProcessOrchestrator::Start(Seconds now) {
  last_now_ = std::max(last_now_, now);
  const auto active = std::count_if(replicas_.begin(), replicas_.end(),
                                    [](const Replica& r) { return !r.stopping; });
  if (config_.max_replicas > 0 && active >= config_.max_replicas) {
    return ResourceExhausted(fmt::format("too many replicas: service '{}' already has {} "
                                         "(max_replicas {})",
                                         config_.service, active, config_.max_replicas),
                             "max_replicas");
  }
  Replica r;
  r.id = fmt::format("{}-{}", config_.service, next_index_++);
  r.owner = "replica/" + r.id;
  r.phase_since = now;
  r.log_path = (std::filesystem::path(config_.state_dir) / "logs" / (r.id + ".log")).string();
  replicas_.push_back(std::move(r));
  Replica& added = replicas_.back();
  if (!TryPlace(added, now)) {
    Emit(now, added.id, "replica_pending", "no GPUs for a new replica: " + added.last_error);
  }
  return StatusOf(added);
}

Status LocalProcessOrchestrator::Place(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  if (r->phase != scale::ReplicaPhase::kPending) {
    return FailedPrecondition(fmt::format("replica '{}' is {}, not pending", id,
                                          scale::ReplicaPhaseName(r->phase)));
  }
  return TryPlace(*r, now);
}

Status LocalProcessOrchestrator::Drain(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  if (r->phase != scale::ReplicaPhase::kReady) {
    return FailedPrecondition(fmt::format("replica '{}' is {}; only ready replicas drain", id,
                                          scale::ReplicaPhaseName(r->phase)));
  }
  SetPhase(*r, scale::ReplicaPhase::kDraining, now);
  r->drain_started = now;
  r->outstanding.reset();
  return OkStatus();
}

Status LocalProcessOrchestrator::Resume(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  if (r->phase != scale::ReplicaPhase::kDraining) {
    return FailedPrecondition(fmt::format("replica '{}' is {}, not draining", id,
                                          scale::ReplicaPhaseName(r->phase)));
  }
  SetPhase(*r, scale::ReplicaPhase::kReady, now);
  return OkStatus();
}

Status LocalProcessOrchestrator::Stop(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  r->stopping = true;
  if (r->proc == Proc::kRunning) {
    Terminate(*r, now, /*restart_after=*/false);
  } else if (r->proc == Proc::kTerminating) {
    r->restart_after = false;  // already going down for a restart: just do not restart
  } else {  // pending or waiting out a backoff: nothing runs
    ReleaseGpus(*r);
    Emit(now, r->id, "replica_stopped", "stopped (no process was running)");
    std::erase_if(replicas_, [&](const Replica& x) { return &x == r; });
  }
  return OkStatus();
}

Status LocalProcessOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  r->outstanding = std::max(0, outstanding);
  return OkStatus();
}

void LocalProcessOrchestrator::StopAll(Seconds now) {
  for (const scale::ReplicaStatus& status : ListReplicas()) (void)Stop(status.id, now);
}

bool LocalProcessOrchestrator::HasProcesses() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const Replica& r) { return r.pid > 0; });
}

std::vector<ReplicaInfo> LocalProcessOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Replica& r : replicas_) {
    ReplicaInfo info;
    info.id = r.id;
    info.phase = r.phase;
    info.state = StateName(r.phase, r.stopping, r.proc == Proc::kBackoff);
    info.phase_since = r.phase_since;
    info.port = r.pid > 0 ? r.port : 0;
    info.gpus = r.gpus;
    info.gpu_keys = r.gpu_keys;
    info.lease_owner = r.owner;
    info.pid = r.pid;
    info.log_path = r.log_path;
    info.restarts = r.restarts;
    info.started_at = r.started_at;
    info.uptime = r.pid > 0 ? std::max(Seconds{0}, now - r.started_at) : Seconds{0};
    info.outstanding_requests = OutstandingOf(r);
    info.adopted = r.adopted;
    info.last_error = r.last_error;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ReplicaRecord> LocalProcessOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Replica& r : replicas_) {
    out.push_back(ReplicaRecord{r.id, r.phase, r.stopping, r.phase_since, r.pid, r.port, r.gpus,
                                r.gpu_keys, r.owner, r.argv, r.log_path, r.restarts,
                                r.started_at, "127.0.0.1", ""});
  }
  return out;
}

std::vector<OrchestratorEvent> LocalProcessOrchestrator::TakeEvents() {
  return std::exchange(events_, {});
}

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
