// Pure helpers of the tasks, task and experiment views: status badges, the benchmark
// figures that matter for a task's objective, the best experiment, the GPU monitoring
// table, the experiments comparison chart and the experiment's GPU history window.
// No DOM, no fetch: unit-tested with fixture JSON in the documented shapes.

import type {
  BenchReport,
  Experiment,
  GpuHistoryPoint,
  GpuMonitoring,
  GpuMonitorStats,
  GpuscaleEvent,
  LatencyStats,
  MetricStats,
  ParamScalar,
  Task,
  TaskObjective,
  TaskSummary,
} from '../api/types';
import type { ChartData } from '../charts/series';
import {
  MISSING,
  formatLatency,
  formatMib,
  formatPercent,
  formatPower,
  formatRate,
  formatTemperature,
  parseTime,
} from '../format';

const ENDED = new Set(['succeeded', 'failed', 'cancelled']);

// The tasks view's empty state: how to submit one (backticks: shown as <code>).
export const NO_TASKS_HINT = 'Submit one with `gpuscale task submit FILE` (examples in examples/tasks/), ' +
  'with "New task" above, or POST it to /v1/tasks; its experiments appear here as they run.';

export function isEnded(status: string): boolean {
  return ENDED.has(status);
}

// CSS class of a task's or experiment's status badge: ok / busy / bad / idle.
export function statusTone(status: string): 'ok' | 'busy' | 'bad' | 'idle' {
  switch (status) {
    case 'succeeded':
      return 'ok';
    case 'running':
    case 'starting':
      return 'busy';
    case 'failed':
      return 'bad';
    default:
      return 'idle'; // queued, cancelled, anything new
  }
}

// Newest first (created_at, then id), whatever order the answer had.
export function sortTasks(tasks: readonly TaskSummary[]): TaskSummary[] {
  return [...tasks].sort((a, b) => b.created_at - a.created_at || b.id - a.id);
}

export function sortExperiments(experiments: readonly Experiment[]): Experiment[] {
  return [...experiments].sort((a, b) => a.index - b.index || a.id - b.id);
}

// "2 / 6 done · 1 failed · 2 running".
export function taskProgress(task: TaskSummary): string {
  const parts = [`${task.experiments_done} / ${task.experiments_total} done`];
  if (task.experiments_failed > 0) parts.push(`${task.experiments_failed} failed`);
  if (task.experiments_running > 0) parts.push(`${task.experiments_running} running`);
  return parts.join(' · ');
}

function scalarText(value: ParamScalar | ParamScalar[]): string {
  return Array.isArray(value) ? `[${value.map(String).join(', ')}]` : String(value);
}

// "max-num-seqs=8, tp=1" in key order (lists as "[1, 2]").
export function formatParameters(parameters: Record<string, ParamScalar | ParamScalar[]>): string {
  const keys = Object.keys(parameters).sort();
  if (keys.length === 0) return MISSING;
  return keys.map((k) => `${k}=${scalarText(parameters[k] ?? '')}`).join(', ');
}

// The experiment the task reports as best: is_best, else best_experiment_id.
export function bestExperiment(task: Task): Experiment | null {
  return task.experiments.find((e) => e.is_best)
    ?? task.experiments.find((e) => e.id === task.best_experiment_id)
    ?? null;
}

export function isBest(task: Pick<TaskSummary, 'best_experiment_id'>, experiment: Experiment): boolean {
  return experiment.is_best || (task.best_experiment_id !== null && experiment.id === task.best_experiment_id);
}

const LATENCY_KEYS: Record<string, keyof BenchReport> = {
  ttft: 'ttft_seconds',
  tpot: 'time_per_output_token_seconds',
  itl: 'inter_token_latency_seconds',
  e2e: 'e2e_latency_seconds',
};

const LATENCY_NAMES: Record<string, string> = { ttft: 'TTFT', tpot: 'TPOT', itl: 'ITL', e2e: 'E2E' };

export function percentileOf(stats: LatencyStats | undefined, percentile: number): number | null {
  if (!stats) return null;
  if (percentile === 50) return stats.p50;
  if (percentile === 99) return stats.p99;
  return stats.p90;
}

