#include "store/task_repository.h"

#include <fmt/format.h>

#include <mutex>

#include "store/json_columns.h"

namespace gpuscale::store {
namespace {

constexpr std::string_view kTaskColumns =
    "id, name, source_text, status, priority, experiments_total, experiments_done, "
    "best_experiment_id, message, created_at, finished_at";
constexpr std::string_view kExperimentColumns =
    "id, task_id, idx, status, parameters, gpus_required, memory_mb_per_gpu, results, "
    "server_argv, pid, port, lease_owner, log_path, message, queued_at, started_at, "
    "finished_at";

void BindOptional(Statement& stmt, int index, const std::optional<Seconds>& value) {
  if (value) {
    stmt.Bind(index, value->count());
  } else {
    stmt.BindNull(index);
  }
}

std::optional<Seconds> OptionalSeconds(const Statement& stmt, int column) {
  if (stmt.ColumnIsNull(column)) return std::nullopt;
  return Seconds{stmt.ColumnDouble(column)};
}

// Binds ?2.. with the task's columns after id (id is ?1 for updates, unused for inserts).
void BindTask(Statement& stmt, const TaskRow& task) {
  stmt.Bind(2, task.name)
      .Bind(3, task.source_text)
      .Bind(4, task.status)
      .Bind(5, int64_t{task.priority})
      .Bind(6, int64_t{task.experiments_total})
      .Bind(7, int64_t{task.experiments_done});
  if (task.best_experiment_id) {
    stmt.Bind(8, *task.best_experiment_id);
  } else {
    stmt.BindNull(8);
  }
  stmt.Bind(9, task.message).Bind(10, task.created_at.count());
  BindOptional(stmt, 11, task.finished_at);
}

// Binds ?4.. with the experiment's mutable columns (?1 id, ?2 task_id, ?3 idx).
void BindExperiment(Statement& stmt, const ExperimentRow& e) {
  stmt.Bind(4, e.status)
      .Bind(5, e.parameters)
      .Bind(6, int64_t{e.gpus_required})
      .Bind(7, e.memory_mb_per_gpu)
      .Bind(8, e.results)
      .Bind(9, StringsToJson(e.server_argv))
      .Bind(10, e.pid)
      .Bind(11, int64_t{e.port})
      .Bind(12, e.lease_owner)
      .Bind(13, e.log_path)
      .Bind(14, e.message)
      .Bind(15, e.queued_at.count());
  BindOptional(stmt, 16, e.started_at);
  BindOptional(stmt, 17, e.finished_at);
}

TaskRow ReadTask(const Statement& stmt) {
  TaskRow task;
  task.id = stmt.ColumnInt64(0);
  task.name = stmt.ColumnText(1);
  task.source_text = stmt.ColumnText(2);
  task.status = stmt.ColumnText(3);
  task.priority = static_cast<int>(stmt.ColumnInt64(4));
  task.experiments_total = static_cast<int>(stmt.ColumnInt64(5));
  task.experiments_done = static_cast<int>(stmt.ColumnInt64(6));
  if (!stmt.ColumnIsNull(7)) task.best_experiment_id = stmt.ColumnInt64(7);
  task.message = stmt.ColumnText(8);
  task.created_at = Seconds{stmt.ColumnDouble(9)};
  task.finished_at = OptionalSeconds(stmt, 10);
  return task;
}

Result<ExperimentRow> ReadExperiment(const Statement& stmt) {
  ExperimentRow e;
  e.id = stmt.ColumnInt64(0);
  e.task_id = stmt.ColumnInt64(1);
  e.index = static_cast<int>(stmt.ColumnInt64(2));
  e.status = stmt.ColumnText(3);
  e.parameters = stmt.ColumnText(4);
  e.gpus_required = static_cast<int>(stmt.ColumnInt64(5));
  e.memory_mb_per_gpu = stmt.ColumnInt64(6);
  e.results = stmt.ColumnText(7);
  GS_ASSIGN_OR_RETURN(e.server_argv,
                      StringsFromJson(stmt.ColumnText(8), "experiments.server_argv"));
  e.pid = stmt.ColumnInt64(9);
  e.port = static_cast<int>(stmt.ColumnInt64(10));
  e.lease_owner = stmt.ColumnText(11);
  e.log_path = stmt.ColumnText(12);
  e.message = stmt.ColumnText(13);
  e.queued_at = Seconds{stmt.ColumnDouble(14)};
  e.started_at = OptionalSeconds(stmt, 15);
  e.finished_at = OptionalSeconds(stmt, 16);
  return e;
}

Status CheckTask(const TaskRow& task) {
  if (task.name.empty()) return InvalidArgument("expected a non-empty task name", "name");
  if (task.status.empty()) {
    return InvalidArgument(fmt::format("task '{}' has no status", task.name), "status");
  }
  return OkStatus();
}

}  // namespace

Result<int64_t> TaskRepository::InsertTaskLocked(const TaskRow& task) {
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("INSERT INTO tasks (name, source_text, status, priority, experiments_total, "
                  "experiments_done, best_experiment_id, message, created_at, finished_at) "
                  "VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  BindTask(stmt, task);
  GS_RETURN_IF_ERROR(stmt.Run());
  return db_.LastInsertRowId();
}

Result<int64_t> TaskRepository::InsertExperimentLocked(int64_t task_id,
                                                       const ExperimentRow& experiment) {
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(fmt::format("INSERT INTO experiments ({}) VALUES (NULL, ?2, ?3, ?4, ?5, ?6, "
                              "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                              kExperimentColumns)));
  stmt.Bind(2, task_id).Bind(3, int64_t{experiment.index});
  BindExperiment(stmt, experiment);
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
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("UPDATE tasks SET name = ?2, source_text = ?3, status = ?4, priority = ?5, "
                  "experiments_total = ?6, experiments_done = ?7, best_experiment_id = ?8, "
                  "message = ?9, created_at = ?10, finished_at = ?11 WHERE id = ?1"));
  stmt.Bind(1, task.id);
  BindTask(stmt, task);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) return NotFound(fmt::format("no task {}", task.id), "id");
  return OkStatus();
}

Result<std::vector<TaskRow>> TaskRepository::SelectTasks(
    std::string_view where, const std::function<void(Statement&)>& bind) {
  GS_ASSIGN_OR_RETURN(Statement stmt,
                      db_.Prepare(fmt::format("SELECT {} FROM tasks {} ORDER BY id DESC",
                                              kTaskColumns, where)));
  bind(stmt);
  std::vector<TaskRow> tasks;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return tasks;
    tasks.push_back(ReadTask(stmt));
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
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare("UPDATE experiments SET status = ?4, parameters = ?5, gpus_required = ?6, "
                  "memory_mb_per_gpu = ?7, results = ?8, server_argv = ?9, pid = ?10, "
                  "port = ?11, lease_owner = ?12, log_path = ?13, message = ?14, "
                  "queued_at = ?15, started_at = ?16, finished_at = ?17 WHERE id = ?1"));
  stmt.Bind(1, experiment.id);
  BindExperiment(stmt, experiment);
  GS_RETURN_IF_ERROR(stmt.Run());
  if (db_.Changes() == 0) {
    return NotFound(fmt::format("no experiment {}", experiment.id), "id");
  }
  return OkStatus();
}

Result<std::vector<ExperimentRow>> TaskRepository::SelectExperiments(
    std::string_view where, const std::function<void(Statement&)>& bind) {
  GS_ASSIGN_OR_RETURN(
      Statement stmt,
      db_.Prepare(fmt::format("SELECT {} FROM experiments {}", kExperimentColumns, where)));
  bind(stmt);
  std::vector<ExperimentRow> experiments;
  while (true) {
    GS_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return experiments;
    GS_ASSIGN_OR_RETURN(ExperimentRow experiment, ReadExperiment(stmt));
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
