// TaskManager: the scheduler thread (queue rounds, GPU leases, timeouts) and one thread per
// running experiment (task_manager.h).
#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "experiments/task_manager_impl.h"

namespace gpuscale::experiments {

using events::EventKind;

namespace {

std::chrono::steady_clock::duration Steady(Seconds s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(s);
}

EventKind FinishKind(task::ExperimentStatus status) {
  switch (status) {
    case task::ExperimentStatus::kSucceeded:
      return EventKind::kExperimentSucceeded;
    case task::ExperimentStatus::kCancelled:
      return EventKind::kExperimentCancelled;
    default:
      return EventKind::kExperimentFailed;
  }
}

}  // namespace

void TaskManager::Impl::Start() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  if (scheduler_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return;
  }
  scheduler_ = std::thread([this] { SchedulerMain(); });
}

void TaskManager::Impl::Wake() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_requested_ = true;
  }
  wake_cv_.notify_all();
}

void TaskManager::Impl::Retune(const TaskTuning& tuning) {
  runner_.SetStopGrace(tuning.stop_grace);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.SetMaxHeadSkips(tuning.max_head_skips);
  }
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    recheck_interval_ = tuning.recheck_interval;
    wake_requested_ = true;
  }
  wake_cv_.notify_all();
}

// Running experiments are cancelled and fail with "daemon shut down"; queued ones stay
// queued in the store for the next daemon.
void TaskManager::Impl::Shutdown() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutting_down_ = true;
    for (auto& [id, e] : experiments_) {
      if (e.run) e.run->cancel = true;
    }
  }
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  if (scheduler_.joinable()) scheduler_.join();
  std::vector<std::shared_ptr<RunHandle>> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    runs.swap(runs_);
  }
  for (const std::shared_ptr<RunHandle>& run : runs) {
    if (run->thread.joinable()) run->thread.join();
  }
}

void TaskManager::Impl::SchedulerMain() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      wake_cv_.wait_for(lock, Steady(recheck_interval_),
                        [this] { return wake_requested_ || stop_; });
      if (stop_) return;
      wake_requested_ = false;
    }
    JoinFinished();
    Round();
  }
}

// Joins experiment threads that have ended (their results are already stored).
void TaskManager::Impl::JoinFinished() {
  std::vector<std::shared_ptr<RunHandle>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(runs_, [&done](const std::shared_ptr<RunHandle>& run) {
      if (!run->finished) return false;
      done.push_back(run);
      return true;
    });
  }
  for (const std::shared_ptr<RunHandle>& run : done) {
    if (run->thread.joinable()) run->thread.join();
  }
}

std::map<int64_t, int> TaskManager::Impl::RunningByTaskLocked() const {
  std::map<int64_t, int> running;
  for (const auto& [id, task] : tasks_) running[id] = task.running;
  return running;
}

// One scheduling round: time out expired experiments, then offer GPUs in queue order.
void TaskManager::Impl::Round() {
  // Read outside mu_: a backend call may be slow (nvidia-smi), and API calls need mu_.
  const Result<gpu::GpuSnapshot> snapshot = monitor_.Snapshot();
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  const Seconds now = clock_.Now();
  for (const task::QueuedExperiment& expired : queue_.TakeExpired(now)) {
    ExpireLocked(expired, snapshot ? &*snapshot : nullptr, now);
  }
  queue_.BeginRound();
  for (auto id = queue_.NextCandidate(RunningByTaskLocked()); id;
       id = queue_.NextCandidate(RunningByTaskLocked())) {
    if (TryStartLocked(*id, snapshot, now)) {
      queue_.Started(*id);
    } else {
      queue_.DidNotFit(*id);
    }
  }
}

