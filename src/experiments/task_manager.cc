// TaskManager: the public API, submission, cancellation and restart reconciliation
// (task_manager.h). Scheduling and experiment threads: task_manager_scheduler.cc.
#include "experiments/task_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "config/task_definition.h"
#include "experiments/task_manager_impl.h"
#include "task/grid.h"
#include "task/objective.h"

namespace gpuscale::experiments {

using events::EventKind;

namespace {

constexpr std::string_view kRestartReason = "daemon restarted while the experiment was running";

std::string ParametersText(const std::map<std::string, alloc::ParamScalar>& parameters) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : parameters) {
    parts.push_back(fmt::format("{}={}", name, task::ParamText(value)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

// ---------------------------------------------------------------- TaskManager (forwarding)

TaskManager::TaskManager(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TaskManager::~TaskManager() { impl_->Shutdown(); }

Result<std::unique_ptr<TaskManager>> TaskManager::Open(alloc::LeaseLedger& ledger,
                                                       gpu::Monitor& monitor,
                                                       store::Store& store, Clock& clock,
                                                       TaskManagerOptions options) {
  auto impl = std::make_unique<Impl>(ledger, monitor, store, clock, std::move(options));
  GS_RETURN_IF_ERROR(impl->Reconcile());
  return std::unique_ptr<TaskManager>(new TaskManager(std::move(impl)));
}

void TaskManager::Start() { impl_->Start(); }
void TaskManager::Shutdown() { impl_->Shutdown(); }
void TaskManager::Wake() { impl_->Wake(); }
void TaskManager::Retune(const TaskTuning& tuning) { impl_->Retune(tuning); }
Result<task::TaskRecord> TaskManager::Submit(task::TaskDefinition definition,
                                             std::string source_text) {
  return impl_->Submit(std::move(definition), std::move(source_text));
}
std::vector<task::TaskRecord> TaskManager::ListTasks() { return impl_->ListTasks(); }
Result<task::TaskRecord> TaskManager::GetTask(int64_t id) { return impl_->GetTask(id); }
Result<task::TaskRecord> TaskManager::CancelTask(int64_t id) { return impl_->CancelTask(id); }
Result<std::vector<task::ExperimentRecord>> TaskManager::ListExperiments(int64_t task_id) {
  return impl_->ListExperiments(task_id);
}
Result<task::ExperimentRecord> TaskManager::GetExperiment(int64_t id) {
  return impl_->GetExperiment(id);
}

// ---------------------------------------------------------------- Impl

TaskManager::Impl::Impl(alloc::LeaseLedger& ledger, gpu::Monitor& monitor, store::Store& store,
                        Clock& clock, TaskManagerOptions options)
    : ledger_(ledger),
      monitor_(monitor),
      store_(store),
      clock_(clock),
      options_(std::move(options)),
      runner_(clock,
              [&monitor](Seconds since) {
                std::vector<gpu::HistoryPoint> points = monitor.History();
                std::erase_if(points, [since](const gpu::HistoryPoint& p) {
                  return p.taken_at < since;
                });
                return points;
              },
              options_.runner),
      queue_(options_.max_head_skips),
      recheck_interval_(options_.recheck_interval) {}

// The definition of a stored task: re-parsed from its source text once, then cached.
// REQUIRES: mu_ held.
Result<task::TaskDefinition> TaskManager::Impl::DefinitionOf(const store::TaskRow& row) {
  if (auto it = definitions_.find(row.id); it != definitions_.end()) return it->second;
  if (auto it = tasks_.find(row.id); it != tasks_.end()) return it->second.record.definition;
  Result<task::TaskDefinition> parsed =
      config::ParseTaskDefinitionText(row.source_text, fmt::format("stored task {}", row.id));
  if (!parsed) return parsed;
  definitions_[row.id] = *parsed;
  return parsed;
}

// REQUIRES: mu_ held.
Result<task::TaskRecord> TaskManager::Impl::LoadTask(int64_t id) {
  if (auto it = tasks_.find(id); it != tasks_.end()) return it->second.record;
  GS_ASSIGN_OR_RETURN(store::TaskRow row, store_.tasks().GetTask(id));
  Result<task::TaskDefinition> definition = DefinitionOf(row);
  // Shown even when its text no longer parses (written by another version): name only.
  return TaskRecordOf(row, definition ? std::move(*definition) : task::TaskDefinition{});
}

// Every grid point must render its argv and fit on this machine.
Status TaskManager::Impl::CheckPlans(const task::TaskDefinition& definition,
                                     const std::vector<task::ExperimentPlan>& plans) {
  if (definition.server_command.empty()) {
    return InvalidArgument("expected the server command (an argv list)", "server.command");
  }
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot snapshot, monitor_.Snapshot());
  for (const task::ExperimentPlan& plan : plans) {
    task::ArgvContext context;
    context.port = 1;
    for (int i = 0; i < plan.gpus; ++i) context.gpu_indices.push_back(i);
    GS_RETURN_IF_ERROR(task::RenderServerArgv(definition, plan, context));
    if (static_cast<size_t>(plan.gpus) > snapshot.gpus.size()) {
      return ResourceExhausted(
          fmt::format(
              "parameter combination {} ({}) needs {} GPUs but this machine has {} ({} backend); "
              "lower the parallelism parameters or add GPUs",
              plan.index, ParametersText(plan.parameters), plan.gpus, snapshot.gpus.size(),
              snapshot.backend),
          "parameters");
    }
  }
  return OkStatus();
}

Result<task::TaskRecord> TaskManager::Impl::Submit(task::TaskDefinition definition,
                                                   std::string source_text) {
  GS_RETURN_IF_ERROR(task::ValidateObjective(definition.objective));
  GS_ASSIGN_OR_RETURN(std::vector<task::ExperimentPlan> plans, task::ExpandGrid(definition));
  GS_RETURN_IF_ERROR(CheckPlans(definition, plans));
  const Seconds now = clock_.Now();
  task::TaskRecord record;
  record.definition = std::move(definition);
  record.source_text = std::move(source_text);
  record.experiments_total = static_cast<int>(plans.size());
  record.created_at = now;
  std::vector<task::ExperimentRecord> experiments;
  std::vector<store::ExperimentRow> rows;
  for (const task::ExperimentPlan& plan : plans) {
    task::ExperimentRecord e;
    e.index = plan.index;
    e.parameters = plan.parameters;
    e.gpus_required = plan.gpus;
    e.memory_mb_per_gpu = plan.memory_mb_per_gpu;
    e.queued_at = now;
    rows.push_back(ExperimentRowOf(e));
    experiments.push_back(std::move(e));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return Unavailable("the daemon is shutting down", "");
  GS_ASSIGN_OR_RETURN(store::AddedTask added, store_.tasks().AddTask(TaskRowOf(record), rows));
  record.id = added.task_id;
  Publish(
      EventKind::kTaskSubmitted,
      fmt::format("task {} '{}': {} experiments", record.id, record.definition.name, plans.size()),
      record.id, 0, {}, now);
  ActiveTask& active = tasks_[record.id];
  active.record = record;
  active.plans = plans;
  for (size_t i = 0; i < experiments.size(); ++i) {
    experiments[i].id = added.experiment_ids[i];
    experiments[i].task_id = record.id;
    QueueLocked(ActiveExperiment{std::move(experiments[i]), plans[i], "", nullptr});
  }
  Wake();
  return record;
}

// Puts an experiment (already stored as queued) in the queue and announces it.
// REQUIRES: mu_ held; its task is in tasks_.
void TaskManager::Impl::QueueLocked(ActiveExperiment experiment) {
  const task::TaskRecord& task = tasks_.at(experiment.record.task_id).record;
  task::QueuedExperiment q;
  q.experiment_id = experiment.record.id;
  q.task_id = task.id;
  q.priority = task.definition.priority;
  q.gpus = experiment.record.gpus_required;
  q.task_max_parallel = task.definition.max_parallel;
  q.queued_at = experiment.record.queued_at;
  q.deadline = experiment.record.queued_at + task.definition.gpu_wait_timeout;
  queue_.Push(q);
  Publish(EventKind::kExperimentQueued,
          fmt::format("experiment {} of task {} queued: {} ({} GPUs)", q.experiment_id, task.id,
                      ParametersText(experiment.record.parameters), q.gpus),
          task.id, q.experiment_id, {}, clock_.Now());
  experiments_[q.experiment_id] = std::move(experiment);
}

std::vector<task::TaskRecord> TaskManager::Impl::ListTasks() {
  Result<std::vector<store::TaskRow>> rows = store_.tasks().ListTasks();
  if (!rows) return {};
  std::vector<task::TaskRecord> tasks;
  std::lock_guard<std::mutex> lock(mu_);
  for (const store::TaskRow& row : *rows) {
    if (auto it = tasks_.find(row.id); it != tasks_.end()) {
      tasks.push_back(it->second.record);
      continue;
    }
    Result<task::TaskDefinition> definition = DefinitionOf(row);
    tasks.push_back(
        TaskRecordOf(row, definition ? std::move(*definition) : task::TaskDefinition{}));
  }
  return tasks;
}

Result<task::TaskRecord> TaskManager::Impl::GetTask(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadTask(id);
}

Result<std::vector<task::ExperimentRecord>> TaskManager::Impl::ListExperiments(int64_t task_id) {
  GS_ASSIGN_OR_RETURN(store::TaskRow task, store_.tasks().GetTask(task_id));
  GS_ASSIGN_OR_RETURN(std::vector<store::ExperimentRow> rows,
                      store_.tasks().ListExperiments(task.id));
  std::vector<task::ExperimentRecord> experiments;
  for (const store::ExperimentRow& row : rows) {
    GS_ASSIGN_OR_RETURN(task::ExperimentRecord e, ExperimentRecordOf(row));
    experiments.push_back(std::move(e));
  }
  return experiments;
}

Result<task::ExperimentRecord> TaskManager::Impl::GetExperiment(int64_t id) {
  GS_ASSIGN_OR_RETURN(store::ExperimentRow row, store_.tasks().GetExperiment(id));
  return ExperimentRecordOf(row);
}

// Queued experiments end at once; running ones are told to stop, and the call waits (about
// the runner's stop grace at most) until their servers are gone, so the answer shows them
// cancelled and their GPUs free.
Result<task::TaskRecord> TaskManager::Impl::CancelTask(int64_t id) {
  std::unique_lock<std::mutex> lock(mu_);
  GS_ASSIGN_OR_RETURN(task::TaskRecord task, LoadTask(id));
  auto active = tasks_.find(id);
  if (active == tasks_.end() || task.status == task::TaskStatus::kCancelled) {
    return FailedPrecondition(fmt::format("task {} already ended ({})", id,
                                          task::TaskStatusName(task.status)),
                              "id");
  }
  const Seconds now = clock_.Now();
  active->second.record.status = task::TaskStatus::kCancelled;
  active->second.record.message = "cancelled by request";
  active->second.record.finished_at = now;
  PersistTaskLocked(active->second.record);
  Publish(EventKind::kTaskCancelled,
          fmt::format("task {} '{}' cancelled", id, task.definition.name), id, 0, {}, now);
  std::vector<int64_t> queued;
  for (const task::QueuedExperiment& q : queue_.Snapshot()) {
    if (q.task_id == id) queued.push_back(q.experiment_id);
  }
  for (int64_t experiment_id : queued) {
    queue_.Remove(experiment_id);
    EndQueuedLocked(experiment_id, task::ExperimentStatus::kCancelled, "task cancelled", now);
  }
  for (auto& [experiment_id, e] : experiments_) {
    if (e.record.task_id == id && e.run) e.run->cancel = true;
  }
  RefreshTaskLocked(id, now);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            runner_.StopGrace() + Seconds{5});
  finished_cv_.wait_until(lock, deadline, [&] { return tasks_.count(id) == 0; });
  lock.unlock();
  Wake();
  std::lock_guard<std::mutex> relock(mu_);
  return LoadTask(id);
}

// ---------------------------------------------------------------- restart

// See task_manager.h "Restart".
Status TaskManager::Impl::Reconcile() {
  const Seconds now = clock_.Now();
  GS_ASSIGN_OR_RETURN(std::vector<store::ExperimentRow> active,
                      store_.tasks().ListExperimentsByStatus({"queued", "starting", "running"}));
  GS_ASSIGN_OR_RETURN(std::vector<store::TaskRow> tasks, store_.tasks().ListTasks());
  std::lock_guard<std::mutex> lock(mu_);
  for (const store::TaskRow& row : tasks) {
    const auto status = task::ParseTaskStatus(row.status);
    if (status == task::TaskStatus::kQueued || status == task::TaskStatus::kRunning) {
      if (Status s = LoadActiveTask(row.id); !s) {
        LogError(fmt::format("resuming task {}", row.id), s.error());
      }
    }
  }
  for (const store::ExperimentRow& row : active) {
    if (row.status == "queued") {
      ResumeQueued(row, now);
    } else {
      FailLeftover(row, now);
    }
  }
  std::vector<int64_t> ids;
  for (const auto& [id, task] : tasks_) ids.push_back(id);
  for (int64_t id : ids) RefreshTaskLocked(id, now);
  return OkStatus();
}

// A task that was queued or running: its definition and plans come back from its source.
// REQUIRES: mu_ held.
Status TaskManager::Impl::LoadActiveTask(int64_t task_id) {
  GS_ASSIGN_OR_RETURN(store::TaskRow row, store_.tasks().GetTask(task_id));
  ActiveTask active;
  Result<task::TaskDefinition> definition = DefinitionOf(row);
  Result<std::vector<task::ExperimentPlan>> plans =
      definition ? task::ExpandGrid(*definition) : Unexpected<Error>(definition.error());
  active.record = TaskRecordOf(row, definition ? *definition : task::TaskDefinition{});
  if (plans) active.plans = std::move(*plans);
  tasks_[task_id] = std::move(active);
  if (!plans) return Unexpected<Error>(plans.error());
  return OkStatus();
}

// REQUIRES: mu_ held.
void TaskManager::Impl::ResumeQueued(const store::ExperimentRow& row, Seconds now) {
  Result<task::ExperimentRecord> record = ExperimentRecordOf(row);
  auto task = tasks_.find(row.task_id);
  if (!record || task == tasks_.end() ||
      row.index >= static_cast<int>(task->second.plans.size())) {
    task::ExperimentRecord e = record ? *record : task::ExperimentRecord{};
    e.id = row.id;
    e.task_id = row.task_id;
    e.status = task::ExperimentStatus::kFailed;
    e.message = "cannot resume after a daemon restart: the stored task no longer parses";
    e.finished_at = now;
    PersistExperimentLocked(e);
    Publish(EventKind::kExperimentFailed, e.message, e.task_id, e.id, {}, now);
    return;
  }
  QueueLocked(ActiveExperiment{std::move(*record), task->second.plans[row.index], "", nullptr});
}

// An experiment that was starting or running when the previous daemon died: its server is
// stopped when still alive; its lease was not re-acquired by the daemon (released here too in
// case this ledger still holds it).
// REQUIRES: mu_ held.
void TaskManager::Impl::FailLeftover(const store::ExperimentRow& row, Seconds now) {
  Result<task::ExperimentRecord> record = ExperimentRecordOf(row);
  task::ExperimentRecord e = record ? *record : task::ExperimentRecord{};
  e.id = row.id;
  e.task_id = row.task_id;
  std::string message(kRestartReason);
  if (row.pid > 0) {
    const std::string what =
        StopLeftoverServer(static_cast<int>(row.pid), row.server_argv, options_.runner.stop_grace);
    if (!what.empty()) message += "; " + what;
  }
  e.status = task::ExperimentStatus::kFailed;
  e.message = message;
  e.pid = 0;
  e.finished_at = now;
  PersistExperimentLocked(e);
  ledger_.ReleaseOwner(LeaseOwnerOf(e.id));
  Publish(EventKind::kExperimentFailed, fmt::format("experiment {}: {}", e.id, message), e.task_id,
          e.id, e.gpu_info ? e.gpu_info->indices : std::vector<int>{}, now);
}

}  // namespace gpuscale::experiments
