// Daemon's tasks/experiments service: creating and stopping the TaskManager, and the
// DaemonApi task methods, forwarded to it.
#include "daemon/daemon.h"

namespace gpuscale::daemon {
namespace {

Error TasksDisabled() {
  return Error{ErrorCode::kUnavailable, "the tasks service is not running in this daemon", ""};
}

}  // namespace

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
  GS_ASSIGN_OR_RETURN(tasks_, experiments::TaskManager::Open(ledger_, *monitor_, *store_, clock_,
                                                             std::move(options)));
  // Any release (a replica stopped, an experiment ended, a gone owner reaped) may let a
  // queued experiment start: wake the scheduler instead of waiting for its re-check.
  experiments::TaskManager* tasks = tasks_.get();
  ledger_.SetReleaseListener([tasks] { tasks->Wake(); });
  return OkStatus();
}

// Stops running experiments (their servers exit, their leases are released); queued ones
// stay queued in the store for the next daemon. Then writes the lease table: Shutdown(false)
// returns without the final PersistLeases (replicas keep theirs), and the experiments'
// released leases must not linger there until the next start drops them as stale.
// Idempotent. REQUIRES: loop_mu_ not held (taken here, as ticks persist leases too).
void Daemon::ShutdownTasks() {
  if (!tasks_) return;
  tasks_->Shutdown();
  MutexLock loop_lock(loop_mu_);
  PersistLeases();
}

Result<task::TaskRecord> Daemon::SubmitTask(task::TaskDefinition definition,
                                            std::string source_text) {
  if (!tasks_) return Unexpected<Error>(TasksDisabled());
  return tasks_->Submit(std::move(definition), std::move(source_text));
}

std::vector<task::TaskRecord> Daemon::ListTasks() {
  if (!tasks_) return {};
  return tasks_->ListTasks();
}

Result<task::TaskRecord> Daemon::GetTask(int64_t id) {
  if (!tasks_) return Unexpected<Error>(TasksDisabled());
  return tasks_->GetTask(id);
}

Result<task::TaskRecord> Daemon::CancelTask(int64_t id) {
  if (!tasks_) return Unexpected<Error>(TasksDisabled());
  return tasks_->CancelTask(id);
}

Result<std::vector<task::ExperimentRecord>> Daemon::ListExperiments(int64_t task_id) {
  if (!tasks_) return Unexpected<Error>(TasksDisabled());
  return tasks_->ListExperiments(task_id);
}

Result<task::ExperimentRecord> Daemon::GetExperiment(int64_t id) {
  if (!tasks_) return Unexpected<Error>(TasksDisabled());
  return tasks_->GetExperiment(id);
}

}  // namespace gpuscale::daemon
