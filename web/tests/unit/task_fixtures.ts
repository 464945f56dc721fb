// Builders of tasks API values for unit tests, in the shapes docs/api.md "Tasks" documents
// (Unix-second times, `gpuscale bench -o json` and `gpuscale monitor -o json` sub-objects).
import type { BenchReport, Experiment, GpuMonitoring, LatencyStats, Task, TaskSummary } from '../../src/api/types';

export function latency(p90: number, overrides: Partial<LatencyStats> = {}): LatencyStats {
  return { count: 40, mean: p90 * 0.7, min: p90 * 0.2, max: p90 * 1.5, p50: p90 * 0.6, p90, p99: p90 * 1.3, ...overrides };
}

export function bench(overrides: Partial<BenchReport> = {}): BenchReport {
  return {
    requests_completed: 40,
    requests_failed: 0,
    errors_by_kind: {},
    request_throughput_per_second: 4.21,
    output_token_throughput_per_second: 538.9,
    input_token_throughput_per_second: 1077.7,
    elapsed_seconds: 9.5,
    ttft_seconds: latency(0.085),
    inter_token_latency_seconds: latency(0.012),
    time_per_output_token_seconds: latency(0.0123),
    e2e_latency_seconds: latency(1.9),
    ...overrides,
  };
}

export function monitoring(): GpuMonitoring {
  const stats = (min: number, max: number, mean: number) => ({ min, max, mean });
  const gpu = (name: string, util: number) => ({
    name,
    utilization: { ...stats(0, util, util / 2), samples: 11 },
    memory_used_mb: stats(1024, 40960, 30000),
    memory_usage_percent: stats(1.26, 50.2, 36.8),
    temperature_c: stats(35, 71, 60.4),
    power_draw_w: stats(90, 650, 410.6),
  });
  return { monitoring_duration_seconds: 10, samples: 11, gpus: { '10': gpu('NVIDIA H100 80GB HBM3', 80), '2': gpu('NVIDIA H100 80GB HBM3', 90) } };
}

export function experiment(index: number, overrides: Partial<Experiment> = {}): Experiment {
  return {
    id: 100 + index,
    task_id: 1,
    index,
    status: 'succeeded',
    parameters: { 'max-num-seqs': 8 * (index + 1), tp: 1 },
    gpus_required: 1,
    memory_mb_per_gpu: 19000,
    is_best: false,
    gpu_info: {
      count: 1, model: 'NVIDIA H100 80GB HBM3', indices: [index], allocation_method: 'lease-ledger/availability-score',
      gpus: [{ index, uuid: `GPU-${index}`, node: 'local', name: 'NVIDIA H100 80GB HBM3', memory_free_mb: 81000,
        memory_total_mb: 81559, utilization_percent: 0, score: 0.98 }],
    },
    gpu_monitoring: monitoring(),
    bench: bench(),
    server_argv: ['gpuscale', 'emulate', '--port', '41000'],
    pid: 0,
    port: 41000,
    log_path: `/var/lib/gpuscale/experiments/${100 + index}.log`,
    message: '',
    queued_at: 1763870000,
    started_at: 1763870001,
    finished_at: 1763870012,
    ...overrides,
  };
}

export function summary(overrides: Partial<TaskSummary> = {}): TaskSummary {
  return {
    id: 1,
    name: 'sweep',
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    status: 'running',
    priority: 0,
    experiments_total: 6,
    experiments_done: 2,
    experiments_failed: 0,
    experiments_running: 2,
    best_experiment_id: null,
    objective: { kind: 'max_throughput', latency_metric: 'ttft', percentile: 90, throughput_floor_rps: 0,
      latency_ceiling_seconds: 0, description: 'max output tokens/s' },
    message: '',
    created_at: 1763870000.5,
    finished_at: null,
    ...overrides,
  };
}

export function task(experiments: Experiment[], overrides: Partial<Task> = {}): Task {
  return {
    ...summary(),
    source_text: 'name: sweep\n',
    parameters: { tp: [1, 2], 'max-num-seqs': 8 },
    server_command: ['gpuscale', 'emulate', '--port', '{port}'],
    bench: { mode: 'closed_loop', concurrency: 8, rate_per_second: 0, input_tokens: 256, output_tokens: 128, duration_seconds: 30 },
    gpu_wait_timeout_seconds: 300,
    max_parallel: 0,
    experiments,
    ...overrides,
  };
}
