import { describe, expect, it } from 'vitest';
import type { GpuHistoryPoint, GpuMonitoring } from '../../src/api/types';
import { MISSING, formatLatency, formatRate, formatUnixTime } from '../../src/format';
import {
  benchFigures,
  bestExperiment,
  comparisonData,
  concernsExperiment,
  concernsTask,
  errorCount,
  formatParameters,
  gpuSummary,
  historyCoverage,
  historyWindow,
  isBest,
  keyFigure,
  monitoringRows,
  sortExperiments,
  sortTasks,
  statusTone,
  taskProgress,
  windowPoints,
} from '../../src/views/tasks_model';
import { event, gpu } from './fixtures';
import { bench, experiment, latency, monitoring, summary, task } from './task_fixtures';

describe('task formatting', () => {
  it.each([
    [1763870000.5, '2025-11-23 03:53:20'],
    [1764892800, '2025-12-05 00:00:00'], // day 5 of month 12: never "05/12/2025" or "12/05/2025"
    [null, MISSING],
    [1e20, MISSING],
    [Number.NaN, MISSING],
  ])('formatUnixTime(%s) = %s', (seconds, expected) => {
    expect(formatUnixTime(seconds, true, 'UTC')).toBe(expected);
  });

  it.each([
    [4.214, 'req/s', '4.2 req/s'],
    [538.9, 'tok/s', '539 tok/s'],
    [12345.6, 'tok/s', '12,346 tok/s'],
    [0, 'req/s', '0.0 req/s'],
    [null, 'req/s', MISSING],
  ])('formatRate(%s, %s) = %s', (value, unit, expected) => {
    expect(formatRate(value, unit)).toBe(expected);
  });

  it.each([
    [0.0123, '12.3 ms'],
    [0.085, '85.0 ms'],
    [0.4567, '457 ms'],
    [1.9, '1.90 s'],
    [null, MISSING],
  ])('formatLatency(%s) = %s', (seconds, expected) => {
    expect(formatLatency(seconds)).toBe(expected);
  });

  it.each([
    ['succeeded', 'ok'], ['running', 'busy'], ['starting', 'busy'], ['failed', 'bad'],
    ['queued', 'idle'], ['cancelled', 'idle'], ['something_new', 'idle'],
  ])('status %s has the %s badge', (status, tone) => {
    expect(statusTone(status)).toBe(tone);
  });

  it('summarizes progress, leaving out zero counts', () => {
    expect(taskProgress(summary())).toBe('2 / 6 done · 2 running');
    expect(taskProgress(summary({ experiments_done: 6, experiments_failed: 1, experiments_running: 0 })))
      .toBe('6 / 6 done · 1 failed');
  });

  it('lists parameters by name, keeping their scalar types and grid lists', () => {
    expect(formatParameters({ tp: 2, 'max-num-seqs': 16, 'enable-prefix-caching': true }))
      .toBe('enable-prefix-caching=true, max-num-seqs=16, tp=2');
    expect(formatParameters({ tp: [1, 2], dtype: 'bf16' })).toBe('dtype=bf16, tp=[1, 2]');
    expect(formatParameters({})).toBe(MISSING);
  });

  it('names the GPUs leased, else the estimate', () => {
    expect(gpuSummary(experiment(0))).toBe('1 × NVIDIA H100 80GB HBM3');
    expect(gpuSummary(experiment(0, { gpu_info: null, gpus_required: 2, memory_mb_per_gpu: 19456 })))
      .toBe('2 × 19.0 GiB (needed)');
  });
});

