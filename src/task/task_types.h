// Tasks and experiments (the LLM Autotuner's workflow on gpuscale's core): a task names a
// model, a grid of engine parameters, how to start the inference server and how to
// benchmark it; it expands into one experiment per grid point. Each experiment needs GPUs
// (estimated from its own parameters), waits in the GPU-aware queue, leases GPUs from the
// shared alloc::LeaseLedger, runs its server and a benchmark while the GPUs are sampled, and
// stores its results. The task reports the best experiment for its objective.
//
// These are the plain values shared by the pure core (task/: parsing, grid expansion,
// queue, objective), the runner (task/experiment_runner), the daemon's TaskManager, the
// store (as JSON/text columns) and the API/CLI.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloc/task_spec.h"
#include "core/clock.h"
#include "gpu/gpu_stats.h"
#include "workload/bench_report.h"
#include "workload/workload.h"

namespace gpuscale::task {

// What "best" means for a task. kMaxThroughput: highest output-token throughput.
// kMinLatency: lowest `latency_metric` percentile among experiments whose request
// throughput is >= `throughput_floor_rps` (0 = no floor). kMaxThroughputUnderLatency ("the
// reverse"): highest throughput among experiments whose `latency_metric` percentile is <=
// `latency_ceiling_seconds`.
enum class ObjectiveKind { kMaxThroughput, kMinLatency, kMaxThroughputUnderLatency };

struct Objective {
  ObjectiveKind kind = ObjectiveKind::kMaxThroughput;
  std::string latency_metric = "ttft";  // ttft | tpot | itl | e2e
  double percentile = 90;               // 50 | 90 | 99 (loadgen::LatencySummary)
  double throughput_floor_rps = 0;
  double latency_ceiling_seconds = 0;
};

// The benchmark an experiment runs against its server (`gpuscale bench` options).
struct BenchSpec {
  loadgen::ArrivalMode mode = loadgen::ArrivalMode::kClosedLoop;  // closed loop or poisson
  int concurrency = 8;     // closed loop clients / open loop max in flight
  double rate_per_second = 0;  // poisson only
  loadgen::LengthDistribution input{256, 0};
  loadgen::LengthDistribution output{128, 0};
  double duration_seconds = 30;
  double drain_timeout_seconds = 30;
  uint64_t seed = 1;
};

// A task as submitted (task file YAML/JSON or POST /v1/tasks body).
struct TaskDefinition {
  std::string name;       // required, [a-z0-9-], <= 40 chars
  alloc::TaskSpec spec;   // model, params_b, dtype, gpu_memory_mb, parameters (the grid)
  // Server argv template; placeholders {port}, {gpus} (e.g. "0,1"), {gpu_count}, {model},
  // {<parameter-name>} (this experiment's value). Exec'd as argv, never through a shell.
  std::vector<std::string> server_command;
  std::vector<std::pair<std::string, std::string>> env;  // CUDA_VISIBLE_DEVICES is always set
  std::string readiness_path = "/health";
  Seconds startup_timeout{600};  // server not ready by then -> experiment fails
  BenchSpec bench;
  Seconds gpu_wait_timeout{300};
  int priority = 0;              // higher runs first
  int max_parallel = 0;          // experiments of this task running at once; 0 = no cap
  Objective objective;
};

// One grid point: the parameter values (scalars only) and the task spec restricted to them
// (every list replaced by the chosen scalar), ready for alloc::EstimateRequirement.
struct ExperimentPlan {
  int index = 0;  // position in the grid, 0-based, deterministic (last parameter fastest)
  std::map<std::string, alloc::ParamScalar> parameters;
  alloc::TaskSpec spec;
  int gpus = 1;                   // from the estimator for this point
  int64_t memory_mb_per_gpu = 0;  // from the estimator for this point
  std::string requirement_explanation;
};

enum class ExperimentStatus {
  kQueued,     // waiting for GPUs
  kStarting,   // GPUs leased, server starting / waiting for readiness
  kRunning,    // benchmark running
  kSucceeded,
  kFailed,     // no GPUs before the timeout, server failed, benchmark error, restart...
  kCancelled,
};
std::string_view ExperimentStatusName(ExperimentStatus status);  // "queued", ...
// Errors: none; unknown text -> nullopt.
std::optional<ExperimentStatus> ParseExperimentStatus(std::string_view text);
inline bool IsTerminal(ExperimentStatus s) {
  return s == ExperimentStatus::kSucceeded || s == ExperimentStatus::kFailed ||
         s == ExperimentStatus::kCancelled;
}

enum class TaskStatus { kQueued, kRunning, kSucceeded, kFailed, kCancelled };
// kSucceeded: every experiment ended and at least one succeeded; kFailed: all ended, none
// succeeded; kRunning: some experiment started; kQueued: none started yet.
std::string_view TaskStatusName(TaskStatus status);
std::optional<TaskStatus> ParseTaskStatus(std::string_view text);

// One allocated GPU as it was when the experiment leased it (the Autotuner's gpu_info).
struct AllocatedGpu {
  int index = 0;
  std::string uuid;
  std::string node;
  std::string name;
  int64_t memory_free_mb = 0;
  int64_t memory_total_mb = 0;
  std::optional<double> utilization_percent;
  double score = 0;
};

struct GpuInfoRecord {
  int count = 0;
  std::string model;               // GPU name, e.g. "NVIDIA H100 80GB HBM3"
  std::vector<int> indices;
  std::string allocation_method;   // "lease-ledger/availability-score"
  std::vector<AllocatedGpu> gpus;
};

// Results of one experiment (what the store keeps and the API serves).
struct ExperimentRecord {
  int64_t id = 0;  // store-assigned, unique across tasks
  int64_t task_id = 0;
  int index = 0;
  ExperimentStatus status = ExperimentStatus::kQueued;
  std::map<std::string, alloc::ParamScalar> parameters;
  int gpus_required = 1;
  int64_t memory_mb_per_gpu = 0;
  std::optional<loadgen::BenchReport> bench;  // set when the benchmark ran
  std::optional<GpuInfoRecord> gpu_info;      // set once GPUs were leased
  // Per GPU index over the benchmark window (the structure `gpuscale monitor` prints).
  std::optional<gpu::GpuStatsMap> gpu_monitoring;
  std::vector<std::string> server_argv;  // expanded
  int pid = 0;                           // server process while starting/running
  int port = 0;
  std::string lease_owner;               // "experiment/<id>"
  std::string log_path;
  std::string message;                   // failure reason / log tail / cancel reason
  Seconds queued_at{0};
  std::optional<Seconds> started_at;     // GPUs leased
  std::optional<Seconds> finished_at;
};

struct TaskRecord {
  int64_t id = 0;  // store-assigned
  TaskDefinition definition;
  std::string source_text;  // the task as submitted (YAML/JSON), for show and restart
  TaskStatus status = TaskStatus::kQueued;
  int experiments_total = 0;
  int experiments_done = 0;       // in a terminal state
  std::optional<int64_t> best_experiment_id;
  std::string message;
  Seconds created_at{0};
  std::optional<Seconds> finished_at;
};

}  // namespace gpuscale::task
