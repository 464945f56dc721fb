#include "orch/replica_book.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace gpuscale::orch {

using events::EventKind;

ReplicaBookBase::ReplicaBookBase(ReplicaBookConfig config) : config_(std::move(config)) {}

std::string ReplicaBookBase::NextId() {
  return fmt::format("{}-{}", config_.service, next_index_++);
}

void ReplicaBookBase::ReserveId(const std::string& id) {
  const std::string prefix = config_.service + "-";
  if (id.size() <= prefix.size() || id.compare(0, prefix.size(), prefix) != 0) return;
  int index = -1;
  const char* end = id.data() + id.size();
  auto [ptr, ec] = std::from_chars(id.data() + prefix.size(), end, index);
  // An id can come from outside (a Slurm job's name, a store row): a sign or INT_MAX would
  // make the next index negative or overflow, so those reserve nothing.
  if (ec == std::errc() && ptr == end && index >= 0 && index < std::numeric_limits<int>::max()) {
    next_index_ = std::max(next_index_, index + 1);
  }
}

Status ReplicaBookBase::CheckRoom(int active, int max_replicas) const {
  if (max_replicas > 0 && active >= max_replicas) {
    return ResourceExhausted(fmt::format("too many replicas: service '{}' already has {} "
                                         "(max_replicas {})",
                                         config_.service, active, max_replicas),
                             "max_replicas");
  }
  return OkStatus();
}

int ReplicaBookBase::OutstandingOf(const ReplicaEntry& r) const {
  if (r.outstanding) return *r.outstanding;
  // Draining with no report yet: assume busy for drain_grace (see the header).
  if (r.phase == scale::ReplicaPhase::kDraining &&
      latest_ - r.drain_started < config_.drain_grace) {
    return 1;
  }
  return 0;
}

scale::ReplicaStatus ReplicaBookBase::StatusOf(const ReplicaEntry& r) const {
  return scale::ReplicaStatus{r.id, r.phase, r.phase_since, OutstandingOf(r)};
}

void ReplicaBookBase::SetPhase(ReplicaEntry& r, scale::ReplicaPhase phase, Seconds now) {
  if (r.phase == phase) return;
  r.phase = phase;
  r.phase_since = now;
}

Seconds ReplicaBookBase::ScheduleRestart(ReplicaEntry& r, Seconds now, const std::string& why,
                                         std::string_view retry) {
  r.last_error = why;
  ++r.crash_streak;
  ++r.restarts;
  // Exponential backoff as Kubernetes' CrashLoopBackOff: initial * 2^(streak-1), capped.
  const double factor = std::pow(2.0, std::min(r.crash_streak - 1, 30));
  const Seconds delay =
      std::min(config_.restart_backoff_initial * factor, config_.restart_backoff_max);
  r.restart_at = now + delay;
  SetPhase(r, scale::ReplicaPhase::kStarting, now);
  Emit(now, r.id, EventKind::kReplicaRestartScheduled,
       fmt::format("{}; {} in {:.3g} s (failure {} in a row)", why, retry, delay.count(),
                   r.crash_streak));
  return delay;
}

ReplicaInfo ReplicaBookBase::InfoOf(const ReplicaEntry& r, Seconds now, bool running,
                                    bool backoff) const {
  ReplicaInfo info;
  info.id = r.id;
  info.phase = r.phase;
  info.state = r.stopping ? ReplicaState::kStopping
               : backoff  ? ReplicaState::kRestarting
                          : StateOfPhase(r.phase);
  info.phase_since = r.phase_since;
  info.port = running ? r.port : 0;
  info.log_path = r.log_path;
  info.restarts = r.restarts;
  info.started_at = r.started_at;
  info.uptime = running ? std::max(Seconds{0}, now - r.started_at) : Seconds{0};
  info.outstanding_requests = OutstandingOf(r);
  info.adopted = r.adopted;
  info.last_error = r.last_error;
  info.serving = r.serving;
  return info;
}

ReplicaRecord ReplicaBookBase::RecordOf(const ReplicaEntry& r) {
  // No pid, GPUs, lease owner or engine id: those belong to the adapter.
  return ReplicaRecord{r.id, r.phase, r.stopping, r.phase_since, /*pid=*/0, r.port,
                       /*gpus=*/{}, /*gpu_keys=*/{}, /*lease_owner=*/"", r.argv, r.log_path,
                       r.restarts, r.started_at, /*host=*/"127.0.0.1", /*engine_id=*/""};
}

Seconds StartingSince(const ReplicaEntry& r) {
  return r.adopted && r.phase_since > r.started_at ? r.phase_since : r.started_at;
}

std::string ReadyMessage(const ReplicaEntry& r, Seconds now, std::string_view where) {
  const Seconds since = StartingSince(r);
  if (since != r.started_at) {
    return fmt::format("ready again {:.3g} s after adoption on {} (process up {:.0f} s)",
                       (now - since).count(), where, (now - r.started_at).count());
  }
  return fmt::format("ready after {:.3g} s on {}", (now - since).count(), where);
}

void ReplicaBookBase::Restore(ReplicaEntry& r, const ReplicaRecord& record) {
  r.id = record.id;
  r.adopted = true;
  r.port = record.port;
  r.argv = record.argv;
  r.log_path = record.log_path;
  r.restarts = record.restarts;
  r.started_at = record.started_at;
}

void ReplicaBookBase::Emit(Seconds now, const std::string& replica, EventKind kind,
                           std::string message) {
  events_.push_back(OrchestratorEvent{now, replica, kind, std::move(message)});
}

Unexpected<Error> ReplicaBookBase::UnknownReplica(const std::string& id) {
  return NotFound(fmt::format("no replica '{}'", id), "id");
}

Status ReplicaBookBase::RequirePhase(const ReplicaEntry& r, scale::ReplicaPhase wanted,
                                     std::string_view refusal) {
  if (r.phase == wanted) return OkStatus();
  return FailedPrecondition(
      fmt::format("replica '{}' is {}{}", r.id, scale::ReplicaPhaseName(r.phase), refusal));
}

Status ReplicaBookBase::CheckPending(const ReplicaEntry& r) {
  return RequirePhase(r, scale::ReplicaPhase::kPending, ", not pending");
}

Status ReplicaBookBase::DrainEntry(ReplicaEntry& r, Seconds now) {
  GS_RETURN_IF_ERROR(RequirePhase(r, scale::ReplicaPhase::kReady, "; only ready replicas drain"));
  SetPhase(r, scale::ReplicaPhase::kDraining, now);
  r.drain_started = now;
  r.outstanding.reset();
  return OkStatus();
}

Status ReplicaBookBase::ResumeEntry(ReplicaEntry& r, Seconds now) {
  GS_RETURN_IF_ERROR(RequirePhase(r, scale::ReplicaPhase::kDraining, ", not draining"));
  SetPhase(r, scale::ReplicaPhase::kReady, now);
  return OkStatus();
}

}  // namespace gpuscale::orch