describe('sorting and the best experiment', () => {
  it('sorts tasks newest first, by id within the same second', () => {
    const sorted = sortTasks([summary({ id: 1, created_at: 10 }), summary({ id: 3, created_at: 30 }),
      summary({ id: 2, created_at: 30 })]);
    expect(sorted.map((t) => t.id)).toEqual([3, 2, 1]);
  });

  it('sorts experiments by grid index', () => {
    expect(sortExperiments([experiment(2), experiment(0), experiment(1)]).map((e) => e.index)).toEqual([0, 1, 2]);
  });

  it('finds the best experiment by is_best, else by the task\'s best_experiment_id', () => {
    const flagged = task([experiment(0), experiment(1, { is_best: true })], { best_experiment_id: 101 });
    expect(bestExperiment(flagged)?.index).toBe(1);
    const byId = task([experiment(0), experiment(1)], { best_experiment_id: 100 });
    expect(bestExperiment(byId)?.index).toBe(0);
    expect(isBest(byId, experiment(0))).toBe(true);
    expect(isBest(byId, experiment(1))).toBe(false);
    expect(bestExperiment(task([experiment(0)], { best_experiment_id: null }))).toBeNull();
    expect(isBest(summary({ best_experiment_id: null }), experiment(0))).toBe(false);
  });

  it('shows the figure the objective ranks by', () => {
    const max = summary().objective;
    expect(keyFigure(max, bench())).toEqual({ label: 'output throughput', text: '539 tok/s' });
    const minTpot = { ...max, kind: 'min_latency', latency_metric: 'tpot', percentile: 99 };
    expect(keyFigure(minTpot, bench())).toEqual({ label: 'TPOT p99', text: '16.0 ms' });
    const minE2e = { ...max, kind: 'min_latency', latency_metric: 'e2e', percentile: 50 };
    expect(keyFigure(minE2e, bench()).text).toBe('1.14 s');
    const under = { ...max, kind: 'max_throughput_under_latency', latency_ceiling_seconds: 0.5 };
    expect(keyFigure(under, bench()).label).toBe('output throughput');
    expect(keyFigure(max, null).text).toBe(MISSING);
  });
});

describe('benchmark figures', () => {
  it('formats the key figures with units', () => {
    expect(benchFigures(bench())).toEqual({
      requestRate: '4.2 req/s', tokenRate: '539 tok/s', ttftP90: '85.0 ms', tpotP90: '12.3 ms', errors: '0',
    });
  });

  it('gives errors as a count and a share of requests', () => {
    expect(benchFigures(bench({ requests_completed: 38, requests_failed: 2 })).errors).toBe('2 (5.0 %)');
  });

  it('counts errors by kind when the failed count is absent', () => {
    const loose = bench({ errors_by_kind: { timeout: 2, http_500: 1 } });
    (loose as { requests_failed?: number }).requests_failed = undefined;
    expect(errorCount(loose)).toBe(3);
  });

  it('shows dashes without a benchmark and for missing percentiles', () => {
    expect(Object.values(benchFigures(null))).toEqual([MISSING, MISSING, MISSING, MISSING, MISSING]);
    expect(benchFigures(bench({ ttft_seconds: latency(0, { p90: null }) })).ttftP90).toBe(MISSING);
  });
});

describe('GPU monitoring table', () => {
  it('has one row per GPU in index order with mean and min – max in units', () => {
    const rows = monitoringRows(monitoring());
    expect(rows.map((r) => r.index)).toEqual(['2', '10']);
    expect(rows[0]).toMatchObject({
      name: 'NVIDIA H100 80GB HBM3',
      utilization: { mean: '45 %', range: '0 % – 90 %' },
      memory: { mean: '29.3 GiB', range: '1.0 GiB – 40.0 GiB' },
      memoryPercent: { mean: '36.8 %', range: '1.3 % – 50.2 %' },
      temperature: { mean: '60 °C', range: '35 °C – 71 °C' },
      power: { mean: '411 W', range: '90 W – 650 W' },
    });
  });

  it('shows dashes for metrics the backend never reported and accepts the monitor\'s own keys', () => {
    const base = monitoring();
    const gpu2 = base.gpus['2'];
    if (!gpu2) throw new Error('fixture lacks GPU 2');
    const asMonitorPrints = {
      monitoring_duration_seconds: 5, sample_count: 6,
      gpu_stats: { '2': { ...gpu2, power_draw_w: { min: null, max: null, mean: null } } },
    } as unknown as GpuMonitoring;
    const [row] = monitoringRows(asMonitorPrints);
    expect(row?.power).toEqual({ mean: MISSING, range: MISSING });
    expect(row?.temperature.mean).toBe('60 °C');
    expect(monitoringRows(null)).toEqual([]);
  });
});

