// TaskManager: conversions between records and store rows, persistence helpers and events.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "experiments/task_manager_impl.h"
#include "task/objective.h"
#include "task/task_json.h"

namespace gpuscale::experiments {

using events::EventKind;

std::string LeaseOwnerOf(int64_t experiment_id) {
  return fmt::format("experiment/{}", experiment_id);
}

store::TaskRow TaskRowOf(const task::TaskRecord& task) {
  store::TaskRow row;
  row.id = task.id;
  row.name = task.definition.name;
  row.source_text = task.source_text;
  row.status = std::string(task::TaskStatusName(task.status));
  row.priority = task.definition.priority;
  row.experiments_total = task.experiments_total;
  row.experiments_done = task.experiments_done;
  row.best_experiment_id = task.best_experiment_id;
  row.message = task.message;
  row.created_at = task.created_at;
  row.finished_at = task.finished_at;
  return row;
}

task::TaskRecord TaskRecordOf(const store::TaskRow& row, task::TaskDefinition definition) {
  task::TaskRecord task;
  task.id = row.id;
  task.definition = std::move(definition);
  task.definition.name = row.name;
  task.definition.priority = row.priority;
  task.source_text = row.source_text;
  // A status this binary does not know (a newer writer) reads as failed: it is not ours to run.
  task.status = task::ParseTaskStatus(row.status).value_or(task::TaskStatus::kFailed);
  task.experiments_total = row.experiments_total;
  task.experiments_done = row.experiments_done;
  task.best_experiment_id = row.best_experiment_id;
  task.message = row.message;
  task.created_at = row.created_at;
  task.finished_at = row.finished_at;
  return task;
}

store::ExperimentRow ExperimentRowOf(const task::ExperimentRecord& e) {
  store::ExperimentRow row;
  row.id = e.id;
  row.task_id = e.task_id;
  row.index = e.index;
  row.status = std::string(task::ExperimentStatusName(e.status));
  row.parameters = task::ExperimentParametersText(e.parameters);
  row.gpus_required = e.gpus_required;
  row.memory_mb_per_gpu = e.memory_mb_per_gpu;
  row.results = task::ExperimentResultsText(e);
  row.server_argv = e.server_argv;
  row.pid = e.pid;
  row.port = e.port;
  row.lease_owner = e.lease_owner;
  row.log_path = e.log_path;
  row.message = e.message;
  row.queued_at = e.queued_at;
  row.started_at = e.started_at;
  row.finished_at = e.finished_at;
  return row;
}

Result<task::ExperimentRecord> ExperimentRecordOf(const store::ExperimentRow& row) {
  task::ExperimentRecord e;
  e.id = row.id;
  e.task_id = row.task_id;
  e.index = row.index;
  e.status = task::ParseExperimentStatus(row.status).value_or(task::ExperimentStatus::kFailed);
  GS_ASSIGN_OR_RETURN(e.parameters,
                      task::ReadExperimentParameters(row.parameters, "experiments.parameters"));
  // "{}" is the row's default (no results yet); the codec itself wants all three keys.
  if (row.results != "{}" && !row.results.empty()) {
    GS_RETURN_IF_ERROR(task::ReadExperimentResults(row.results, "experiments.results", e));
  }
  e.gpus_required = row.gpus_required;
  e.memory_mb_per_gpu = row.memory_mb_per_gpu;
  e.server_argv = row.server_argv;
  e.pid = static_cast<int>(row.pid);
  e.port = row.port;
  e.lease_owner = row.lease_owner;
  e.log_path = row.log_path;
  e.message = row.message;
  e.queued_at = row.queued_at;
  e.started_at = row.started_at;
  e.finished_at = row.finished_at;
  return e;
}

std::string EventData(int64_t task_id, int64_t experiment_id, const std::vector<int>& gpus) {
  nlohmann::ordered_json data;
  data["task_id"] = task_id;
  if (experiment_id != 0) data["experiment_id"] = experiment_id;
  if (experiment_id != 0) data["gpus"] = gpus;
  return data.dump();
}

task::GpuInfoRecord GpuInfoOf(const alloc::Selection& selection,
                              const gpu::GpuSnapshot& snapshot) {
  task::GpuInfoRecord info;
  info.count = static_cast<int>(selection.gpus.size());
  info.allocation_method = "lease-ledger/availability-score";
  for (const alloc::SelectedGpu& g : selection.gpus) {
    task::AllocatedGpu gpu;
    gpu.index = g.index;
    gpu.uuid = g.uuid;
    gpu.node = g.node.empty() ? "local" : g.node;
    gpu.name = g.name;
    gpu.memory_free_mb = g.memory_free_mb;
    if (g.position < snapshot.gpus.size()) {
      gpu.memory_total_mb = snapshot.gpus[g.position].memory_total_mb.value_or(0);
    }
    gpu.utilization_percent = g.utilization_percent;
    gpu.score = g.score;
    if (info.model.empty()) info.model = g.name;
    info.indices.push_back(g.index);
    info.gpus.push_back(std::move(gpu));
  }
  return info;
}

void TaskManager::Impl::LogError(std::string_view what, const Error& error) {
  // The publisher is the only channel to the operator; a failed store write must be visible.
  store::EventRow e;
  e.at = clock_.Now();
  e.kind = events::EventKindName(EventKind::kTaskStoreError);
  e.message = fmt::format("{}: {}", what, error.ToString());
  if (options_.publish) options_.publish({std::move(e)});
}

void TaskManager::Impl::PersistExperimentLocked(const task::ExperimentRecord& record) {
  if (Status s = store_.tasks().UpdateExperiment(ExperimentRowOf(record)); !s) {
    LogError(fmt::format("writing experiment {}", record.id), s.error());
  }
}

void TaskManager::Impl::PersistTaskLocked(const task::TaskRecord& record) {
  if (Status s = store_.tasks().UpdateTask(TaskRowOf(record)); !s) {
    LogError(fmt::format("writing task {}", record.id), s.error());
  }
}

void TaskManager::Impl::Publish(EventKind kind, std::string message, int64_t task_id,
                                int64_t experiment_id, const std::vector<int>& gpus, Seconds now) {
  if (!options_.publish) return;
  store::EventRow e;
  e.at = now;
  e.kind = events::EventKindName(kind);
  e.message = std::move(message);
  e.data = EventData(task_id, experiment_id, gpus);
  options_.publish({std::move(e)});
}

// Ended tasks leave tasks_; their rows stay the API's source.
void TaskManager::Impl::RefreshTaskLocked(int64_t task_id, Seconds now) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) return;
  task::TaskRecord& task = it->second.record;
  Result<std::vector<store::ExperimentRow>> rows = store_.tasks().ListExperiments(task_id);
  if (!rows) return LogError(fmt::format("reading experiments of task {}", task_id), rows.error());
  std::vector<task::ExperimentRecord> experiments;
  int done = 0, succeeded = 0;
  bool started = false;
  for (const store::ExperimentRow& row : *rows) {
    Result<task::ExperimentRecord> e = ExperimentRecordOf(row);
    if (!e) continue;
    done += task::IsTerminal(e->status) ? 1 : 0;
    succeeded += e->status == task::ExperimentStatus::kSucceeded ? 1 : 0;
    started = started || e->started_at.has_value() || task::IsTerminal(e->status);
    experiments.push_back(std::move(*e));
  }
  task.experiments_done = done;
  task.best_experiment_id = task::BestExperiment(task.definition.objective, experiments);
  const bool all_ended = done == task.experiments_total && it->second.running == 0;
  const bool was_cancelled = task.status == task::TaskStatus::kCancelled;
  if (!was_cancelled) {
    if (all_ended) {
      task.status = succeeded > 0 ? task::TaskStatus::kSucceeded : task::TaskStatus::kFailed;
      task.message = fmt::format("{} of {} experiments succeeded", succeeded, done);
    } else {
      task.status = started ? task::TaskStatus::kRunning : task::TaskStatus::kQueued;
    }
  }
  if (all_ended && !task.finished_at) task.finished_at = now;
  PersistTaskLocked(task);
  if (!all_ended) return;
  if (!was_cancelled) {
    Publish(EventKind::kTaskFinished,
            fmt::format("task {} '{}' {}: {}", task.id, task.definition.name,
                        task::TaskStatusName(task.status), task.message),
            task.id, 0, {}, now);
  }
  tasks_.erase(it);
}

}  // namespace gpuscale::experiments