// Leases GPUs for one queued experiment and starts its thread; false when they are not free.
// REQUIRES: mu_ held.
bool TaskManager::Impl::TryStartLocked(int64_t experiment_id,
                                       const Result<gpu::GpuSnapshot>& snapshot, Seconds now) {
  auto it = experiments_.find(experiment_id);
  if (it == experiments_.end()) return false;
  ActiveExperiment& e = it->second;
  if (!snapshot) {
    e.last_error = "cannot read GPUs: " + snapshot.error().message;
    return false;
  }
  alloc::SelectionRequest request;
  request.gpu_count = e.record.gpus_required;
  request.min_memory_free_mb = e.record.memory_mb_per_gpu;
  request.max_utilization_percent = 100;
  request.weights = options_.weights;
  const std::string owner = LeaseOwnerOf(experiment_id);
  Result<alloc::Selection> selection = ledger_.Allocate(*snapshot, request, owner, now);
  if (!selection) {
    e.last_error = selection.error().message;
    return false;
  }
  e.record.status = task::ExperimentStatus::kStarting;
  e.record.started_at = now;
  e.record.lease_owner = owner;
  e.record.gpu_info = GpuInfoOf(*selection, *snapshot);
  e.record.log_path = fmt::format("{}/logs/experiment-{}.log", options_.state_dir, experiment_id);
  PersistExperimentLocked(e.record);
  ActiveTask& task = tasks_.at(e.record.task_id);
  Publish(EventKind::kExperimentStarted,
          fmt::format("experiment {} of task {} leased GPUs {}", experiment_id, task.record.id,
                      fmt::join(e.record.gpu_info->indices, ",")),
          task.record.id, experiment_id, e.record.gpu_info->indices, now);
  ++task.running;
  if (task.record.status == task::TaskStatus::kQueued) {
    task.record.status = task::TaskStatus::kRunning;
    PersistTaskLocked(task.record);
  }
  LaunchLocked(e, task);
  return true;
}

// REQUIRES: mu_ held; `experiment` holds its lease.
void TaskManager::Impl::LaunchLocked(ActiveExperiment& experiment, ActiveTask& task) {
  ExperimentLaunch launch;
  launch.experiment_id = experiment.record.id;
  launch.task = task.record.definition;
  launch.plan = experiment.plan;
  for (const task::AllocatedGpu& g : experiment.record.gpu_info->gpus) {
    alloc::SelectedGpu selected;
    selected.index = g.index;
    selected.uuid = g.uuid;
    selected.node = g.node;
    selected.name = g.name;
    selected.memory_free_mb = g.memory_free_mb;
    selected.utilization_percent = g.utilization_percent;
    selected.score = g.score;
    launch.gpus.gpus.push_back(std::move(selected));
  }
  launch.log_path = experiment.record.log_path;
  auto run = std::make_shared<RunHandle>();
  experiment.run = run;
  runs_.push_back(run);
  run->thread = std::thread([this, id = experiment.record.id, launch = std::move(launch), run] {
    RunExperiment(id, launch, run);
  });
}

void TaskManager::Impl::RunExperiment(int64_t experiment_id, ExperimentLaunch launch,
                                      std::shared_ptr<RunHandle> run) {
  RunCallbacks callbacks;
  callbacks.on_started = [this, experiment_id](int pid, int port,
                                               const std::vector<std::string>& argv) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = experiments_.find(experiment_id);
    if (it == experiments_.end()) return;
    it->second.record.pid = pid;
    it->second.record.port = port;
    it->second.record.server_argv = argv;
    PersistExperimentLocked(it->second.record);  // a restart can stop this server
  };
  callbacks.on_benchmark = [this, experiment_id] {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = experiments_.find(experiment_id);
    if (it == experiments_.end()) return;
    task::ExperimentRecord& r = it->second.record;
    r.status = task::ExperimentStatus::kRunning;
    PersistExperimentLocked(r);
    Publish(EventKind::kExperimentRunning,
            fmt::format("experiment {}: server ready on port {}, benchmark running", r.id, r.port),
            r.task_id, r.id, r.gpu_info ? r.gpu_info->indices : std::vector<int>{}, clock_.Now());
  };
  RunOutcome outcome = runner_.Run(launch, callbacks, run->cancel);
  {
    std::lock_guard<std::mutex> lock(mu_);
    FinishLocked(experiment_id, std::move(outcome));
    run->finished = true;
  }
  finished_cv_.notify_all();
  Wake();
}

