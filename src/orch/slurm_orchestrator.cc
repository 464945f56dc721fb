// SlurmOrchestrator: configuration, commands (Start/Place/Drain/Resume/Stop) and views.
// Polling and adoption live in slurm_orchestrator_poll.cc.
#include "orch/slurm_orchestrator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "net/http_client.h"
#include "orch/argv_template.h"
#include "orch/slurm_job_script.h"
#include "orch/slurm_json.h"

namespace gpuscale::orch {

using events::EventKind;

namespace {

bool HttpGetOkAt(const std::string& host, int port, const std::string& path, Seconds timeout) {
  // One deadline for the whole exchange (net/http_client.h): a replica that trickles its
  // answer cannot hold the control loop.
  net::HttpGetRequest request;
  request.host = host;
  request.port = port;
  request.target = path;
  request.timeout = timeout;
  Result<net::HttpGetResponse> response = net::HttpGet(request);
  return response && response->status == 200;
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
    SlurmOrchestratorConfig config, std::unique_ptr<SlurmTransport> transport, SlurmProbe probe,
    SerialCalls::Mode calls) {
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
      new SlurmOrchestrator(std::move(config), std::move(transport), std::move(probe), calls));
}

SlurmOrchestrator::SlurmOrchestrator(SlurmOrchestratorConfig config,
                                     std::unique_ptr<SlurmTransport> transport, SlurmProbe probe,
                                     SerialCalls::Mode calls)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      probe_(std::move(probe)),
      book_(ReplicaBookConfig{config_.service, config_.drain_grace, config_.restart_backoff_initial,
                              config_.restart_backoff_max}),
      calls_(calls) {}

Result<int> SlurmOrchestrator::PickPort(int previous) const {
  std::set<int> used;
  for (const Replica& r : book_.records()) {
    if (r.port != previous) used.insert(r.port);
  }
  const int first = config_.port_range_start;
  const int size = config_.port_range_end - first + 1;
  const bool rotate = previous >= first && previous <= config_.port_range_end;
  const int start = rotate ? previous - first + 1 : 0;
  for (int k = 0; k < size; ++k) {
    const int port = first + (start + k) % size;
    if (used.count(port) == 0) return port;
  }
  return ResourceExhausted(fmt::format("no free port in {}..{} for service '{}'",
                                       config_.port_range_start, config_.port_range_end,
                                       config_.service),
                           "port_range_start");
}

// Builds the job for `r` (port already chosen) and posts its submission.
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
  r.submitting = true;
  r.backoff = false;
  r.running = false;
  r.host.clear();
  r.node.clear();
  r.last_error = "submitting to Slurm";
  book_.SetPhase(r, scale::ReplicaPhase::kPending, now);
  calls_.Post([this, transport = transport_, id = r.id, request = std::move(request),
               argv = std::move(script.argv)]() mutable -> SerialCalls::Apply {
    Result<std::string> job_id = transport->Submit(request);
    return [this, id, job_id = std::move(job_id), argv = std::move(argv)](Seconds at) mutable {
      ApplySubmit(id, std::move(job_id), std::move(argv), at);
    };
  });
  return OkStatus();
}

void SlurmOrchestrator::ApplySubmit(const std::string& id, Result<std::string> job_id,
                                    std::vector<std::string> argv, Seconds now) {
  Replica* r = book_.FindAny(id);
  // Replicas are kept while submitting, so this is only a defence: a job without a replica
  // is cancelled as a stray by the next listing.
  if (r == nullptr) return;
  r->submitting = false;
  if (!job_id) {
    if (r->stopping) {
      book_.Emit(now, r->id, EventKind::kReplicaStopped, "stopped (its Slurm submission failed)");
      book_.Remove(*r);
      return;
    }
    book_.Emit(now, r->id, EventKind::kReplicaStartFailed, job_id.error().message);
    ScheduleResubmit(*r, now, job_id.error().message);
    return;
  }
  r->job_id = std::move(*job_id);
  r->argv = std::move(argv);
  r->submitted_at = now;
  r->last_error.clear();
  book_.Emit(now, r->id, EventKind::kReplicaStarted,
             fmt::format("submitted as Slurm job {} (port {}, {} transport)", r->job_id, r->port,
                         transport_->Name()));
  if (r->stopping) PostStopCancel(*r);  // stopped while the sbatch was in flight
}

void SlurmOrchestrator::PostCancel(const std::string& job_id, CancelAnswer then) {
  cancelling_.insert(job_id);
  calls_.Post([this, transport = transport_, job_id,
               then = std::move(then)]() mutable -> SerialCalls::Apply {
    Status cancelled = transport->Cancel(job_id);
    return [this, job_id, then = std::move(then), cancelled = std::move(cancelled)](Seconds at) {
      cancelling_.erase(job_id);
      // Slurm took it, or no longer knows the job: either way it will not run on.
      const bool delivered = cancelled || cancelled.error().code == ErrorCode::kNotFound;
      if (then) then(delivered, cancelled, at);
    };
  });
}

