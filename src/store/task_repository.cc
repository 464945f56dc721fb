#include "store/task_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/tables.h"

namespace gpuscale::store {
namespace {

Status CheckTask(const TaskRow& task) {
  if (task.name.empty()) return InvalidArgument("expected a non-empty task name", "name");
  if (task.status.empty()) {
    return InvalidArgument(fmt::format("task '{}' has no status", task.name), "status");
  }
  return OkStatus();
}

}  // namespace

Result<int64_t> TaskRepository::InsertTaskLocked(const TaskRow& task) {
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kTasks.Insert()));
  kTasks.BindInsert(stmt, task);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<int64_t> TaskRepository::InsertExperimentLocked(int64_t task_id,
                                                       const ExperimentRow& experiment) {
  // The experiment belongs to the task just inserted, whatever its own task_id says.
  ExperimentRow row = experiment;
  row.task_id = task_id;
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kExperiments.Insert()));
  kExperiments.BindInsert(stmt, row);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<AddedTask> TaskRepository::AddTask(const TaskRow& task,
                                          const std::vector<ExperimentRow>& experiments) {
  GS_RETURN_IF_ERROR(CheckTask(task));
  std::lock_guard<std::mutex> lock(db_.mu());
  AddedTask added;
  GS_RETURN_IF_ERROR(db_.InTransaction([&]() -> Status {
    GS_ASSIGN_OR_RETURN(added.task_id, InsertTaskLocked(task));
    for (const ExperimentRow& experiment : experiments) {
      GS_ASSIGN_OR_RETURN(int64_t id, InsertExperimentLocked(added.task_id, experiment));
      added.experiment_ids.push_back(id);
    }
    return OkStatus();
  }));
  return added;
}

Status TaskRepository::UpdateTask(const TaskRow& task) {
  GS_RETURN_IF_ERROR(CheckTask(task));
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kTasks.Update()));
  kTasks.BindUpdate(stmt, task);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NotFound(fmt::format("no task {}", task.id), "id");
  return OkStatus();
}

Result<std::vector<TaskRow>> TaskRepository::SelectTasks(
    std::string_view where, const std::function<void(Statement&)>& bind) {
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("{} {} ORDER BY id DESC", kTasks.Select(), where)));
  bind(stmt);
  std::vector<TaskRow> tasks;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return tasks;
    GS_ASSIGN_OR_RETURN(TaskRow task, kTasks.Read(stmt));
    tasks.push_back(std::move(task));
  }
}

Result<TaskRow> TaskRepository::GetTask(int64_t id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(std::vector<TaskRow> rows,
                      SelectTasks("WHERE id = ?1", [id](Statement& s) { s.Bind(1, id); }));
  if (rows.empty()) return NotFound(fmt::format("no task {}", id), "id");
  return std::move(rows.front());
}

Result<std::vector<TaskRow>> TaskRepository::ListTasks() {
  std::lock_guard<std::mutex> lock(db_.mu());
  return SelectTasks("", [](Statement&) {});
}

Status TaskRepository::UpdateExperiment(const ExperimentRow& experiment) {
  std::lock_guard<std::mutex> lock(db_.mu());
  // Every column but id, task_id and idx (fixed when the task was added).
  GS_ASSIGN_OR_RETURN(Statement stmt, db_.Prepare(kExperiments.Update()));
  kExperiments.BindUpdate(stmt, experiment);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) {
    return NotFound(fmt::format("no experiment {}", experiment.id), "id");
  }
  return OkStatus();
}

Result<std::vector<ExperimentRow>> TaskRepository::SelectExperiments(
    std::string_view where, const std::function<void(Statement&)>& bind) {
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("{} {}", kExperiments.Select(), where)));
  bind(stmt);
  std::vector<ExperimentRow> experiments;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return experiments;
    GS_ASSIGN_OR_RETURN(ExperimentRow experiment, kExperiments.Read(stmt));
    experiments.push_back(std::move(experiment));
  }
}

Result<ExperimentRow> TaskRepository::GetExperiment(int64_t id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  GS_ASSIGN_OR_RETURN(
      std::vector<ExperimentRow> rows,
      SelectExperiments("WHERE id = ?1", [id](Statement& s) { s.Bind(1, id); }));
  if (rows.empty()) return NotFound(fmt::format("no experiment {}", id), "id");
  return std::move(rows.front());
}

Result<std::vector<ExperimentRow>> TaskRepository::ListExperiments(int64_t task_id) {
  std::lock_guard<std::mutex> lock(db_.mu());
  return SelectExperiments("WHERE task_id = ?1 ORDER BY idx",
                           [task_id](Statement& s) { s.Bind(1, task_id); });
}

Result<std::vector<ExperimentRow>> TaskRepository::ListExperimentsByStatus(
    const std::vector<std::string>& statuses) {
  if (statuses.empty()) return std::vector<ExperimentRow>{};
  // One placeholder per status: values still go through Bind, never into the SQL text.
  std::string placeholders;
  for (size_t i = 0; i < statuses.size(); ++i) {
    placeholders += fmt::format("{}?{}", i == 0 ? "" : ", ", i + 1);
  }
  std::lock_guard<std::mutex> lock(db_.mu());
  return SelectExperiments(fmt::format("WHERE status IN ({}) ORDER BY id", placeholders),
                           [&statuses](Statement& s) {
                             for (size_t i = 0; i < statuses.size(); ++i) {
                               s.Bind(static_cast<int>(i + 1), statuses[i]);
                             }
                           });
}

}  // namespace gpuscale::store
