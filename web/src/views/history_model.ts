// Pure helpers of the service page's history panel: the answer of
// GET /v1/services/{name}/history (columnar, one entry per step) -> the charts that share its
// time axis: each policy metric against its target, desired / ready / current replicas, and
// the gateway's traffic (request rate, latency percentiles, error ratio, in flight). No DOM,
// no fetch: unit-tested with answers in the documented shape.

import type { ApiClient } from '../api/client';
import { ApiError, describeError } from '../api/errors';
import type { HistoryColumn, HistoryQuery, ServiceHistory } from '../api/types';
import type { ChartData, ChartSeries } from '../charts/series';
import { metricUnit } from './policy_model';

// Windows the panel offers (the daemon keeps 24 h: tick resolution for the last 10 minutes,
// one point per minute before that).
export const SERVICE_HISTORY_WINDOWS: ReadonlyArray<{ seconds: number; label: string }> = [
  { seconds: 600, label: '10 min' },
  { seconds: 3600, label: '1 h' },
  { seconds: 6 * 3600, label: '6 h' },
  { seconds: 86400, label: '24 h' },
];
// 10 minutes: the daemon's tick resolution (longer windows get one point per minute).
export const DEFAULT_WINDOW_SECONDS = 600;

export interface HistoryChartSpec {
  key: string; // stable while the chart's lines stay the same (reuse of the chart object)
  group: 'metric' | 'replicas' | 'traffic';
  title: string;
  unit: string;
  integers?: boolean;
  percent?: boolean;
  data: ChartData;
}

function finiteOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

// A column of exactly `length` entries: missing entries and non-numbers become null, so a
// short or malformed column draws as a gap rather than misaligning the chart.
export function column(values: unknown, length: number): HistoryColumn {
  const list = Array.isArray(values) ? values : [];
  return Array.from({ length }, (_, i) => finiteOrNull(list[i]));
}

function scaled(values: HistoryColumn, factor: number): HistoryColumn {
  return values.map((v) => (v === null ? null : v * factor));
}

function hasValue(values: HistoryColumn): boolean {
  return values.some((v) => v !== null);
}

// The x column: Unix seconds, oldest first, as the server sent it (every other column is
// aligned to it by column()).
function times(history: ServiceHistory): number[] {
  return Array.isArray(history.t) ? history.t : [];
}

function chart(x: number[], spec: Omit<HistoryChartSpec, 'data'>, series: ChartSeries[]): HistoryChartSpec {
  return { ...spec, data: { x, series } };
}

// Whether the daemon recorded a tick in each entry (it records the replica counts at every
// tick, whatever the policy read).
function recordedTicks(history: ServiceHistory, length: number): boolean[] {
  const counts = [history.desired, history.ready, history.current].map((c) => column(c, length));
  return Array.from({ length }, (_, i) => counts.some((c) => c[i] !== null));
}

// The target line as drawn: each entry that holds a tick but no target takes the last target
// before it. Under a manual override (PUT /replicas) the daemon records the tick's replica
// counts but none of what the policy read (the override's decision carries no inputs), so
// the target would stop at the override; the policy's target has not changed, so the line goes
// on. It stops where nothing was recorded (a break in the record) and is never drawn before
// the first target in the window. The value is not carried: there is no reading.
export function carryTarget(target: HistoryColumn, recorded: readonly boolean[]): HistoryColumn {
  let last: number | null = null;
  return target.map((v, i) => {
    if (v !== null) last = v;
    else if (!recorded[i]) last = null;
    return v ?? last;
  });
}

export function metricCharts(history: ServiceHistory): HistoryChartSpec[] {
  const x = times(history);
  const metrics = Array.isArray(history.metrics) ? history.metrics : [];
  const recorded = recordedTicks(history, x.length);
  return metrics.map((m, i) => chart(x, { key: `metric:${i}:${m.name}`, group: 'metric', title: `${m.name} against its target`,
    unit: metricUnit(m.name) }, [
    { label: 'value', values: column(m.value, x.length) },
    { label: 'target', values: carryTarget(column(m.target, x.length), recorded), dash: true },
  ]));
}

