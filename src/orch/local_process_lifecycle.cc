// LocalProcessOrchestrator: process life (launch, poll, restart with backoff, terminate).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>

#include "orch/argv_template.h"
#include "orch/local_process_orchestrator.h"
#include "orch/parallel.h"
#include "orch/process_util.h"

namespace gpuscale::orch {

using events::EventKind;

namespace {

std::string JoinInts(const std::vector<int>& values) {
  return fmt::format("{}", fmt::join(values, ","));
}

}  // namespace

std::set<int> LocalProcessOrchestrator::PortsInUse() const {
  std::set<int> ports;
  for (const Replica& r : book_.records()) {
    if (r.pid > 0) ports.insert(r.port);
  }
  return ports;
}

// Picks a port, expands the command and spawns it; a failure becomes a scheduled restart, so
// a transient problem (port race, full disk) heals and a permanent one stays visible in
// last_error, start_error and the events without blocking the control loop.
void LocalProcessOrchestrator::Launch(Replica& r, Seconds now) {
  Result<int> port = PickFreePort(config_.port_range_start, config_.port_range_end, PortsInUse());
  if (!port) return LaunchFailed(r, now, port.error().message);
  const std::string gpus = JoinInts(r.gpus);
  Result<std::vector<std::string>> argv = ExpandArgv(
      config_.command,
      ArgvVars{std::to_string(*port), gpus, r.id, KvEventsEndpoint(config_.state_dir, r.id)});
  if (!argv) return LaunchFailed(r, now, argv.error().ToString());
  std::vector<std::pair<std::string, std::string>> env = config_.env;
  env.emplace_back("CUDA_VISIBLE_DEVICES", gpus);
  env.emplace_back(kReplicaMarkerEnv, ReplicaMarkerValue(config_.state_dir));
  env.emplace_back(kReplicaServiceEnv, config_.service);
  env.emplace_back(kReplicaIdEnv, r.id);
  env.emplace_back(kReplicaPortEnv, std::to_string(*port));
  env.emplace_back(kReplicaGpuKeysEnv, fmt::format("{}", fmt::join(r.gpu_keys, ",")));
  SpawnRequest request{*argv, ChildEnvironment(env), r.log_path,
                       fmt::format("---- {} gpuscale: starting replica {} (restarts {}) on port "
                                   "{}, CUDA_VISIBLE_DEVICES={}: {}\n",
                                   FormatRfc3339(now), r.id, r.restarts, *port, gpus,
                                   fmt::join(*argv, " "))};
  Result<int> pid = SpawnDetached(request);
  if (!pid) return LaunchFailed(r, now, pid.error().message);
  WatchExit(*pid);
  r.start_error.clear();
  r.proc = Proc::kRunning;
  r.pid = *pid;
  r.port = *port;
  r.argv = std::move(*argv);
  r.started_at = now;
  r.next_probe_at = now;
  r.health_failures = 0;
  r.kill_sent = false;
  r.restart_after = false;
  book_.SetPhase(r, scale::ReplicaPhase::kStarting, now);
  book_.Emit(now, r.id, EventKind::kReplicaStarted,
             fmt::format("pid {} on port {} with GPUs [{}]", r.pid, r.port, gpus));
}

// No process runs on the replica's GPUs, so they go back to the ledger at once (another
// service's replica or a task may take them) and are leased again when the backoff ends
// (Relaunch): a replica whose command cannot start never holds GPUs while it waits.
void LocalProcessOrchestrator::LaunchFailed(Replica& r, Seconds now, const std::string& why) {
  r.start_error = why;
  ReleaseGpus(r);
  ScheduleRestart(r, now, why);
}

void LocalProcessOrchestrator::Relaunch(Replica& r, Seconds now) {
  // A crashed replica kept its GPUs; one whose launch failed gave them back.
  const bool needs_gpus = config_.gpus_per_replica > 0 && r.gpus.empty();
  if (Status leased = needs_gpus ? LeaseGpus(r, now) : OkStatus(); !leased) {
    r.proc = Proc::kNone;
    book_.SetPhase(r, scale::ReplicaPhase::kPending, now);
    book_.Emit(now, r.id, EventKind::kReplicaPending, "no GPUs to start it again: " + r.last_error);
    return;
  }
  Launch(r, now);
}

void LocalProcessOrchestrator::ScheduleRestart(Replica& r, Seconds now, const std::string& why) {
  r.proc = Proc::kBackoff;
  r.pid = 0;
  book_.ScheduleRestart(r, now, why, "restarting");
}

void LocalProcessOrchestrator::Terminate(Replica& r, Seconds now, bool restart_after) {
  r.proc = Proc::kTerminating;
  r.restart_after = restart_after;
  r.term_sent_at = now;
  r.kill_sent = config_.stop_grace <= Seconds{0};
  SignalGroup(r.pid, r.kill_sent ? SIGKILL : SIGTERM);
}

void LocalProcessOrchestrator::BeginReaping(Replica& r, int code, Seconds now) {
  // A group being terminated had its SIGTERM at term_sent_at and keeps the rest of its
  // grace; one whose leader exited on its own gets it now. The leader is reaped, so the
  // group id itself is signalled (the kernel keeps it while members live).
  const bool signalled = r.proc == Proc::kTerminating;
  r.proc = Proc::kReaping;
  r.exit_code = code;
  if (!signalled) {
    r.term_sent_at = now;
    r.kill_sent = config_.stop_grace <= Seconds{0};
    ::kill(-r.pid, r.kill_sent ? SIGKILL : SIGTERM);
  }
  book_.Emit(now, r.id, EventKind::kReplicaGroupLingers,
             fmt::format("pid {} exited ({}) but processes of its group still run: its GPUs stay "
                         "leased until they are gone",
                         r.pid, DescribeExit(code)));
}

// A stopped replica ends here (r.stopping stays set: Poll removes it); others restart.
void LocalProcessOrchestrator::OnExit(Replica& r, int code, Seconds now) {
  const std::string how = DescribeExit(code);
  const int pid = std::exchange(r.pid, 0);
  r.proc = Proc::kNone;
  if (r.stopping) {
    ReleaseGpus(r);
    book_.Emit(now, r.id, EventKind::kReplicaStopped, fmt::format("pid {} ended: {}", pid, how));
  } else if (r.restart_after) {
    ScheduleRestart(r, now, r.last_error);
  } else if (r.phase == scale::ReplicaPhase::kDraining) {
    // It finished on its own while draining: as good as stopped.
    r.stopping = true;
    ReleaseGpus(r);
    book_.Emit(now, r.id, EventKind::kReplicaStopped,
               fmt::format("pid {} exited while draining: {}", pid, how));
  } else {
    book_.Emit(now, r.id, EventKind::kReplicaCrashed, fmt::format("pid {} exited: {}", pid, how));
    ScheduleRestart(r, now, fmt::format("process exited: {}", how));
  }
}

ProbeResult LocalProcessOrchestrator::Probe(const Replica& r) const {
  if (config_.readiness_path.empty()) return ProbeResult::kOk;
  return probe_(r.port, config_.readiness_path);
}

bool LocalProcessOrchestrator::ProbeDue(const Replica& r, Seconds now) const {
  if (r.proc != Proc::kRunning || now < r.next_probe_at || config_.readiness_path.empty()) {
    return false;
  }
  return r.phase == scale::ReplicaPhase::kStarting || config_.health_interval > Seconds{0};
}

LocalProcessOrchestrator::ProbeResults LocalProcessOrchestrator::ProbeDueReplicas(Seconds now) {
  std::vector<std::pair<std::string, int>> due;  // id, port
  for (const Replica& r : book_.records()) {
    if (ProbeDue(r, now)) due.emplace_back(r.id, r.port);
  }
  std::vector<ProbeResult> results(due.size(), ProbeResult::kNoAnswer);
  ParallelFor(due.size(), kProbeThreads, [&](size_t i) {
    results[i] = probe_(due[i].second, config_.readiness_path);
  });
  ProbeResults probed;
  for (size_t i = 0; i < due.size(); ++i) probed.emplace(due[i].first, results[i]);
  return probed;
}

void LocalProcessOrchestrator::PollRunning(Replica& r, Seconds now, const ProbeResults& probed) {
  if (now < r.next_probe_at) return;
  // This poll's concurrent result; probed here when it was not due before (none are).
  const auto result = [&] {
    const auto it = probed.find(r.id);
    return it != probed.end() ? it->second : Probe(r);
  };
  if (r.phase == scale::ReplicaPhase::kStarting) {
    r.next_probe_at = now + config_.probe_interval;
    if (result() == ProbeResult::kOk) {
      book_.SetPhase(r, scale::ReplicaPhase::kReady, now);
      r.serving = true;
      r.silent_since.reset();
      r.health_failures = 0;
      r.next_probe_at = now + config_.health_interval;
      book_.Emit(now, r.id, EventKind::kReplicaReady,
                 ReadyMessage(r, now, fmt::format("port {}", r.port)));
    } else if (now - StartingSince(r) >= config_.startup_timeout) {
      r.last_error = fmt::format("not ready within startup_timeout ({:.3g} s)",
                                 config_.startup_timeout.count());
      book_.Emit(now, r.id, EventKind::kReplicaStartupTimeout, r.last_error);
      Terminate(r, now, /*restart_after=*/true);
    }
    return;
  }
  if (config_.health_interval <= Seconds{0}) return;
  r.next_probe_at = now + config_.health_interval;
  const ProbeResult probe = result();
  if (probe == ProbeResult::kOk) {
    if (!r.serving) book_.Emit(now, r.id, EventKind::kReplicaServing, "health probe passes again");
    r.serving = true;
    r.silent_since.reset();
    r.health_failures = 0;
    return;
  }
  if (r.serving) {
    book_.Emit(now, r.id, EventKind::kReplicaNotServing,
               fmt::format("health probe {}: out of the gateway's rotation until it passes",
                           probe == ProbeResult::kNoAnswer ? "unanswered" : "failed"));
  }
  r.serving = false;
  if (probe == ProbeResult::kNoAnswer) {
    // Busy or hung: only a long silence says hung.
    if (!r.silent_since) r.silent_since = now;
    if (now - *r.silent_since < config_.liveness_timeout) return;
    r.last_error = fmt::format("no answer to {} for {:.3g} s (liveness_timeout)",
                               config_.readiness_path, (now - *r.silent_since).count());
  } else {
    r.silent_since.reset();
    if (++r.health_failures < config_.health_failure_threshold) return;
    r.last_error = fmt::format("failed {} health probes in a row ({})", r.health_failures,
                               config_.readiness_path);
  }
  book_.Emit(now, r.id, EventKind::kReplicaUnhealthy, r.last_error);
  Terminate(r, now, /*restart_after=*/true);
}

bool LocalProcessOrchestrator::PollOne(Replica& r, Seconds now, const ProbeResults& probed) {
  if (r.proc == Proc::kRunning || r.proc == Proc::kTerminating) {
    if (std::optional<int> code = CheckExited(r.pid)) {
      if (GroupHasLiveMembers(r.pid)) {
        BeginReaping(r, *code, now);
        return true;
      }
      OnExit(r, *code, now);
      return !r.stopping;
    }
  }
  switch (r.proc) {
    case Proc::kRunning:
      if (r.crash_streak > 0 && now - r.started_at >= config_.stable_after) r.crash_streak = 0;
      PollRunning(r, now, probed);
      break;
    case Proc::kTerminating:
      if (!r.kill_sent && now - r.term_sent_at >= config_.stop_grace) {
        r.kill_sent = true;
        SignalGroup(r.pid, SIGKILL);
        book_.Emit(now, r.id, EventKind::kReplicaKilled,
                   fmt::format("pid {} still running {:.3g} s after SIGTERM: sent SIGKILL", r.pid,
                               config_.stop_grace.count()));
      }
      break;
    case Proc::kReaping:
      if (!GroupHasLiveMembers(r.pid)) {
        OnExit(r, r.exit_code, now);
        return !r.stopping;
      }
      if (!r.kill_sent && now - r.term_sent_at >= config_.stop_grace) {
        r.kill_sent = true;
        ::kill(-r.pid, SIGKILL);
        book_.Emit(now, r.id, EventKind::kReplicaKilled,
                   fmt::format("processes of pid {}'s group still running {:.3g} s after "
                               "SIGTERM: sent SIGKILL",
                               r.pid, config_.stop_grace.count()));
      }
      break;
    case Proc::kBackoff:
      if (now >= r.restart_at) Relaunch(r, now);
      break;
    case Proc::kNone:
      break;
  }
  return true;
}

void LocalProcessOrchestrator::Poll(Seconds now) {
  book_.Touch(now);
  ProbeResults probed;
  if (prepared_ && prepared_->first == now) {
    probed = std::move(prepared_->second);
  } else {
    probed = ProbeDueReplicas(now);
  }
  prepared_.reset();
  book_.RetainIf([&](Replica& r) { return PollOne(r, now, probed); });
}

void LocalProcessOrchestrator::PrepareProbes(Seconds now) {
  prepared_.emplace(now, ProbeDueReplicas(now));
}

}  // namespace gpuscale::orch
