// TaskService: the daemon's tasks/experiments service -- the experiments::TaskManager, opened
// after adoption (its experiments' leases were not re-acquired, so a restarted daemon
// reconciles them without leaks), woken by every lease release, and the DaemonApi task
// requests forwarded to it (kUnavailable while it is not open).
//
// Ownership: owns the TaskManager; borrows the ledger, monitor, store and clock, which outlive
// it. Thread-safety: the requests, Wake and Retune may come from any thread once Open returned
// (the TaskManager's own locks); Open, Start and Shutdown from the daemon's owner.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alloc/lease_ledger.h"
#include "core/clock.h"
#include "core/result.h"
#include "experiments/task_manager.h"
#include "gpumon/monitor.h"
#include "store/store.h"
#include "task/task_types.h"

namespace gpuscale::daemon {

class TaskService {
 public:
  TaskService() = default;
  // Stops listening to the ledger's releases (the ledger outlives the manager).
  ~TaskService();
  TaskService(const TaskService&) = delete;
  TaskService& operator=(const TaskService&) = delete;

  // Opens the TaskManager (it reconciles the store) and makes any lease release (a replica
  // stopped, an experiment ended, a gone owner reaped) wake its scheduler, since a queued
  // experiment may start then. Errors: the store's.
  Status Open(alloc::LeaseLedger& ledger, gpu::Monitor& monitor, store::Store& store, Clock& clock,
              experiments::TaskManagerOptions options);
  bool open() const { return manager_ != nullptr; }
  // Starts the scheduler thread. No-op when not open.
  void Start();
  // Stops running experiments (their servers exit, their leases are released); queued ones
  // stay queued in the store for the next daemon. Returns whether it was open. Idempotent.
  bool Shutdown();
  // The reloaded `tasks:` section (no-op when not open).
  void Retune(const experiments::TaskTuning& tuning);

  // The DaemonApi task requests (daemon_api.h). kUnavailable when not open (ListTasks: none).
  Result<task::TaskRecord> Submit(task::TaskDefinition definition, std::string source_text);
  std::vector<task::TaskRecord> ListTasks();
  Result<task::TaskRecord> GetTask(int64_t id);
  Result<task::TaskRecord> CancelTask(int64_t id);
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id);
  Result<task::ExperimentRecord> GetExperiment(int64_t id);

 private:
  alloc::LeaseLedger* ledger_ = nullptr;  // set by Open
  std::unique_ptr<experiments::TaskManager> manager_;
};

}  // namespace gpuscale::daemon
