// TaskManager: the daemon's tasks/experiments service. It accepts tasks, expands them into
// experiments (task::ExpandGrid), keeps the GPU-aware queue (task::ExperimentQueue: priority,
// FIFO, backfill with a reservation for the head), leases GPUs from the daemon's shared
// alloc::LeaseLedger (owner "experiment/<id>": never a GPU held by a replica or another
// experiment), runs each started experiment on its own thread (ExperimentRunner), stores
// every state change and result (store::TaskRepository) and publishes events.
//
// Scheduling is event driven: a lease release anywhere in the daemon (the ledger's release
// listener), a submitted/cancelled task or a finished experiment wakes the scheduler thread;
// it also re-checks every `recheck_interval` (GPU readings change without releases, and
// queued experiments time out). An experiment that cannot get GPUs before its task's
// gpu_wait_timeout fails with the allocator's last message (what was needed, what was
// free); one needing more GPUs than the machine has fails at once.
//
// Restart: Open() reads the store. Experiments that were starting/running when the previous
// daemon died are failed with "daemon restarted while the experiment was running" (their
// server, if still alive with the recorded argv, is stopped first; their leases were not
// re-acquired, so none leaks); queued ones are queued again with their original order and
// deadline; tasks whose experiments all ended get their final status and best experiment.
//
// Ownership: borrows the ledger, monitor, store and clock (must outlive it); owns the
// scheduler thread and one thread per running experiment; Shutdown() cancels running
// experiments (their servers are stopped, they fail with "daemon shut down"), leaves queued
// ones queued for the next start, and joins every thread.
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "core/result.h"
#include "experiments/experiment_runner.h"
#include "gpumon/monitor.h"
#include "store/records.h"
#include "store/store.h"
#include "task/task_types.h"

namespace gpuscale::experiments {

struct TaskManagerOptions {
  std::string state_dir;            // logs go to <state_dir>/logs/experiment-<id>.log
  Seconds recheck_interval{2};      // periodic scheduling round
  int max_head_skips = 3;           // ExperimentQueue reservation threshold
  gpu::ScoreWeights weights;        // GPU ranking for allocation
  RunnerOptions runner;
  // Appends events to the store and wakes SSE readers (the daemon's publisher). Called from
  // TaskManager threads; must be thread-safe. Kinds: task_submitted, task_finished,
  // task_cancelled, experiment_queued, experiment_started (GPUs leased), experiment_running,
  // experiment_succeeded, experiment_failed, experiment_cancelled. `data` holds JSON with
  // task_id, experiment_id and gpu indices where relevant.
  std::function<void(std::vector<store::EventRow>)> publish;
};

// What a config reload may change while experiments run (the rest is fixed at Open).
struct TaskTuning {
  Seconds recheck_interval{2};
  int max_head_skips = 3;
  Seconds stop_grace{10};  // for servers stopped from now on
};

class TaskManager {
 public:
  // Reconciles the store (see "Restart"). Errors: the store's.
  static Result<std::unique_ptr<TaskManager>> Open(alloc::LeaseLedger& ledger,
                                                   gpu::Monitor& monitor, store::Store& store,
                                                   Clock& clock, TaskManagerOptions options);
  ~TaskManager();  // Shutdown()
  TaskManager(const TaskManager&) = delete;
  TaskManager& operator=(const TaskManager&) = delete;

  void Start();     // starts the scheduler thread; no-op when running
  void Shutdown();  // see the header comment; idempotent
  void Wake();      // schedule a round now (e.g. GPUs were released)
  // Applies `tuning` (ExperimentQueue::SetMaxHeadSkips for the threshold) and schedules a
  // round, from which the new re-check interval counts.
  void Retune(const TaskTuning& tuning);

  // Validates (objective, grid, estimator, server command placeholders), stores the task and
  // its experiments, queues them. Errors: kInvalidArgument naming the field;
  // kResourceExhausted when an experiment needs more GPUs than exist (message says how many
  // it needs and how many the machine has) -- nothing is stored then.
  Result<task::TaskRecord> Submit(task::TaskDefinition definition, std::string source_text);
  std::vector<task::TaskRecord> ListTasks();  // newest first
  Result<task::TaskRecord> GetTask(int64_t id);  // kNotFound
  // Cancels queued experiments and stops running ones; the task ends `cancelled`.
  // Errors: kNotFound; kFailedPrecondition when the task already ended.
  Result<task::TaskRecord> CancelTask(int64_t id);
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id);  // by index
  Result<task::ExperimentRecord> GetExperiment(int64_t id);  // kNotFound

 private:
  class Impl;
  explicit TaskManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::experiments
