// Test data shared by the tasks API tests (api_tasks_test.cc) and the task CLI tests
// (cli/task_commands_test.cc): task definitions as a client submits them, and a task with
// experiments in every interesting state to seed a FakeDaemonApi with. Test-only.
#pragma once

#include <string>

#include "testing/fake_daemon_api.h"
#include "task/task_types.h"

namespace gpuscale::api {

// A 2 x 3 sweep (6 experiments), the task file of docs/tasks.md in small.
inline const char* const kSweepTaskYaml = R"(name: sweep
model: meta-llama/Llama-3.1-8B-Instruct
parameters:
  tensor-parallel-size: [1, 2]
  max-num-seqs: [8, 16, 32]
server:
  command: [gpuscale, emulate, --port, "{port}", --tensor-parallel-size,
            "{tensor-parallel-size}", --max-num-seqs, "{max-num-seqs}"]
benchmark:
  concurrency: 8
  input_tokens: 256
  output_tokens: 128
  duration_seconds: 30
)";

// The same task as JSON (one experiment per max-num-seqs value: 3 experiments).
inline const char* const kSweepTaskJson = R"({
  "name": "sweep-json",
  "model": "meta-llama/Llama-3.1-8B-Instruct",
  "parameters": {"tensor-parallel-size": 1, "max-num-seqs": [8, 16, 32]},
  "server": {"command": ["gpuscale", "emulate", "--port", "{port}",
                        "--max-num-seqs", "{max-num-seqs}"]},
  "benchmark": {"concurrency": 8, "duration_seconds": 30}
})";

// Line 11 holds a bad value: the error must name benchmark.duration_seconds and line 11.
inline const char* const kBadDurationTaskYaml = R"(name: sweep
model: meta-llama/Llama-3.1-8B-Instruct
parameters:
  tensor-parallel-size: [1, 2]
server:
  command: [gpuscale, emulate, --port, "{port}"]
benchmark:
  concurrency: 8
  input_tokens: 256
  output_tokens: 128
  duration_seconds: -5
)";

inline loadgen::LatencySummary Latency(double p50, double p90, double p99) {
  return loadgen::LatencySummary{100, p50, p50 * 0.5, p99 * 1.5, p50, p90, p99};
}

// Task 4 "llama-sweep" (running), experiments 7 (#0, succeeded, best: 412.3 tok/s on GPU 2,
// monitored), 8 (#1, running on GPUs 0,1) and 9 (#2, queued). Task 3 "old" (succeeded, no
// experiments) is older.
inline void SeedTasks(FakeDaemonApi& daemon) {
  task::TaskRecord old;
  old.id = 3;
  old.definition.name = "old";
  old.definition.spec.model = "Qwen/Qwen2.5-7B";
  old.status = task::TaskStatus::kSucceeded;
  old.created_at = Seconds{1763860000.0};
  old.finished_at = Seconds{1763861000.0};
  daemon.PutTask(old);

  task::TaskRecord sweep;
  sweep.id = 4;
  sweep.definition.name = "llama-sweep";
  sweep.definition.spec.model = "meta-llama/Llama-3.1-8B-Instruct";
  sweep.definition.spec.parameters["tp"] = alloc::ParamValue::List({int64_t{1}, int64_t{2}});
  sweep.definition.spec.parameters["max-num-seqs"] =
      alloc::ParamValue::List({int64_t{8}, int64_t{16}});
  sweep.definition.server_command = {"gpuscale", "emulate", "--port", "{port}"};
  sweep.source_text = "name: llama-sweep\n";
  sweep.status = task::TaskStatus::kRunning;
  sweep.experiments_total = 3;
  sweep.experiments_done = 1;
  sweep.best_experiment_id = 7;
  sweep.created_at = Seconds{1763870000.5};
  daemon.PutTask(sweep);

  task::ExperimentRecord best;
  best.id = 7;
  best.task_id = 4;
  best.index = 0;
  best.status = task::ExperimentStatus::kSucceeded;
  best.parameters = {{"max-num-seqs", int64_t{8}}, {"tp", int64_t{1}}};
  best.memory_mb_per_gpu = 19000;
  loadgen::BenchReport report;
  report.requests_completed = 120;
  report.request_throughput_per_second = 4.0;
  report.output_token_throughput_per_second = 412.3;
  report.elapsed_seconds = 30;
  report.ttft_seconds = Latency(0.05, 0.0812, 0.12);
  report.time_per_output_token_seconds = Latency(0.01, 0.0153, 0.02);
  report.e2e_latency_seconds = Latency(1.5, 2.0, 2.5);
  best.bench = report;
  task::GpuInfoRecord info;
  info.count = 1;
  info.model = "NVIDIA H100 80GB HBM3";
  info.indices = {2};
  info.allocation_method = "lease-ledger/availability-score";
  info.gpus.push_back(task::AllocatedGpu{2, "GPU-2", "local", "NVIDIA H100 80GB HBM3", 81000,
                                         81559, 0.0, 0.98});
  best.gpu_info = info;
  gpu::GpuStats stats;
  stats.name = "NVIDIA H100 80GB HBM3";
  stats.utilization_percent.Add(40.0);
  stats.utilization_percent.Add(90.0);
  best.gpu_monitoring = gpu::GpuStatsMap{{2, stats}};
  best.server_argv = {"gpuscale", "emulate", "--port", "9100"};
  best.log_path = "/tmp/gpuscale/experiments/7.log";
  best.queued_at = Seconds{1763870000.5};
  best.started_at = Seconds{1763870001.0};
  best.finished_at = Seconds{1763870040.0};
  daemon.PutExperiment(best);

  task::ExperimentRecord running;
  running.id = 8;
  running.task_id = 4;
  running.index = 1;
  running.status = task::ExperimentStatus::kRunning;
  running.parameters = {{"max-num-seqs", int64_t{16}}, {"tp", int64_t{2}}};
  running.gpus_required = 2;
  task::GpuInfoRecord two;
  two.count = 2;
  two.indices = {0, 1};
  running.gpu_info = two;
  running.queued_at = Seconds{1763870000.5};
  running.started_at = Seconds{1763870001.0};
  daemon.PutExperiment(running);

  task::ExperimentRecord queued;
  queued.id = 9;
  queued.task_id = 4;
  queued.index = 2;
  queued.parameters = {{"max-num-seqs", int64_t{16}}, {"tp", int64_t{1}}};
  queued.queued_at = Seconds{1763870000.5};
  daemon.PutExperiment(queued);
}

}  // namespace gpuscale::api