export function replicaChart(history: ServiceHistory): HistoryChartSpec {
  const x = times(history);
  return chart(x, { key: 'replicas', group: 'replicas', title: 'Replica counts', unit: 'replicas', integers: true }, [
    { label: 'desired', values: column(history.desired, x.length) },
    { label: 'ready', values: column(history.ready, x.length) },
    { label: 'current', values: column(history.current, x.length) },
  ]);
}

// Request rate (req/s), TTFT p50 / p90, TPOT p50 and e2e p90 (ms, a chart each), error ratio
// (%) and requests in flight. None when the window holds no gateway figure at all.
export function trafficCharts(history: ServiceHistory): HistoryChartSpec[] {
  const x = times(history);
  const g = history.gateway ?? ({} as Partial<ServiceHistory['gateway']>);
  const col = (values: unknown) => column(values, x.length);
  const charts = [
    chart(x, { key: 'rate', group: 'traffic', title: 'Request rate', unit: 'req/s' },
      [{ label: 'requests', values: col(g.requests_per_second) }]),
    // A panel per latency: TPOT (tens of ms) and TTFT sit at zero on an axis that e2e
    // (seconds) spans.
    chart(x, { key: 'ttft', group: 'traffic', title: 'Time to first token', unit: 'ms' }, [
      { label: 'TTFT p50', values: scaled(col(g.ttft_p50_seconds), 1000) },
      { label: 'TTFT p90', values: scaled(col(g.ttft_p90_seconds), 1000) },
    ]),
    chart(x, { key: 'tpot', group: 'traffic', title: 'Time per output token', unit: 'ms' },
      [{ label: 'TPOT p50', values: scaled(col(g.tpot_p50_seconds), 1000) }]),
    chart(x, { key: 'e2e', group: 'traffic', title: 'End-to-end latency', unit: 'ms' },
      [{ label: 'E2E p90', values: scaled(col(g.e2e_p90_seconds), 1000) }]),
    chart(x, { key: 'errors', group: 'traffic', title: 'Error ratio', unit: '%' },
      [{ label: 'errors', values: scaled(col(g.error_ratio), 100) }]),
    chart(x, { key: 'in_flight', group: 'traffic', title: 'In flight', unit: 'requests', integers: true },
      [{ label: 'in flight', values: col(g.in_flight) }]),
  ];
  return charts.some((c) => c.data.series.some((s) => hasValue(s.values))) ? charts : [];
}

// What the panel shows: the charts, or why there are none (title and what to do).
export interface HistoryCharts {
  kind: 'charts';
  from: number;
  to: number;
  step: number;
  metrics: HistoryChartSpec[];
  replicas: HistoryChartSpec;
  traffic: HistoryChartSpec[];
  firstRecorded: number;
}

export interface HistoryMessage {
  kind: 'empty' | 'unavailable' | 'error';
  title: string;
  hint: string;
}

export type HistoryView = HistoryCharts | HistoryMessage;

// The first time anything was recorded (a replica count or a metric), or null.
export function firstRecorded(history: ServiceHistory): number | null {
  const x = times(history);
  const columns = [history.desired, history.ready, history.current,
    ...(Array.isArray(history.metrics) ? history.metrics.map((m) => m.value) : [])];
  let first: number | null = null;
  for (const c of columns) {
    const values = column(c, x.length);
    const i = values.findIndex((v) => v !== null);
    const t = x[i];
    if (i >= 0 && t !== undefined && (first === null || t < first)) first = t;
  }
  return first;
}

export function historyView(answer: ServiceHistory): HistoryView {
  const history = compactHistory(answer);
  const x = times(history);
  const first = firstRecorded(history);
  if (x.length === 0 || first === null) {
    return { kind: 'empty', title: 'No history in this window yet.', hint: 'The daemon records the service at ' +
      'every control-loop tick, so points appear within seconds of its start; a longer window may hold older ones.' };
  }
  const replicas = replicaChart(history);
  const from = finiteOrNull(answer.from) ?? x[0] ?? 0;
  const to = finiteOrNull(answer.to) ?? x[x.length - 1] ?? from;
  // The time between points as drawn: the daemon's tick after compaction, else its step.
  const gaps = x.slice(1).map((t, i) => t - (x[i] ?? t));
  const step = gaps.length > 0 ? median(gaps) : finiteOrNull(answer.step) ?? 0;
  return { kind: 'charts', from, to, step, metrics: metricCharts(history),
    replicas, traffic: trafficCharts(history), firstRecorded: first };
}