void SlurmOrchestrator::PostStopCancel(Replica& r) {
  PostCancel(r.job_id, [this, id = r.id, job_id = r.job_id](bool delivered, const Status& cancelled,
                                                            Seconds at) {
    Replica* r = book_.FindAny(id);
    if (r == nullptr || r->job_id != job_id) return;
    if (!delivered && !r->cancel_pending) {  // once per failing streak, not every retry
      book_.Emit(at, r->id, EventKind::kReplicaStopFailed,
                 fmt::format("Slurm job {}: cancel not delivered ({}); retried until Slurm "
                             "takes it",
                             job_id, cancelled.error().message));
    }
    r->cancel_pending = !delivered;
    if (!delivered) r->last_error = "cancel not delivered yet: " + cancelled.error().message;
  });
}

std::vector<scale::ReplicaStatus> SlurmOrchestrator::ListReplicas() const {
  return book_.ListReplicas();
}

Result<scale::ReplicaStatus> SlurmOrchestrator::Start(Seconds now) {
  book_.Touch(now);
  GS_RETURN_IF_ERROR(book_.CheckRoom(book_.ActiveCount(), config_.max_replicas));
  if (!engine_error_.empty()) {
    return Unavailable(
        fmt::format("slurm ({} transport) unreachable: {}", transport_->Name(), engine_error_));
  }
  Replica r;
  // The index advances even when the submission fails: a job whose answer was lost keeps an
  // id no later replica reuses (Poll cancels it as a stray).
  r.id = book_.NextId();
  r.phase_since = now;
  r.log_path = (std::filesystem::path(config_.state_dir) / "logs" / (r.id + ".log")).string();
  GS_ASSIGN_OR_RETURN(r.port, PickPort());
  Replica& added = book_.Add(std::move(r));
  if (Status submitted = Submit(added, now); !submitted) {
    book_.Remove(added);
    return Unexpected<Error>(submitted.error());
  }
  return book_.StatusOf(added);
}

Status SlurmOrchestrator::Place(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Replica* r, book_.GetPending(id, now));
  const std::string what = r->job_id.empty()
                               ? fmt::format("replica {}'s Slurm job is not queued yet", r->id)
                               : fmt::format("Slurm job {} is queued", r->job_id);
  return ResourceExhausted(
      fmt::format("{}: {}", what, r->last_error.empty() ? "waiting" : r->last_error));
}

Status SlurmOrchestrator::Drain(const std::string& id, Seconds now) { return book_.Drain(id, now); }

Status SlurmOrchestrator::Resume(const std::string& id, Seconds now) {
  return book_.Resume(id, now);
}

Status SlurmOrchestrator::Stop(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Replica* r, book_.BeginStop(id, now));
  if (r->submitting) return OkStatus();  // ApplySubmit cancels the job the sbatch made
  if (r->job_id.empty()) {  // waiting out a backoff: nothing is queued or running
    book_.Emit(now, r->id, EventKind::kReplicaStopped, "stopped (no Slurm job was queued)");
    book_.Remove(*r);
    return OkStatus();
  }
  PostStopCancel(*r);
  return OkStatus();
}

Status SlurmOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  return book_.ReportOutstanding(id, outstanding);
}

bool SlurmOrchestrator::HasProcesses() const {
  return book_.Any([](const Replica& r) { return !r.job_id.empty() || r.submitting; });
}

std::vector<ReplicaInfo> SlurmOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Replica& r : book_.records()) {
    ReplicaInfo info = book_.InfoOf(r, now, r.running, r.backoff);
    // A queued job has no node yet: no address to show or scrape.
    info.host = !r.running ? "" : r.host.empty() ? "127.0.0.1" : r.host;
    if (!engine_error_.empty()) info.last_error = "slurm unreachable: " + engine_error_;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ReplicaRecord> SlurmOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Replica& r : book_.records()) {
    ReplicaRecord record = book_.RecordOf(r);
    record.host = r.host.empty() ? "127.0.0.1" : r.host;
    record.engine_id = r.job_id;
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<OrchestratorEvent> SlurmOrchestrator::TakeEvents() { return book_.TakeEvents(); }

scale::AdapterCapacity SlurmOrchestrator::Capacity(Seconds) const {
  scale::AdapterCapacity capacity;
  capacity.name = "slurm";
  capacity.workers_per_group = 1;
  capacity.capabilities = config_.capabilities;
  int fits = book_.Count([](const Replica& r) { return r.running; });
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