// The latency the objective constrains or minimizes ("ttft" at p90), in seconds.
export function objectiveLatency(objective: TaskObjective, bench: BenchReport): number | null {
  const key = LATENCY_KEYS[objective.latency_metric] ?? 'ttft_seconds';
  return percentileOf(bench[key] as LatencyStats | undefined, objective.percentile);
}

export interface KeyFigure {
  label: string; // "output throughput", "TTFT p90"
  text: string; // "1,234 tok/s", "85.0 ms"
}

// The figure a task's objective ranks experiments by, for the best-experiment column.
export function keyFigure(objective: TaskObjective, bench: BenchReport | null): KeyFigure {
  if (objective.kind === 'min_latency') {
    const name = `${LATENCY_NAMES[objective.latency_metric] ?? objective.latency_metric} p${objective.percentile}`;
    return { label: name, text: bench ? formatLatency(objectiveLatency(objective, bench)) : MISSING };
  }
  return {
    label: 'output throughput',
    text: bench ? formatRate(bench.output_token_throughput_per_second, 'tok/s') : MISSING,
  };
}

// Failed requests: requests_failed, or the sum of errors by kind when only that is given.
export function errorCount(bench: BenchReport): number {
  if (Number.isFinite(bench.requests_failed)) return bench.requests_failed;
  const byKind = bench.errors_by_kind ?? bench.errors ?? {};
  return Object.values(byKind).reduce((a, b) => a + b, 0);
}

// Key benchmark figures of an experiment, formatted with units (— without a benchmark).
export interface BenchFigures {
  requestRate: string;
  tokenRate: string;
  ttftP90: string;
  tpotP90: string;
  errors: string;
}

export function benchFigures(bench: BenchReport | null): BenchFigures {
  if (!bench) return { requestRate: MISSING, tokenRate: MISSING, ttftP90: MISSING, tpotP90: MISSING, errors: MISSING };
  const errors = errorCount(bench);
  const total = bench.requests_completed + errors;
  return {
    requestRate: formatRate(bench.request_throughput_per_second, 'req/s'),
    tokenRate: formatRate(bench.output_token_throughput_per_second, 'tok/s'),
    ttftP90: formatLatency(bench.ttft_seconds?.p90),
    tpotP90: formatLatency(bench.time_per_output_token_seconds?.p90),
    errors: errors > 0 && total > 0 ? `${errors} (${formatPercent((100 * errors) / total, 1)})` : String(errors),
  };
}

// "1 × NVIDIA H100 80GB HBM3" (leased), else what the estimate asks for.
export function gpuSummary(experiment: Experiment): string {
  const info = experiment.gpu_info;
  if (info) return `${info.count} × ${info.model || 'GPU'}`;
  return `${experiment.gpus_required} × ${formatMib(experiment.memory_mb_per_gpu)} (needed)`;
}

// ---- GPU monitoring stats table -------------------------------------------------------

export interface MonitoringCell {
  mean: string;
  range: string; // "min – max"
}

export interface MonitoringRow {
  index: string;
  name: string;
  utilization: MonitoringCell;
  memory: MonitoringCell;
  memoryPercent: MonitoringCell;
  temperature: MonitoringCell;
  power: MonitoringCell;
}

function cell(stats: MetricStats | undefined, format: (v: number | null) => string): MonitoringCell {
  if (!stats || stats.mean === null) return { mean: MISSING, range: MISSING };
  return { mean: format(stats.mean), range: `${format(stats.min)} – ${format(stats.max)}` };
}

// The monitor's per-GPU object; the `gpuscale monitor` names (gpu_stats, sample_count) too.
export function monitoringGpus(monitoring: GpuMonitoring): Record<string, GpuMonitorStats> {
  const loose = monitoring as GpuMonitoring & { gpu_stats?: Record<string, GpuMonitorStats> };
  return loose.gpus ?? loose.gpu_stats ?? {};
}

export function monitoringSamples(monitoring: GpuMonitoring): number | null {
  const loose = monitoring as GpuMonitoring & { sample_count?: number };
  return loose.samples ?? loose.sample_count ?? null;
}