// "6 s", "1 min", "1 min 30 s": the step of the points, for the panel's header.
export function formatStep(seconds: number): string {
  if (seconds < 60) return `${Number(seconds.toPrecision(3))} s`;
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds - minutes * 60);
  return rest === 0 ? `${minutes} min` : `${minutes} min ${rest} s`;
}

// Windows up to this long are asked for at 1 s steps, so that every tick the daemon keeps
// (it keeps each one for 10 minutes) is a point of its own, whatever its loop interval: the
// daemon's own choice of step falls back to minute means when the window reaches back
// before its oldest kept tick (a daemon younger than the window, or a window a second
// longer than what it keeps). compactHistory() then drops the empty seconds.
export const TICK_WINDOW_SECONDS = 600;

// The window to ask for, ending now: whole seconds; a step for short windows, else the
// daemon's (at most ~600 points).
export function historyRange(windowSeconds: number, now: number): HistoryQuery {
  const to = Math.floor(now);
  return { from: to - windowSeconds, to, ...(windowSeconds <= TICK_WINDOW_SECONDS ? { step: 1 } : {}) };
}

// Every column of an answer, each aligned to t.
function allColumns(history: ServiceHistory, length: number): HistoryColumn[] {
  const metrics = Array.isArray(history.metrics) ? history.metrics : [];
  const gateway = history.gateway ?? {};
  return [history.desired, history.ready, history.current, ...metrics.flatMap((m) => [m.value, m.target]),
    ...Object.values(gateway)].map((c) => column(c, length));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

// The entries that hold a reading, in order, with one all-null entry wherever the daemon
// recorded nothing for more than three of its usual intervals (it was down, or paused), so
// that lines join tick to tick but break where the record does.
export function compactHistory(history: ServiceHistory): ServiceHistory {
  const t = times(history);
  const columns = allColumns(history, t.length);
  const kept = t.flatMap((_x, i) => (columns.some((c) => c[i] !== null) ? [i] : []));
  if (kept.length === t.length) return history;
  const gaps = kept.slice(1).map((k, j) => (t[k] ?? 0) - (t[kept[j] ?? 0] ?? 0));
  const usual = median(gaps);
  const rows: (number | null)[] = []; // an index into t, or null for a break
  kept.forEach((k, j) => {
    if (j > 0 && usual > 0 && (gaps[j - 1] ?? 0) > 3 * usual) rows.push(null);
    rows.push(k);
  });
  const pick = (c: unknown) => {
    const values = column(c, t.length);
    return rows.map((k) => (k === null ? null : values[k] ?? null));
  };
  const newT = rows.map((k, j) => (k !== null ? t[k] ?? 0 : (t[rows[j - 1] ?? 0] ?? 0) + usual));
  const gateway = Object.fromEntries(Object.entries(history.gateway ?? {}).map(([key, c]) => [key, pick(c)]));
  return {
    ...history,
    t: newT,
    desired: pick(history.desired),
    ready: pick(history.ready),
    current: pick(history.current),
    metrics: (Array.isArray(history.metrics) ? history.metrics : [])
      .map((m) => ({ ...m, value: pick(m.value), target: pick(m.target) })),
    gateway: gateway as unknown as ServiceHistory['gateway'],
  };
}

// Why a history request failed, for the panel: a daemon that predates the endpoint answers
// 404 (the page has just loaded the service itself, so the name is known).
export function historyError(service: string, error: unknown): HistoryMessage {
  if (error instanceof ApiError && error.status === 404) {
    return { kind: 'unavailable', title: 'This daemon keeps no service history.',
      hint: `GET /v1/services/${service}/history answered 404: this \`gpuscale serve\` predates the history ` +
        'endpoint. Upgrade it to chart metrics against targets, replicas and traffic over time; the figures on ' +
        'this page are live meanwhile.' };
  }
  return { kind: 'error', title: 'Could not load the service history.', hint: describeError(error) };
}

// The window ending now, fetched and turned into what the panel shows.
export async function loadHistory(api: Pick<ApiClient, 'serviceHistory'>, service: string, windowSeconds: number,
  now: number): Promise<HistoryView> {
  try {
    return historyView(await api.serviceHistory(service, historyRange(windowSeconds, now)));
  } catch (error) {
    return historyError(service, error);
  }
}
