// ExperimentRunner: runs one experiment on GPUs it has already been leased -- the adapter
// half of the tasks feature (the pure half is task/). Steps, each ending the run early on
// failure or cancellation:
//   1. render the server argv (task::RenderServerArgv) and exec it as argv (never a shell) in
//      its own process group, with CUDA_VISIBLE_DEVICES = the leased indices, the task's env,
//      stdout/stderr appended to the experiment's log file;
//   2. wait for readiness: GET <readiness_path> == 200 every probe_interval, until
//      startup_timeout (fails with "server not ready after N s" + log tail) or the process
//      exits (fails with its exit description + log tail);
//   3. run the benchmark (loadgen::RunBench against http://127.0.0.1:<port>);
//   4. GPU monitoring: the GPU history the daemon's sampler took during the benchmark window,
//      restricted to the experiment's GPUs, folded into per-GPU min/max/mean (gpu::GpuStats);
//   5. stop the server: SIGTERM to its group, SIGKILL after stop_grace; wait until it is gone
//      (its GPU memory is only free then), so the caller may release the lease afterwards.
// The runner never touches the lease ledger: the caller leases before and releases after.
//
// Ownership: owns nothing beyond one call; the server process never outlives Run() (also on
// cancel). Thread-safety: Run() may be called from several threads at once (one per
// experiment); callbacks are invoked on the calling thread.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "alloc/gpu_selector.h"
#include "core/clock.h"
#include "core/result.h"
#include "gpu/gpu_stats.h"
#include "gpumon/monitor.h"
#include "gpumon/simulated_load.h"
#include "task/task_types.h"
#include "workload/bench_report.h"

namespace gpuscale::experiments {

struct RunnerOptions {
  Seconds probe_interval{0.5};  // readiness probes
  Seconds probe_timeout{1};
  Seconds stop_grace{10};       // SIGTERM -> SIGKILL
  size_t log_tail_lines = 20;   // lines of the server log quoted in failure messages
  int port_range_start = 0;     // 0 = a port the kernel picks
  int port_range_end = 0;
  // Simulated GPUs only (null otherwise): while benchmarking, the server's emulated-GPU
  // gauges are read every load_interval and posted here (as "experiment-<id>"), so the
  // experiment's gpu_monitoring shows the load it ran (emulated_gpu_load.h).
  std::shared_ptr<gpu::GpuLoadBoard> gpu_load;
  Seconds load_interval{1};
};

// GPU sampler history taken at or after `since` (the daemon passes its gpu::Monitor's).
using HistoryReader = std::function<std::vector<gpu::HistoryPoint>(Seconds since)>;

struct ExperimentLaunch {
  int64_t experiment_id = 0;
  task::TaskDefinition task;
  task::ExperimentPlan plan;
  alloc::Selection gpus;  // leased by the caller
  std::string log_path;   // created (with parents) when missing
};

// Progress callbacks: the TaskManager persists and publishes each step.
struct RunCallbacks {
  // The server process started (status kStarting): its pid, port and argv.
  std::function<void(int pid, int port, const std::vector<std::string>& argv)> on_started;
  // The server is ready; the benchmark begins (status kRunning).
  std::function<void()> on_benchmark;
};

struct RunOutcome {
  task::ExperimentStatus status = task::ExperimentStatus::kFailed;  // succeeded/failed/cancelled
  std::string message;  // failure reason (with log tail) or "" on success
  std::optional<loadgen::BenchReport> bench;
  std::optional<gpu::GpuStatsMap> gpu_monitoring;  // absent when no sample fell in the window
  std::vector<std::string> server_argv;
  int pid = 0;
  int port = 0;
  Seconds bench_started{0};
  Seconds bench_finished{0};
};

class ExperimentRunner {
 public:
  // `clock` stamps the benchmark window (must be the clock the sampler stamps history with).
  ExperimentRunner(Clock& clock, HistoryReader history, RunnerOptions options = {});

  // Blocks for the whole experiment. `cancel` is polled (at least every probe_interval while
  // starting, and by the benchmark's progress loop); when it turns true the server is stopped
  // and the outcome is kCancelled. A benchmark in which no request completed is a failure
  // naming the first error.
  RunOutcome Run(const ExperimentLaunch& launch, const RunCallbacks& callbacks,
                 const std::atomic<bool>& cancel);

  // SIGTERM -> SIGKILL grace for servers stopped from now on (a config reload); any thread.
  void SetStopGrace(Seconds grace) { stop_grace_s_.store(grace.count()); }
  Seconds StopGrace() const { return Seconds{stop_grace_s_.load()}; }

 private:
  struct Attempt;  // the state of one Run() call (experiment_runner.cc)
  // Picks a port, renders the argv and spawns the server; fills pid/port/argv.
  Status StartServer(Attempt& attempt) const;
  // nullopt once ready; else why not ("cancelled", exit or timeout with the log tail).
  std::optional<std::string> WaitReady(Attempt& attempt) const;
  void RunBenchmark(Attempt& attempt) const;
  // Posts the server's emulated-GPU load until `done` (RunBenchmark's helper thread).
  void PostGpuLoad(const Attempt& attempt, const std::atomic<bool>& done) const;

  Clock& clock_;
  HistoryReader history_;
  RunnerOptions options_;  // stop_grace lives in stop_grace_s_
  std::atomic<double> stop_grace_s_;
};

// After a daemon restart: stops a server left running by an experiment the previous daemon
// did not finish, but only when `pid` is alive and its /proc cmdline equals `argv` (a reused
// pid is never signalled). Waits up to `grace`, then SIGKILLs the group. Returns what it did,
// for the experiment's failure message.
std::string StopLeftoverServer(int pid, const std::vector<std::string>& argv, Seconds grace);

// Folds history points within [from, to] into per-GPU stats for `gpu_indices` (pure; exposed
// for tests). Empty map when no point falls in the window.
gpu::GpuStatsMap MonitoringOf(const std::vector<gpu::HistoryPoint>& history,
                              const std::vector<int>& gpu_indices, Seconds from, Seconds to);

}  // namespace gpuscale::experiments
