// Tasks and experiments tables (the tasks/experiments feature): a task row and one row per
// grid point, written together when the task is submitted and updated as experiments move
// through queued -> starting -> running -> succeeded/failed/cancelled. The TaskManager
// persists every state change here before it publishes it, so a restarted daemon can
// reconcile from these rows alone.
//
// Ownership: borrows the Database. Thread-safety: every method holds the Database's mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/records.h"
#include "store/sqlite_db.h"

namespace gpuscale::store {

// Ids assigned by AddTask: the task's and its experiments' (in the order given).
struct AddedTask {
  int64_t task_id = 0;
  std::vector<int64_t> experiment_ids;
};

class TaskRepository {
 public:
  explicit TaskRepository(Database& db) : db_(db) {}

  // Inserts `task` and its `experiments` in one transaction (ids and task_id fields of the
  // arguments are ignored; the new ids are returned). Errors: kInvalidArgument for an empty
  // task name or status; kFailedPrecondition when two experiments share an index.
  Result<AddedTask> AddTask(const TaskRow& task, const std::vector<ExperimentRow>& experiments);
  // Rewrites every column of the task `task.id` (created_at included). Errors: kNotFound.
  Status UpdateTask(const TaskRow& task);
  // Errors: kNotFound naming the id.
  Result<TaskRow> GetTask(int64_t id);
  // Every task, newest (highest id) first.
  Result<std::vector<TaskRow>> ListTasks();

  // Rewrites every column of experiment `experiment.id` except its task and index.
  // Errors: kNotFound.
  Status UpdateExperiment(const ExperimentRow& experiment);
  // Errors: kNotFound naming the id.
  Result<ExperimentRow> GetExperiment(int64_t id);
  // A task's experiments by index (empty for an unknown task).
  Result<std::vector<ExperimentRow>> ListExperiments(int64_t task_id);
  // Experiments in any of `statuses` (e.g. {"queued", "starting", "running"}), by id.
  Result<std::vector<ExperimentRow>> ListExperimentsByStatus(
      const std::vector<std::string>& statuses);

 private:
  Result<int64_t> InsertTaskLocked(const TaskRow& task);
  Result<int64_t> InsertExperimentLocked(int64_t task_id, const ExperimentRow& experiment);
  // `bind` binds the parameters of `where` (a "WHERE ..." clause, or "").
  Result<std::vector<TaskRow>> SelectTasks(std::string_view where,
                                           const std::function<void(Statement&)>& bind);
  Result<std::vector<ExperimentRow>> SelectExperiments(
      std::string_view where, const std::function<void(Statement&)>& bind);

  Database& db_;
};

}  // namespace gpuscale::store
