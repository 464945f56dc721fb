// Internal to experiments/: TaskManager::Impl, shared by task_manager.cc (API, submit,
// cancel, restart), task_manager_scheduler.cc (queue rounds, experiment threads) and
// task_manager_rows.cc (record <-> row conversion, events).
//
// Concurrency: mu_ guards the queue, the active tasks/experiments and the running threads.
// Every state change is persisted and published while mu_ is held, so the event log orders
// lease intervals exactly as the ledger saw them (an experiment's release event precedes the
// start event of whoever gets its GPUs next). wake_mu_ guards only the wake flag, so Wake()
// may be called from anywhere, including the ledger's release listener while mu_ is held.
// Lock order: mu_, then the store's and the publisher's locks; wake_mu_ is a leaf.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "events/event_kind.h"
#include "experiments/experiment_runner.h"
#include "experiments/task_manager.h"
#include "task/experiment_queue.h"

namespace gpuscale::experiments {

// Conversions between the domain records and the store rows (task_manager_rows.cc).
store::TaskRow TaskRowOf(const task::TaskRecord& task);
store::ExperimentRow ExperimentRowOf(const task::ExperimentRecord& experiment);
// Errors: kInternal naming the column when a JSON column cannot be read.
Result<task::ExperimentRecord> ExperimentRecordOf(const store::ExperimentRow& row);
// `definition` comes from the caller (parsed source text).
task::TaskRecord TaskRecordOf(const store::TaskRow& row, task::TaskDefinition definition);
// {"task_id":..,"experiment_id":..,"gpus":[..]} (experiment_id/gpus omitted when 0/empty).
std::string EventData(int64_t task_id, int64_t experiment_id, const std::vector<int>& gpus);
task::GpuInfoRecord GpuInfoOf(const alloc::Selection& selection,
                              const gpu::GpuSnapshot& snapshot);
std::string LeaseOwnerOf(int64_t experiment_id);  // "experiment/<id>"

class TaskManager::Impl {
 public:
  Impl(alloc::LeaseLedger& ledger, gpu::Monitor& monitor, store::Store& store, Clock& clock,
       TaskManagerOptions options);

  // --- task_manager.cc ---
  Status Reconcile();
  Result<task::TaskRecord> Submit(task::TaskDefinition definition, std::string source_text);
  std::vector<task::TaskRecord> ListTasks();
  Result<task::TaskRecord> GetTask(int64_t id);
  Result<task::TaskRecord> CancelTask(int64_t id);
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id);
  Result<task::ExperimentRecord> GetExperiment(int64_t id);

  // --- task_manager_scheduler.cc ---
  void Start();
  void Shutdown();
  void Wake();
  void Retune(const TaskTuning& tuning);

 private:
  // One experiment's thread and its cancel flag.
  struct RunHandle {
    std::atomic<bool> cancel{false};
    std::thread thread;
    bool finished = false;  // guarded by mu_: the thread is done and may be joined
  };
  // A queued or running experiment: what is needed to start it and to update its row.
  struct ActiveExperiment {
    task::ExperimentRecord record;
    task::ExperimentPlan plan;
    std::string last_error;  // the allocator's last refusal
    std::shared_ptr<RunHandle> run;  // set once started
  };
  // A task that has not ended yet (or whose cancelled experiments are still stopping).
  struct ActiveTask {
    task::TaskRecord record;
    std::vector<task::ExperimentPlan> plans;  // by index
    int running = 0;  // experiments started and not ended
  };

  // task_manager.cc
  Result<task::TaskDefinition> DefinitionOf(const store::TaskRow& row);
  Result<task::TaskRecord> LoadTask(int64_t id);
  Status CheckPlans(const task::TaskDefinition& definition,
                    const std::vector<task::ExperimentPlan>& plans);
  void ResumeQueued(const store::ExperimentRow& row, Seconds now);
  void FailLeftover(const store::ExperimentRow& row, Seconds now);
  Status LoadActiveTask(int64_t task_id);
  void QueueLocked(ActiveExperiment experiment);

  // task_manager_scheduler.cc
  void SchedulerMain();
  void Round();
  bool TryStartLocked(int64_t experiment_id, const Result<gpu::GpuSnapshot>& snapshot,
                      Seconds now);
  void LaunchLocked(ActiveExperiment& experiment, ActiveTask& task);
  void RunExperiment(int64_t experiment_id, ExperimentLaunch launch,
                     std::shared_ptr<RunHandle> run);
  void FinishLocked(int64_t experiment_id, RunOutcome outcome);
  void ExpireLocked(const task::QueuedExperiment& expired, const gpu::GpuSnapshot* snapshot,
                    Seconds now);
  void EndQueuedLocked(int64_t experiment_id, task::ExperimentStatus status,
                       std::string message, Seconds now);
  void JoinFinished();
  std::map<int64_t, int> RunningByTaskLocked() const;

  // Persistence and events (task_manager_rows.cc); REQUIRE mu_ held.
  void PersistExperimentLocked(const task::ExperimentRecord& record);
  void PersistTaskLocked(const task::TaskRecord& record);
  // Recomputes done count, best experiment and status from the stored experiments;
  // persists; publishes task_finished when the task just ended. Drops ended tasks.
  void RefreshTaskLocked(int64_t task_id, Seconds now);
  void Publish(events::EventKind kind, std::string message, int64_t task_id, int64_t experiment_id,
               const std::vector<int>& gpus, Seconds now);
  void LogError(std::string_view what, const Error& error);

  alloc::LeaseLedger& ledger_;
  gpu::Monitor& monitor_;
  store::Store& store_;
  Clock& clock_;
  const TaskManagerOptions options_;
  ExperimentRunner runner_;

  std::mutex mu_;
  std::condition_variable finished_cv_;  // notified (with mu_) when an experiment ends
  task::ExperimentQueue queue_;                        // guarded by mu_
  std::map<int64_t, ActiveExperiment> experiments_;    // guarded by mu_; by experiment id
  std::map<int64_t, ActiveTask> tasks_;                // guarded by mu_; by task id
  std::vector<std::shared_ptr<RunHandle>> runs_;       // guarded by mu_; to join
  std::map<int64_t, task::TaskDefinition> definitions_;  // guarded by mu_; parse cache
  bool shutting_down_ = false;                         // guarded by mu_

  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool wake_requested_ = false;  // guarded by wake_mu_
  Seconds recheck_interval_;     // guarded by wake_mu_ (options_'s until a Retune)
  bool stop_ = false;            // guarded by wake_mu_
  std::thread scheduler_;        // started/joined under lifecycle_mu_
  std::mutex lifecycle_mu_;
};

}  // namespace gpuscale::experiments
