// SlurmOrchestrator: polling Slurm (job and node listings), replica life from job states,
// stray jobs, and adoption after a daemon restart (slurm_orchestrator.h explains the rules).
#include <fmt/format.h>

#include <algorithm>

#include "orch/parallel.h"
#include "orch/slurm_json.h"
#include "orch/slurm_orchestrator.h"

namespace gpuscale::orch {

using events::EventKind;

const SlurmJob* SlurmOrchestrator::JobById(const std::string& job_id) const {
  if (job_id.empty()) return nullptr;
  for (const SlurmJob& job : jobs_) {
    if (job.id == job_id) return &job;
  }
  return nullptr;
}

std::string SlurmOrchestrator::AddressOf(const std::string& node) const {
  for (const SlurmNode& n : nodes_) {
    if (n.name != node) continue;
    if (!n.address.empty()) return n.address;
    if (!n.hostname.empty()) return n.hostname;
  }
  return node;
}

// Both listings or nothing: a half-updated view could make a live job look gone.
SlurmOrchestrator::Listing SlurmOrchestrator::List(SlurmTransport& transport) {
  Listing listing{transport.ListJobs(), std::vector<SlurmNode>{}};
  if (listing.jobs) listing.nodes = transport.ListNodes();
  return listing;
}

void SlurmOrchestrator::PostListing() {
  if (listing_) return;
  listing_ = true;
  calls_.Post([this, transport = transport_]() -> SerialCalls::Apply {
    return [this, listing = List(*transport)](Seconds at) mutable {
      listing_ = false;
      ApplyListing(std::move(listing), at);
    };
  });
}

bool SlurmOrchestrator::Refresh(Listing listing, Seconds now) {
  const Error* error = !listing.jobs    ? &listing.jobs.error()
                       : !listing.nodes ? &listing.nodes.error()
                                        : nullptr;
  if (error != nullptr) {
    if (engine_error_.empty()) {
      book_.Emit(now, "", EventKind::kEngineUnavailable,
                 fmt::format("slurm ({} transport) unreachable: {}; replicas are kept as they are "
                             "until it answers",
                             transport_->Name(), error->message));
    }
    engine_error_ = error->message;
    return false;
  }
  if (!engine_error_.empty()) {
    book_.Emit(now, "", EventKind::kEngineRecovered,
               fmt::format("slurm ({} transport) answers again", transport_->Name()));
    engine_error_.clear();
  }
  jobs_ = std::move(*listing.jobs);
  nodes_ = std::move(*listing.nodes);
  return true;
}

// Posting first lets an inline SerialCalls (tests) apply this Poll's listing in this Poll,
// as the threaded one applies the last Poll's.
void SlurmOrchestrator::Poll(Seconds now) {
  book_.Touch(now);
  probed_.clear();
  if (prepared_ && prepared_->first == now) probed_ = std::move(prepared_->second);
  prepared_.reset();
  PostListing();
  calls_.ApplyDone(now);
  Advance(now);
}

void SlurmOrchestrator::ApplyListing(Listing listing, Seconds now) {
  if (!Refresh(std::move(listing), now)) return;  // never act on missing data
  book_.RetainIf([&](Replica& r) { return ApplyJob(r, JobById(r.job_id), now); });
  CancelStrays();
}

void SlurmOrchestrator::PrepareProbes(Seconds now) {
  std::vector<const Replica*> due;
  for (const Replica& r : book_.records()) {
    if (!config_.readiness_path.empty() && r.running && !r.stopping &&
        r.phase == scale::ReplicaPhase::kStarting && now >= r.next_probe_at) {
      due.push_back(&r);
    }
  }
  std::vector<char> ready(due.size(), 0);
  ParallelFor(due.size(), 32, [&](size_t i) {
    ready[i] = probe_(due[i]->host, due[i]->port, config_.readiness_path) ? 1 : 0;
  });
  std::map<std::string, bool> answers;
  for (size_t i = 0; i < due.size(); ++i) answers.emplace(due[i]->id, ready[i] != 0);
  prepared_.emplace(now, std::move(answers));
}

bool SlurmOrchestrator::ApplyJob(Replica& r, const SlurmJob* job, Seconds now) {
  // A replica whose sbatch has not answered is not in a listing that ran before it (the
  // calls run in order); one waiting out a backoff has no job: Advance resubmits it.
  if (r.submitting || r.job_id.empty()) return true;
  const bool active = job != nullptr && SlurmJobActive(job->state);
  if (r.stopping) {
    if (active) {
      // Retried on a listing that answered, not every Poll: Slurm was reachable just now.
      if (r.cancel_pending && cancelling_.count(r.job_id) == 0) PostStopCancel(r);
      return true;
    }
    book_.Emit(now, r.id, EventKind::kReplicaStopped,
               fmt::format("Slurm job {} ended{}", r.job_id,
                           job == nullptr ? "" : fmt::format(": {}", job->state)));
    return false;
  }
  if (!active) {
    return OnEnded(r,
                   job == nullptr
                       ? fmt::format("Slurm job {} is no longer listed", r.job_id)
                       : fmt::format("Slurm job {} ended: {} ({})", r.job_id, job->state,
                                     job->reason),
                   now);
  }
  if (job->state == "RUNNING") {
    OnRunning(r, *job, now);
  } else {
    OnQueued(r, *job, now);
  }
  return true;
}

void SlurmOrchestrator::Advance(Seconds now) {
  if (!engine_error_.empty()) return;  // an outage changes nothing (see the header)
  for (Replica& r : book_.records()) {
    if (r.submitting || r.stopping) continue;
    if (r.job_id.empty()) {  // waiting out a backoff
      if (now < r.restart_at) continue;
      // Another port: the last job may have died because something on its node held this one.
      if (Result<int> port = PickPort(r.port)) r.port = *port;
      if (Status submitted = Submit(r, now); !submitted) {
        book_.Emit(now, r.id, EventKind::kReplicaStartFailed, submitted.error().message);
        ScheduleResubmit(r, now, submitted.error().message);
      }
      continue;
    }
    if (r.running) ProbeStarting(r, now);
  }
}

void SlurmOrchestrator::OnQueued(Replica& r, const SlurmJob& job, Seconds now) {
  const std::string reason =
      job.reason.empty() || job.reason == "None" ? job.state : job.reason;
  if (r.running) {  // requeued (node failure, preemption): back in the queue
    r.running = false;
    r.host.clear();
    book_.Emit(now, r.id, EventKind::kReplicaCrashed,
               fmt::format("Slurm job {} went back to the queue ({})", r.job_id, reason));
  }
  book_.SetPhase(r, scale::ReplicaPhase::kPending, now);
  if (r.last_error != reason) {
    book_.Emit(now, r.id, EventKind::kReplicaPending,
               fmt::format("Slurm job {} is {}: {}", r.job_id, job.state, reason));
    r.last_error = reason;
  }
}

void SlurmOrchestrator::OnRunning(Replica& r, const SlurmJob& job, Seconds now) {
  if (!r.running) {
    r.running = true;
    r.started_at = now;
    r.node = !job.batch_host.empty() ? job.batch_host : job.nodes;
    r.host = AddressOf(r.node);
    r.next_probe_at = now;
    r.last_error.clear();
    book_.SetPhase(r, scale::ReplicaPhase::kStarting, now);
    book_.Emit(now, r.id, EventKind::kReplicaScheduled,
               fmt::format("Slurm job {} runs on node {} ({}), port {}", r.job_id, r.node, r.host,
                           r.port));
  }
}

void SlurmOrchestrator::ProbeStarting(Replica& r, Seconds now) {
  if (r.phase != scale::ReplicaPhase::kStarting || now < r.next_probe_at) return;
  r.next_probe_at = now + config_.probe_interval;
  const auto prepared = probed_.find(r.id);
  const bool ready = config_.readiness_path.empty() ||
                     (prepared != probed_.end() ? prepared->second
                                                : probe_(r.host, r.port, config_.readiness_path));
  if (ready) {
    book_.SetPhase(r, scale::ReplicaPhase::kReady, now);
    r.crash_streak = 0;
    book_.Emit(now, r.id, EventKind::kReplicaReady,
               ReadyMessage(r, now, fmt::format("{}:{}", r.host, r.port)));
  } else if (now - StartingSince(r) >= config_.startup_timeout) {
    r.last_error = fmt::format("not ready within startup_timeout ({:.3g} s)",
                               config_.startup_timeout.count());
    book_.Emit(now, r.id, EventKind::kReplicaStartupTimeout, r.last_error);
    // The old job id leaves the replica, so a cancel that does not land is retried by
    // CancelStrays on a later listing.
    PostCancel(r.job_id, {});
    r.job_id.clear();
    r.running = false;
    ScheduleResubmit(r, now, r.last_error);
  }
}

bool SlurmOrchestrator::OnEnded(Replica& r, const std::string& why, Seconds now) {
  r.running = false;
  r.job_id.clear();
  if (r.phase == scale::ReplicaPhase::kDraining) {  // as good as stopped
    r.stopping = true;
    book_.Emit(now, r.id, EventKind::kReplicaStopped, why + " while draining");
    return false;
  }
  book_.Emit(now, r.id, EventKind::kReplicaCrashed, why);
  ScheduleResubmit(r, now, why);
  return true;
}

void SlurmOrchestrator::ScheduleResubmit(Replica& r, Seconds now, const std::string& why) {
  r.backoff = true;
  r.host.clear();
  book_.ScheduleRestart(r, now, why, "resubmitting");
}

void SlurmOrchestrator::CancelStrays() {
  const std::string prefix = JobName(config_.service, "");
  for (const SlurmJob& job : jobs_) {
    if (!SlurmJobActive(job.state) || job.name.rfind(prefix, 0) != 0) continue;
    const bool ours = book_.Any([&](const Replica& r) { return r.job_id == job.id; });
    if (ours || strays_cancelled_.count(job.id) != 0 || cancelling_.count(job.id) != 0) continue;
    PostCancel(job.id, [this, job, prefix](bool delivered, const Status&, Seconds at) {
      if (!delivered) return;  // a later listing still shows it: cancelled again then
      strays_cancelled_.insert(job.id);
      book_.Emit(at, job.name.substr(prefix.size()), EventKind::kReplicaCleanedUp,
                 fmt::format("cancelled Slurm job {} ({}): it carries this service's name but "
                             "belongs to no replica",
                             job.id, job.name));
    });
  }
}

AdoptionReport SlurmOrchestrator::Adopt(const std::vector<ReplicaRecord>& records, Seconds now) {
  book_.Touch(now);
  AdoptionReport report;
  // Synchronous: adoption runs once, before the loop drives this service.
  const bool verified = Refresh(List(*transport_), now);
  if (!verified) {
    report.errors.push_back(fmt::format("slurm unreachable during adoption ({}); replicas with "
                                        "a job id are adopted unverified",
                                        engine_error_));
  }
  for (const ReplicaRecord& record : records) {
    book_.ReserveId(record.id);
    AdoptOne(record, now, verified, report);
  }
  return report;
}

void SlurmOrchestrator::AdoptOne(const ReplicaRecord& record, Seconds now, bool verified,
                                 AdoptionReport& report) {
  const SlurmJob* job = JobById(record.engine_id);
  const bool alive = job != nullptr && SlurmJobActive(job->state) &&
                     job->name == JobName(config_.service, record.id);
  if (record.engine_id.empty() || (verified && !alive)) {
    report.cleaned_up.push_back(record.id);
    book_.Emit(now, record.id, EventKind::kReplicaCleanedUp,
               record.engine_id.empty()
                   ? std::string("no Slurm job was recorded")
                   : fmt::format("Slurm job {} is {}", record.engine_id,
                                 job == nullptr ? "no longer listed" : job->state));
    return;
  }
  Replica r;
  ReplicaBookBase::Restore(r, record);
  r.job_id = record.engine_id;
  r.host = record.host;
  r.phase = record.phase;
  r.phase_since = record.phase_since;
  r.drain_started = now;
  if (record.stopping) {
    r.stopping = true;
    Status cancelled = transport_->Cancel(r.job_id);
    r.cancel_pending = !cancelled && cancelled.error().code != ErrorCode::kNotFound;
    report.cleaned_up.push_back(r.id);
    book_.Emit(now, r.id, EventKind::kReplicaCleanedUp,
               fmt::format("finishing its stop: cancelled Slurm job {}", r.job_id));
  } else {
    if (verified) {
      RestoreFromJob(r, record, *job, now);
    } else {
      r.running = record.phase != scale::ReplicaPhase::kPending;
    }
    report.adopted.push_back(r.id);
    book_.Emit(now, r.id, EventKind::kReplicaAdopted,
               fmt::format("Slurm job {} ({})", r.job_id, verified ? job->state : "unverified"));
  }
  book_.Add(std::move(r));
}

void SlurmOrchestrator::RestoreFromJob(Replica& r, const ReplicaRecord& record, const SlurmJob& job,
                                       Seconds now) {
  if (job.state != "RUNNING") {
    r.running = false;
    r.last_error = job.reason;
    book_.SetPhase(r, scale::ReplicaPhase::kPending, now);
    return;
  }
  r.running = true;
  r.node = !job.batch_host.empty() ? job.batch_host : job.nodes;
  r.host = AddressOf(r.node);
  if (record.phase != scale::ReplicaPhase::kReady &&
      record.phase != scale::ReplicaPhase::kDraining) {
    book_.SetPhase(r, scale::ReplicaPhase::kStarting, now);
    r.next_probe_at = now;
  }
  if (r.started_at <= Seconds{0}) r.started_at = now;
}

}  // namespace gpuscale::orch