describe('experiment charts', () => {
  it('compares experiments with a benchmark: tok/s and TTFT p90 in ms', () => {
    const data = comparisonData([
      experiment(1, { bench: bench({ output_token_throughput_per_second: 900, ttft_seconds: latency(0.2) }) }),
      experiment(0),
      experiment(2, { bench: null, status: 'running' }),
    ]);
    expect(data.x).toEqual([0, 1]);
    expect(data.ids).toEqual([100, 101]);
    expect(data.series[0]?.values).toEqual([538.9, 900]);
    expect(data.series[1]?.values.map((v) => (v === null ? null : Math.round(v)))).toEqual([85, 200]);
  });

  it('asks the history for the experiment\'s window, up to now while it runs', () => {
    expect(historyWindow(experiment(0, { started_at: null, finished_at: null }), 2000)).toBeNull();
    expect(historyWindow(experiment(0, { started_at: 1000, finished_at: 1100 }), 1500))
      .toEqual({ start: 1000, end: 1100, requestSeconds: 510, tooOld: false });
    expect(historyWindow(experiment(0, { started_at: 1000, finished_at: null }), 1030)?.end).toBe(1030);
    expect(historyWindow(experiment(0, { started_at: 0, finished_at: 10 }), 100000))
      .toMatchObject({ requestSeconds: 86400, tooOld: true });
  });

  const at = (t: number, indexes: number[]): GpuHistoryPoint => ({
    timestamp: new Date(t * 1000).toISOString(), gpus: indexes.map((i) => gpu(i)),
  });

  it('tells whether the history still holds the window', () => {
    const window = { start: 1000, end: 1060, requestSeconds: 100, tooOld: false };
    expect(historyCoverage([at(995, [0]), at(1030, [0])], window)).toBe('full');
    expect(historyCoverage([at(1040, [0]), at(1050, [0])], window)).toBe('partial');
    expect(historyCoverage([at(1200, [0])], window)).toBe('none');
    expect(historyCoverage([], window)).toBe('none');
  });

  it('keeps the window\'s points of the experiment\'s GPUs only', () => {
    const window = { start: 1000, end: 1060, requestSeconds: 100, tooOld: false };
    const points = windowPoints([at(900, [0, 1]), at(1010, [0, 1, 2]), at(1100, [0])], window, [1, 2]);
    expect(points).toHaveLength(1);
    expect(points[0]?.gpus.map((g) => g.index)).toEqual([1, 2]);
    expect(windowPoints([at(1010, [0, 1])], window, [])[0]?.gpus).toHaveLength(2);
  });
});

describe('live updates', () => {
  it('refreshes a task on its own task and experiment events only', () => {
    const finished = event(1, { service: '', kind: 'task_finished', data: { task_id: 3, experiment_id: 0, gpus: [] } });
    const started = event(2, { service: '', kind: 'experiment_started', data: { task_id: 4, experiment_id: 9, gpus: [1] } });
    expect(concernsTask(finished, 3)).toBe(true);
    expect(concernsTask(started, 3)).toBe(false);
    expect(concernsTask(event(3, { kind: 'decision' }), 3)).toBe(false);
    expect(concernsTask(event(4, { kind: 'task_cancelled', data: null }), 3)).toBe(true);
    expect(concernsExperiment(started, 9)).toBe(true);
    expect(concernsExperiment(started, 8)).toBe(false);
  });
});