// Stores the outcome, releases the lease (the runner returns once the server is gone), and
// updates the task. REQUIRES: mu_ held.
void TaskManager::Impl::FinishLocked(int64_t experiment_id, RunOutcome outcome) {
  auto it = experiments_.find(experiment_id);
  if (it == experiments_.end()) return;
  task::ExperimentRecord& r = it->second.record;
  const Seconds now = clock_.Now();
  r.status = outcome.status;
  r.message = std::move(outcome.message);
  if (shutting_down_ && r.status == task::ExperimentStatus::kCancelled) {
    r.status = task::ExperimentStatus::kFailed;
    r.message = "daemon shut down";
  } else if (r.status == task::ExperimentStatus::kCancelled && r.message.empty()) {
    r.message = "task cancelled";
  }
  r.bench = std::move(outcome.bench);
  r.gpu_monitoring = std::move(outcome.gpu_monitoring);
  if (!outcome.server_argv.empty()) r.server_argv = std::move(outcome.server_argv);
  if (outcome.port != 0) r.port = outcome.port;
  r.pid = 0;  // the server is gone
  r.finished_at = now;
  PersistExperimentLocked(r);
  ledger_.ReleaseOwner(r.lease_owner);
  const std::vector<int> gpus = r.gpu_info ? r.gpu_info->indices : std::vector<int>{};
  Publish(FinishKind(r.status),
          r.message.empty()
              ? fmt::format("experiment {} {}", r.id, task::ExperimentStatusName(r.status))
              : fmt::format("experiment {} {}: {}", r.id, task::ExperimentStatusName(r.status),
                            r.message),
          r.task_id, r.id, gpus, now);
  const int64_t task_id = r.task_id;
  experiments_.erase(it);
  if (auto task = tasks_.find(task_id); task != tasks_.end()) --task->second.running;
  // On shutdown the task stays as it is: its queued experiments resume in the next daemon.
  if (!shutting_down_) RefreshTaskLocked(task_id, now);
}

// A queued experiment whose GPU wait timed out fails with the allocator's last refusal (or
// a fresh one when it was never offered, e.g. behind a reservation).
// REQUIRES: mu_ held.
void TaskManager::Impl::ExpireLocked(const task::QueuedExperiment& expired,
                                     const gpu::GpuSnapshot* snapshot, Seconds now) {
  auto it = experiments_.find(expired.experiment_id);
  if (it == experiments_.end()) return;
  std::string reason = it->second.last_error;
  if (reason.empty() && snapshot != nullptr) {
    alloc::SelectionRequest request;
    request.gpu_count = it->second.record.gpus_required;
    request.min_memory_free_mb = it->second.record.memory_mb_per_gpu;
    request.weights = options_.weights;
    std::map<std::string, std::string> held;
    for (const alloc::Lease& l : ledger_.Leases()) held[l.key] = l.owner;
    alloc::TakenGpus taken;
    taken.owner_of = [&held](const std::string& key) -> const std::string* {
      auto h = held.find(key);
      return h == held.end() ? nullptr : &h->second;
    };
    Result<alloc::Selection> dry = alloc::SelectGpus(*snapshot, request, taken);
    reason = dry ? "GPUs were held for experiments ahead in the queue" : dry.error().message;
  }
  const double waited = (expired.deadline - expired.queued_at).count();
  EndQueuedLocked(expired.experiment_id, task::ExperimentStatus::kFailed,
                  fmt::format("no GPUs after {:g} s: {}", waited, reason), now);
}

// Ends an experiment that never started (cancelled, timed out). REQUIRES: mu_ held; it is no
// longer in queue_.
void TaskManager::Impl::EndQueuedLocked(int64_t experiment_id, task::ExperimentStatus status,
                                        std::string message, Seconds now) {
  auto it = experiments_.find(experiment_id);
  if (it == experiments_.end()) return;
  task::ExperimentRecord& r = it->second.record;
  r.status = status;
  r.message = std::move(message);
  r.finished_at = now;
  PersistExperimentLocked(r);
  Publish(FinishKind(status), fmt::format("experiment {}: {}", r.id, r.message), r.task_id, r.id,
          {}, now);
  const int64_t task_id = r.task_id;
  experiments_.erase(it);
  RefreshTaskLocked(task_id, now);
}

}  // namespace gpuscale::experiments