// One row per GPU, in GPU index order (the keys are index strings: "10" after "2").
export function monitoringRows(monitoring: GpuMonitoring | null): MonitoringRow[] {
  if (!monitoring) return [];
  const gpus = monitoringGpus(monitoring);
  return Object.keys(gpus)
    .sort((a, b) => Number(a) - Number(b) || a.localeCompare(b))
    .map((index) => {
      const s = gpus[index] as GpuMonitorStats;
      return {
        index,
        name: s.name ?? '',
        utilization: cell(s.utilization, (v) => formatPercent(v)),
        memory: cell(s.memory_used_mb, formatMib),
        memoryPercent: cell(s.memory_usage_percent, (v) => formatPercent(v, 1)),
        temperature: cell(s.temperature_c, formatTemperature),
        power: cell(s.power_draw_w, formatPower),
      };
    });
}

// ---- charts ----------------------------------------------------------------------------

// Per experiment with a benchmark, in the task's order (x = position 0, 1, …; `ids` are the
// experiments' ids, which label them as everywhere else): output tok/s and TTFT p90 in ms.
export function comparisonData(experiments: readonly Experiment[]): ChartData & { ids: number[] } {
  const ran = sortExperiments(experiments).filter((e) => e.bench !== null);
  const p90 = (e: Experiment) => e.bench?.ttft_seconds?.p90;
  return {
    x: ran.map((_e, i) => i),
    ids: ran.map((e) => e.id),
    series: [
      { label: 'output tok/s', values: ran.map((e) => e.bench?.output_token_throughput_per_second ?? null) },
      { label: 'TTFT p90 (ms)', values: ran.map((e) => { const v = p90(e); return v === null || v === undefined ? null : v * 1000; }) },
    ],
  };
}

// The experiment's window in Unix seconds: [started_at, finished_at or now]; null before
// it started. `requestSeconds` is the /v1/gpus/history window that reaches back to its
// start (a little extra for the sample before), capped at the API's 86400.
export interface HistoryWindow {
  start: number;
  end: number;
  requestSeconds: number;
  tooOld: boolean; // the API keeps at most 24 h
}

export function historyWindow(experiment: Experiment, now: number): HistoryWindow | null {
  if (experiment.started_at === null) return null;
  const start = experiment.started_at;
  const end = experiment.finished_at ?? now;
  const needed = Math.ceil(now - start) + 10;
  return { start, end, requestSeconds: Math.min(86400, Math.max(1, needed)), tooOld: needed > 86400 };
}

// Whether the history answer still covers the window: 'full' when it reaches back to the
// window's start (within `slackSeconds`, a sample interval), 'partial' when it holds some
// of the window, 'none' when none of it.
export function historyCoverage(points: readonly GpuHistoryPoint[], window: HistoryWindow,
  slackSeconds = 10): 'full' | 'partial' | 'none' {
  const times = points.map((p) => parseTime(p.timestamp)).filter(Number.isFinite);
  const inside = times.filter((t) => t >= window.start - slackSeconds && t <= window.end + slackSeconds);
  if (inside.length === 0) return 'none';
  return Math.min(...times) <= window.start + slackSeconds ? 'full' : 'partial';
}

// The points within the window, restricted to the experiment's GPUs (all when unknown).
export function windowPoints(points: readonly GpuHistoryPoint[], window: HistoryWindow,
  gpuIndices: readonly number[], slackSeconds = 2): GpuHistoryPoint[] {
  const keep = new Set(gpuIndices);
  return points
    .filter((p) => {
      const t = parseTime(p.timestamp);
      return t >= window.start - slackSeconds && t <= window.end + slackSeconds;
    })
    .map((p) => ({ ...p, gpus: keep.size === 0 ? p.gpus : p.gpus.filter((g) => keep.has(g.index)) }));
}

// ---- live updates ----------------------------------------------------------------------

export function isTaskEvent(event: GpuscaleEvent): boolean {
  return event.kind.startsWith('task_') || event.kind.startsWith('experiment_');
}

function dataNumber(event: GpuscaleEvent, key: string): number | null {
  const data = event.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const value = data[key];
  return typeof value === 'number' ? value : null;
}

// True when `event` is about task `taskId` (or names no task: refresh to be safe).
export function concernsTask(event: GpuscaleEvent, taskId: number): boolean {
  if (!isTaskEvent(event)) return false;
  const id = dataNumber(event, 'task_id');
  return id === null || id === taskId;
}

export function concernsExperiment(event: GpuscaleEvent, experimentId: number): boolean {
  if (!isTaskEvent(event)) return false;
  const id = dataNumber(event, 'experiment_id');
  return id === null || id === experimentId;
}
