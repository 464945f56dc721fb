// SlurmOrchestrator: configuration, commands (Start/Place/Drain/Resume/Stop) and views.
// Polling and adoption live in slurm_orchestrator_poll.cc.
#include "orch/slurm_orchestrator.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "orch/argv_template.h"
#include "orch/slurm_job_script.h"
#include "orch/slurm_json.h"

namespace gpuscale::orch {
namespace {

bool HttpGetOkAt(const std::string& host, int port, const std::string& path, Seconds timeout) {
  httplib::Client client(host, port);
  const auto seconds = static_cast<time_t>(timeout.count());
  const auto usec = static_cast<time_t>((timeout.count() - seconds) * 1e6);
  client.set_connection_timeout(seconds, usec);
  client.set_read_timeout(seconds, usec);
  httplib::Result result = client.Get(path.c_str());
  return result && result->status == 200;
}

Status ValidateDurations(const SlurmOrchestratorConfig& c) {
  const std::pair<const char*, Seconds> durations[] = {
      {"startup_timeout", c.startup_timeout}, {"probe_interval", c.probe_interval},
      {"probe_timeout", c.probe_timeout},     {"restart_backoff_initial", c.restart_backoff_initial},
      {"restart_backoff_max", c.restart_backoff_max}, {"drain_grace", c.drain_grace}};
  for (const auto& [name, value] : durations) {
    if (value < Seconds{0}) {
      return InvalidArgument(fmt::format("expected a duration >= 0 s, got {} s", value.count()),
                             name);
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateSlurmOrchestratorConfig(const SlurmOrchestratorConfig& c) {
  if (c.service.empty()) return InvalidArgument("expected the service name", "service");
  GS_RETURN_IF_ERROR(ValidateArgvTemplate(c.command));
  if (c.gpus_per_replica < 0) {
    return InvalidArgument(fmt::format("expected >= 0, got {}", c.gpus_per_replica),
                           "gpus_per_replica");
  }
  if (c.max_replicas < 0) return InvalidArgument("expected >= 0 (0 = no limit)", "max_replicas");
  if (c.time_limit_minutes < 0) {
    return InvalidArgument("expected minutes >= 0 (0 = partition default)", "time_limit_minutes");
  }
  if (c.state_dir.empty()) {
    return InvalidArgument("expected a state directory for job logs and scripts", "state_dir");
  }
  if (c.port_range_start < 1 || c.port_range_end > 65535 ||
      c.port_range_end < c.port_range_start) {
    return InvalidArgument(fmt::format("expected 1 <= port_range_start <= port_range_end <= "
                                       "65535, got {}..{}",
                                       c.port_range_start, c.port_range_end),
                           "port_range_start");
  }
  return ValidateDurations(c);
}

std::string SlurmOrchestrator::JobName(const std::string& service, const std::string& replica) {
  return fmt::format("gpuscale.{}.{}", service, replica);
}

Result<std::unique_ptr<SlurmOrchestrator>> SlurmOrchestrator::Create(
    SlurmOrchestratorConfig config, std::unique_ptr<SlurmTransport> transport, SlurmProbe probe) {
  GS_RETURN_IF_ERROR(ValidateSlurmOrchestratorConfig(config));
  const std::filesystem::path dir = std::filesystem::path(config.state_dir);
  std::error_code ec;
  for (const char* sub : {"logs", "slurm"}) {
    std::filesystem::create_directories(dir / sub, ec);
    if (ec) {
      return Unavailable(fmt::format("cannot create directory '{}': {}", (dir / sub).string(),
                                     ec.message()),
                         "state_dir");
    }
  }
  if (!probe) {
    probe = [timeout = config.probe_timeout](const std::string& host, int port,
                                             const std::string& path) {
      return HttpGetOkAt(host, port, path, timeout);
    };
  }
  return std::unique_ptr<SlurmOrchestrator>(
      new SlurmOrchestrator(std::move(config), std::move(transport), std::move(probe)));
}

SlurmOrchestrator::SlurmOrchestrator(SlurmOrchestratorConfig config,
                                     std::unique_ptr<SlurmTransport> transport, SlurmProbe probe)
    : config_(std::move(config)), transport_(std::move(transport)), probe_(std::move(probe)) {}

SlurmOrchestrator::Replica* SlurmOrchestrator::Find(const std::string& id) {
  for (Replica& r : replicas_) {
    if (r.id == id && !r.stopping) return &r;
  }
  return nullptr;
}

int SlurmOrchestrator::OutstandingOf(const Replica& r) const {
  if (r.outstanding) return *r.outstanding;
  // Draining with no report yet: assume busy for drain_grace (as the local adapter).
  if (r.phase == scale::ReplicaPhase::kDraining &&
      last_now_ - r.drain_started < config_.drain_grace) {
    return 1;
  }
  return 0;
}

scale::ReplicaStatus SlurmOrchestrator::StatusOf(const Replica& r) const {
  return scale::ReplicaStatus{r.id, r.phase, r.phase_since, OutstandingOf(r)};
}

void SlurmOrchestrator::SetPhase(Replica& r, scale::ReplicaPhase phase, Seconds now) {
  if (r.phase == phase) return;
  r.phase = phase;
  r.phase_since = now;
}

void SlurmOrchestrator::Emit(Seconds now, const std::string& replica, std::string kind,
                             std::string message) {
  events_.push_back(OrchestratorEvent{now, replica, std::move(kind), std::move(message)});
}

Result<int> SlurmOrchestrator::PickPort() const {
  std::set<int> used;
  for (const Replica& r : replicas_) used.insert(r.port);
  for (int port = config_.port_range_start; port <= config_.port_range_end; ++port) {
    if (used.count(port) == 0) return port;
  }
  return ResourceExhausted(fmt::format("no free port in {}..{} for service '{}'",
                                       config_.port_range_start, config_.port_range_end,
                                       config_.service),
                           "port_range_start");
}

// Builds the job for `r` (port already chosen) and submits it: `pending` on success.
Status SlurmOrchestrator::Submit(Replica& r, Seconds now) {
  GS_ASSIGN_OR_RETURN(SlurmJobScript script,
                      BuildSlurmJobScript(config_.command, r.port, r.id, config_.env));
  SlurmJobRequest request;
  request.name = JobName(config_.service, r.id);
  request.comment = fmt::format("gpuscale service={} replica={}", config_.service, r.id);
  if (config_.gpus_per_replica > 0) {
    request.gres = config_.gres_type.empty()
                       ? fmt::format("gpu:{}", config_.gpus_per_replica)
                       : fmt::format("gpu:{}:{}", config_.gres_type, config_.gpus_per_replica);
  }
  request.partition = config_.partition;
  request.account = config_.account;
  request.time_limit_minutes = config_.time_limit_minutes;
  request.output_path = r.log_path;
  request.working_dir = config_.state_dir;
  request.extra_sbatch_args = config_.extra_sbatch_args;
  if (const char* path = std::getenv("PATH")) request.environment.emplace_back("PATH", path);
  request.script = std::move(script.text);
  GS_ASSIGN_OR_RETURN(r.job_id, transport_->Submit(request));
  r.argv = std::move(script.argv);
  r.backoff = false;
  r.running = false;
  r.host.clear();
  r.node.clear();
  r.submitted_at = now;
  r.last_error.clear();
  SetPhase(r, scale::ReplicaPhase::kPending, now);
  Emit(now, r.id, "replica_started",
       fmt::format("submitted as Slurm job {} (port {}, {} transport)", r.job_id, r.port,
                   transport_->Name()));
  return OkStatus();
}

std::vector<scale::ReplicaStatus> SlurmOrchestrator::ListReplicas() const {
  std::vector<scale::ReplicaStatus> out;
  for (const Replica& r : replicas_) {
    if (!r.stopping) out.push_back(StatusOf(r));
  }
  return out;
}

Result<scale::ReplicaStatus> SlurmOrchestrator::Start(Seconds now) {
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
  // The index advances even when the submission fails: a job whose answer was lost keeps an
  // id no later replica reuses (Poll cancels it as a stray).
  r.id = fmt::format("{}-{}", config_.service, next_index_++);
  r.phase_since = now;
  r.log_path = (std::filesystem::path(config_.state_dir) / "logs" / (r.id + ".log")).string();
  GS_ASSIGN_OR_RETURN(r.port, PickPort());
  GS_RETURN_IF_ERROR(Submit(r, now));
  replicas_.push_back(std::move(r));
  return StatusOf(replicas_.back());
}

Status SlurmOrchestrator::Place(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  if (r->phase != scale::ReplicaPhase::kPending) {
    return FailedPrecondition(fmt::format("replica '{}' is {}, not pending", id,
                                          scale::ReplicaPhaseName(r->phase)));
  }
  return ResourceExhausted(fmt::format("Slurm job {} is queued: {}", r->job_id,
                                       r->last_error.empty() ? "waiting" : r->last_error));
}

Status SlurmOrchestrator::Drain(const std::string& id, Seconds now) {
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

Status SlurmOrchestrator::Resume(const std::string& id, Seconds now) {
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

Status SlurmOrchestrator::Stop(const std::string& id, Seconds now) {
  last_now_ = std::max(last_now_, now);
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  r->stopping = true;
  if (r->job_id.empty()) {  // waiting out a backoff: nothing is queued or running
    Emit(now, r->id, "replica_stopped", "stopped (no Slurm job was queued)");
    std::erase_if(replicas_, [&](const Replica& x) { return &x == r; });
    return OkStatus();
  }
  Status cancelled = transport_->Cancel(r->job_id);
  r->cancel_pending = !cancelled && cancelled.error().code != ErrorCode::kNotFound;
  if (r->cancel_pending) {
    r->last_error = "cancel not delivered yet: " + cancelled.error().message;
  }
  return OkStatus();
}

Status SlurmOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  Replica* r = Find(id);
  if (r == nullptr) return NotFound(fmt::format("no replica '{}'", id), "id");
  r->outstanding = std::max(0, outstanding);
  return OkStatus();
}

void SlurmOrchestrator::StopAll(Seconds now) {
  for (const scale::ReplicaStatus& status : ListReplicas()) (void)Stop(status.id, now);
}

bool SlurmOrchestrator::HasProcesses() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const Replica& r) { return !r.job_id.empty(); });
}

std::vector<ReplicaInfo> SlurmOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Replica& r : replicas_) {
    ReplicaInfo info;
    info.id = r.id;
    info.phase = r.phase;
    info.state = r.stopping  ? "stopping"
                 : r.backoff ? "restarting"
                             : std::string(scale::ReplicaPhaseName(r.phase));
    info.phase_since = r.phase_since;
    info.host = r.host.empty() ? "127.0.0.1" : r.host;
    info.port = r.running ? r.port : 0;
    info.log_path = r.log_path;
    info.restarts = r.restarts;
    info.started_at = r.started_at;
    info.uptime = r.running ? std::max(Seconds{0}, now - r.started_at) : Seconds{0};
    info.outstanding_requests = OutstandingOf(r);
    info.adopted = r.adopted;
    info.last_error = engine_error_.empty()
                          ? r.last_error
                          : fmt::format("slurm unreachable: {}", engine_error_);
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ReplicaRecord> SlurmOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Replica& r : replicas_) {
    ReplicaRecord record;
    record.id = r.id;
    record.phase = r.phase;
    record.stopping = r.stopping;
    record.phase_since = r.phase_since;
    record.port = r.port;
    record.argv = r.argv;
    record.log_path = r.log_path;
    record.restarts = r.restarts;
    record.started_at = r.started_at;
    record.host = r.host.empty() ? "127.0.0.1" : r.host;
    record.engine_id = r.job_id;
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<OrchestratorEvent> SlurmOrchestrator::TakeEvents() { return std::exchange(events_, {}); }

scale::AdapterCapacity SlurmOrchestrator::Capacity(Seconds) const {
  scale::AdapterCapacity capacity;
  capacity.name = "slurm";
  capacity.workers_per_group = 1;
  capacity.capabilities = config_.capabilities;
  int fits = static_cast<int>(std::count_if(replicas_.begin(), replicas_.end(),
                                            [](const Replica& r) { return r.running; }));
  for (const SlurmNode& node : nodes_) {
    const bool in_partition =
        config_.partition.empty() ||
        std::find(node.partitions.begin(), node.partitions.end(), config_.partition) !=
            node.partitions.end();
    if (!in_partition || !SlurmNodeUsable(node)) continue;
    const int free_gpus = CountGpus(node.gres, config_.gres_type) -
                          CountGpus(node.gres_used, config_.gres_type);
    fits += config_.gpus_per_replica > 0 ? std::max(0, free_gpus) / config_.gpus_per_replica : 0;
  }
  capacity.max_worker_groups =
      config_.max_replicas > 0 ? std::min(fits, config_.max_replicas) : fits;
  return capacity;
}

}  // namespace gpuscale::orch
