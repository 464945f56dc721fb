// Pure helpers of the Simulations view: the JSON `gpuscale simulate -o json` writes (one run
// object for --config, an array of them for --compare; docs/simulation.md "Outputs") ->
// checked runs, or a message naming what is wrong (where the text stops being JSON, or the
// path of the field, such as `[1].timeline.time_s`); then the comparison table with the
// references (static fleet, reactive reference, oracle bound), each run against the static
// frontier (dominated by which fleet, GPU-hours over the static fleet's), the verdict, the
// points of the attainment vs GPU-hours scatter and the replicas-over-time lines. No DOM, no
// fetch.
//
// The file is a CLI output, not an API answer, so its shape is checked here field by field
// rather than trusted: a user may drop any file on the page.

import type { Service } from '../api/types';
import { MISSING, formatLatency } from '../format';
import { findJsonSyntaxError, lineColumn } from '../json_syntax';

export interface SimPercentiles {
  p50: number | null; // null: no request finished (nlohmann writes NaN as null)
  p90: number | null;
  p99: number | null;
}

// The run's ticks in at most 500 buckets of `bucket_seconds`; one entry per bucket holding a
// tick, `time_s` its start (seconds from the trace's start), the others bucket means.
export interface SimTimeline {
  bucket_seconds: number;
  time_s: number[];
  arrival_rate: (number | null)[]; // req/s
  replicas: (number | null)[]; // holding GPUs
  ready_replicas: (number | null)[];
}

export interface OraclePlan {
  bucket_seconds: number;
  replicas: number[]; // ready replicas the cheapest clairvoyant plan holds per bucket
}

export interface ReactivePlan {
  lag_seconds: number | null;
  hold_seconds: number | null;
  spare_replicas: number | null;
  gpu_hours: number;
  attainment: number;
  meets_target: boolean;
}

export interface StaticFleet {
  replicas: number;
  gpu_hours: number;
  attainment: number;
  meets_target: boolean;
}

// The run against the static frontier (docs/simulation.md, "The static frontier"): the
// cheapest static fleet at most as costly and at least as good (one of them strictly), and
// the run's GPU-hours over the smallest static fleet meeting the target.
export interface RunFrontier {
  dominated_by: StaticFleet | null; // null: no static fleet beats the run
  cost_vs_static: number | null; // null: no static fleet within the cluster meets the target
}

export interface SimTrace {
  format: string | null;
  requests: number | null;
  span_seconds: number | null;
  rate_per_second: number | null;
}

export interface SimRun {
  name: string;
  policy: string;
  slo_attainment: number; // 0..1
  slo_target: number; // 0..1
  gpu_hours: number;
  oracle_gpu_hours: number | null; // null: run with --no-oracle
  gpu_hours_over_oracle: number | null;
  ttft_seconds: SimPercentiles;
  tpot_seconds: SimPercentiles;
  peak_replicas: number;
  scale_ups: number | null;
  scale_downs: number | null;
  oracle_plan: OraclePlan | null;
  reactive_plan: ReactivePlan | null;
  static_fleet: StaticFleet | null;
  frontier: RunFrontier | null; // null: run with --no-static-fleet, or an older gpuscale
  trace: SimTrace | null;
  timeline: SimTimeline | null; // null: written by a gpuscale before timelines
}

export interface SimComparison {
  runs: SimRun[];
  single: boolean; // one run object (simulate --config) rather than a --compare array
}

export type ParseResult = { ok: true; comparison: SimComparison } | { ok: false; message: string };

// A comparison of six runs with 500-bucket timelines is about 250 kB; anything this large
// is another file (a trace, most likely), and is not read into the page.
export const MAX_FILE_BYTES = 20 * 1024 * 1024;

export function fileTooLarge(bytes: number): string | null {
  if (bytes <= MAX_FILE_BYTES) return null;
  return `it is ${(bytes / 1024 / 1024).toFixed(1)} MiB; a simulation's JSON is well under 1 MiB ` +
    '(is it the trace?).';
}

// ---- checking the shape, with the path of what is wrong

class Invalid {
  constructor(readonly path: string, readonly reason: string) {}
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 24 ? `${value.slice(0, 24)}…` : value)})`;
  return `${typeof value === 'boolean' ? 'a boolean' : 'a number'} (${String(value)})`;
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

type Json = Record<string, unknown>;

function object(value: unknown, path: string, what = 'an object'): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Invalid(path, `is ${describeValue(value)}, expected ${what}`);
  }
  return value as Json;
}

// A required field; `expected` says what it should be when it is missing.
function field(parent: Json, path: string, key: string, expected: string): unknown {
  const value = parent[key];
  if (value === undefined) throw new Invalid(join(path, key), `is missing (expected ${expected})`);
  return value;
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function number(parent: Json, path: string, key: string, expected = 'a number'): number {
  const value = field(parent, path, key, expected);
  if (!isNumber(value)) throw new Invalid(join(path, key), `is ${describeValue(value)}, expected ${expected}`);
  return value;
}

function numberOrNull(parent: Json, path: string, key: string, expected = 'a number'): number | null {
  const value = field(parent, path, key, `${expected} or null`);
  if (value === null) return null;
  if (!isNumber(value)) throw new Invalid(join(path, key), `is ${describeValue(value)}, expected ${expected} or null`);
  return value;
}

// An optional number: absent or null -> null.
function optionalNumber(parent: Json, path: string, key: string): number | null {
  return parent[key] === undefined ? null : numberOrNull(parent, path, key);
}

function string(parent: Json, path: string, key: string): string {
  const value = field(parent, path, key, 'a string');
  if (typeof value !== 'string') throw new Invalid(join(path, key), `is ${describeValue(value)}, expected a string`);
  return value;
}

function boolean(parent: Json, path: string, key: string): boolean {
  const value = field(parent, path, key, 'true or false');
  if (typeof value !== 'boolean') throw new Invalid(join(path, key), `is ${describeValue(value)}, expected true or false`);
  return value;
}

// A required object, checked by `read`.
function required<T>(parent: Json, path: string, key: string, expected: string, read: (o: Json, p: string) => T): T {
  const p = join(path, key);
  return read(object(field(parent, path, key, expected), p, expected), p);
}

// An optional object: absent or null -> null, else checked by `read`.
function optional<T>(parent: Json, path: string, key: string, read: (o: Json, p: string) => T): T | null {
  const value = parent[key];
  if (value === undefined || value === null) return null;
  const p = join(path, key);
  return read(object(value, p), p);
}

function numbers(parent: Json, path: string, key: string, nulls: false): number[];
function numbers(parent: Json, path: string, key: string, nulls: true): (number | null)[];
function numbers(parent: Json, path: string, key: string, nulls: boolean): (number | null)[] {
  const what = nulls ? 'an array of numbers (null for none)' : 'an array of numbers';
  const value = field(parent, path, key, what);
  const p = join(path, key);
  if (!Array.isArray(value)) throw new Invalid(p, `is ${describeValue(value)}, expected ${what}`);
  return value.map((v, i) => {
    if (isNumber(v) || (nulls && v === null)) return v;
    throw new Invalid(join(p, i), `is ${describeValue(v)}, expected a number`);
  });
}

function percentiles(o: Json, path: string): SimPercentiles {
  return { p50: numberOrNull(o, path, 'p50', 'seconds'), p90: numberOrNull(o, path, 'p90', 'seconds'),
    p99: numberOrNull(o, path, 'p99', 'seconds') };
}

function timeline(o: Json, path: string): SimTimeline {
  const t: SimTimeline = {
    bucket_seconds: number(o, path, 'bucket_seconds', 'seconds per bucket'),
    time_s: numbers(o, path, 'time_s', false),
    arrival_rate: numbers(o, path, 'arrival_rate', true),
    replicas: numbers(o, path, 'replicas', true),
    ready_replicas: numbers(o, path, 'ready_replicas', true),
  };
  t.time_s.forEach((s, i) => {
    const before = t.time_s[i - 1];
    if (before !== undefined && s < before) {
      throw new Invalid(join(join(path, 'time_s'), i), `is ${s}, before the entry ahead of it (${before}): times must ascend`);
    }
  });
  for (const key of ['arrival_rate', 'replicas', 'ready_replicas'] as const) {
    if (t[key].length !== t.time_s.length) {
      throw new Invalid(join(path, key), `has ${t[key].length} entries, but time_s has ${t.time_s.length}`);
    }
  }
  return t;
}

function staticFleet(p: Json, at: string): StaticFleet {
  return {
    replicas: number(p, at, 'replicas'),
    gpu_hours: number(p, at, 'gpu_hours'),
    attainment: number(p, at, 'attainment', 'a share 0..1'),
    meets_target: boolean(p, at, 'meets_target'),
  };
}

function run(o: Json, path: string): SimRun {
  return {
    name: string(o, path, 'name'),
    policy: string(o, path, 'policy'),
    slo_attainment: number(o, path, 'slo_attainment', 'a share 0..1'),
    slo_target: number(o, path, 'slo_target', 'a share 0..1'),
    gpu_hours: number(o, path, 'gpu_hours'),
    oracle_gpu_hours: optionalNumber(o, path, 'oracle_gpu_hours'),
    gpu_hours_over_oracle: optionalNumber(o, path, 'gpu_hours_over_oracle'),
    ttft_seconds: required(o, path, 'ttft_seconds', '{p50, p90, p99}', percentiles),
    tpot_seconds: required(o, path, 'tpot_seconds', '{p50, p90, p99}', percentiles),
    peak_replicas: number(o, path, 'peak_replicas'),
    scale_ups: optionalNumber(o, path, 'scale_ups'),
    scale_downs: optionalNumber(o, path, 'scale_downs'),
    oracle_plan: optional(o, path, 'oracle_plan', (p, at) => ({
      bucket_seconds: number(p, at, 'bucket_seconds', 'seconds per bucket'),
      replicas: numbers(p, at, 'replicas', false),
    })),
    reactive_plan: optional(o, path, 'reactive_plan', (p, at) => ({
      lag_seconds: optionalNumber(p, at, 'lag_seconds'),
      hold_seconds: optionalNumber(p, at, 'hold_seconds'),
      spare_replicas: optionalNumber(p, at, 'spare_replicas'),
      gpu_hours: number(p, at, 'gpu_hours'),
      attainment: number(p, at, 'attainment', 'a share 0..1'),
      meets_target: boolean(p, at, 'meets_target'),
    })),
    static_fleet: optional(o, path, 'static_fleet', staticFleet),
    frontier: o.dominated_by === undefined ? null : {
      dominated_by: optional(o, path, 'dominated_by', staticFleet),
      cost_vs_static: optionalNumber(o, path, 'cost_vs_static'),
    },
    // Shown in the header only: tolerated in any shape.
    trace: typeof o.trace === 'object' && o.trace !== null && !Array.isArray(o.trace) ? {
      format: typeof (o.trace as Json).format === 'string' ? (o.trace as Json).format as string : null,
      requests: isNumber((o.trace as Json).requests) ? (o.trace as Json).requests as number : null,
      span_seconds: isNumber((o.trace as Json).span_seconds) ? (o.trace as Json).span_seconds as number : null,
      rate_per_second: isNumber((o.trace as Json).rate_per_second) ? (o.trace as Json).rate_per_second as number : null,
    } : null,
    timeline: optional(o, path, 'timeline', timeline),
  };
}

const HOW = 'Save the output of `gpuscale simulate --compare a.yaml,b.yaml --trace FILE -o json` ' +
  '(or `--config FILE … -o json` for one run).';

// The file's text -> the runs it holds, or what is wrong with it (one sentence, then how to
// make a right one).
export function parseSimulation(text: string): ParseResult {
  const syntax = findJsonSyntaxError(text);
  if (syntax) {
    const { line, column } = lineColumn(text, syntax.position);
    const table = /^\s*[[{]/.test(text) ? '' : ' `gpuscale simulate` prints a table unless given `-o json`.';
    return { ok: false, message: `Not JSON: line ${line}, column ${column} (character ${syntax.position + 1}): ` +
      `${syntax.reason}.${table} ${HOW}` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) { // only nesting deeper than the scanner checks
    return { ok: false, message: `Not JSON: ${error instanceof Error ? error.message : String(error)}. ${HOW}` };
  }
  try {
    if (Array.isArray(value)) {
      if (value.length === 0) return { ok: false, message: `The file is an empty array: it holds no runs. ${HOW}` };
      const runs = value.map((v, i) => run(object(v, `[${i}]`, 'a run object'), `[${i}]`));
      return { ok: true, comparison: { runs, single: false } };
    }
    if (typeof value !== 'object' || value === null) {
      return { ok: false, message: `The file holds ${describeValue(value)}, not a run object or an array of them. ${HOW}` };
    }
    return { ok: true, comparison: { runs: [run(value as Json, '')], single: true } };
  } catch (error) {
    if (!(error instanceof Invalid)) throw error;
    return { ok: false, message: `Not a simulation result: ${error.path} ${error.reason}. ${HOW}` };
  }
}

// ---- what the view shows

export type RowKind = 'run' | 'static_fleet' | 'reactive' | 'oracle';

export interface SimRow {
  kind: RowKind;
  key: string; // unique within the table
  name: string;
  policy: string;
  attainment: number | null; // 0..1; null for the oracle (its plan spends the violation budget)
  target: number | null;
  met: boolean | null;
  gpuHours: number;
  overOracle: number | null;
  ttftP99: number | null;
  tpotP99: number | null;
  peak: number | null;
  ups: number | null;
  downs: number | null;
  vsStatic: string | null; // frontierText; null for references and runs without a frontier
  run: number | null; // index of the run (its colour in the charts)
}

// The references of the runs, each once: one compare computes them once for all its runs,
// so they are the same in every run object. Should they differ (runs merged by hand), each
// distinct one is a row naming the runs it belongs to.
function distinct<T>(runs: readonly SimRun[], pick: (r: SimRun) => T | null): { value: T; runs: string[] }[] {
  const found = new Map<string, { value: T; runs: string[] }>();
  for (const r of runs) {
    const value = pick(r);
    if (value === null) continue;
    const key = JSON.stringify(value);
    const entry = found.get(key);
    if (entry) entry.runs.push(r.name);
    else found.set(key, { value, runs: [r.name] });
  }
  return [...found.values()];
}

function forRuns(label: string, runs: readonly string[], all: number, many: boolean): string {
  return many && runs.length < all ? `${label} · ${runs.join(', ')}` : label;
}

function ratio(value: number, oracle: number | null): number | null {
  return oracle !== null && oracle > 0 ? value / oracle : null;
}

// GPU-hours over the oracle's. gpuscale writes 0 for it when the bound is 0 GPU-hours (a
// trace with nothing to serve); no factor is shown then, rather than "0.00×".
function overOracle(r: SimRun): number | null {
  if (r.oracle_gpu_hours !== null && r.oracle_gpu_hours <= 0) return null;
  return r.gpu_hours_over_oracle ?? ratio(r.gpu_hours, r.oracle_gpu_hours);
}

export function simRows(c: SimComparison): SimRow[] {
  const empty = { ttftP99: null, tpotP99: null, peak: null, ups: null, downs: null, vsStatic: null, run: null };
  const rows: SimRow[] = c.runs.map((r, i) => ({
    kind: 'run', key: `run:${i}`, name: r.name, policy: r.policy, attainment: r.slo_attainment, target: r.slo_target,
    met: r.slo_attainment >= r.slo_target, gpuHours: r.gpu_hours,
    overOracle: overOracle(r),
    ttftP99: r.ttft_seconds.p99, tpotP99: r.tpot_seconds.p99, peak: r.peak_replicas, ups: r.scale_ups,
    downs: r.scale_downs, vsStatic: frontierText(r), run: i,
  }));
  const n = c.runs.length;
  const target = (names: readonly string[]) => c.runs.find((r) => r.name === names[0])?.slo_target ?? null;
  const oracleOf = (names: readonly string[]) => c.runs.find((r) => r.name === names[0])?.oracle_gpu_hours ?? null;
  const reactive = distinct(c.runs, (r) => r.reactive_plan);
  reactive.forEach(({ value: p, runs }, i) => rows.push({ ...empty, kind: 'reactive', key: `reactive:${i}`,
    name: forRuns(reactiveLabel(p), runs, n, reactive.length > 1), policy: 'reference', attainment: p.attainment,
    target: target(runs), met: p.meets_target, gpuHours: p.gpu_hours, overOracle: ratio(p.gpu_hours, oracleOf(runs)) }));
  const fleets = distinct(c.runs, (r) => r.static_fleet);
  fleets.forEach(({ value: f, runs }, i) => rows.push({ ...empty, kind: 'static_fleet', key: `static_fleet:${i}`,
    name: forRuns(`static fleet (${f.replicas})`, runs, n, fleets.length > 1), policy: 'reference', attainment: f.attainment,
    target: target(runs), met: f.meets_target, gpuHours: f.gpu_hours, overOracle: ratio(f.gpu_hours, oracleOf(runs)),
    peak: f.replicas }));
  const oracles = distinct(c.runs, (r) => r.oracle_gpu_hours);
  oracles.forEach(({ value, runs }, i) => rows.push({ ...empty, kind: 'oracle', key: `oracle:${i}`,
    name: forRuns('oracle (lower bound)', runs, n, oracles.length > 1), policy: 'reference', attainment: null,
    target: target(runs), met: null, gpuHours: value, overOracle: value > 0 ? 1 : null }));
  return rows;
}

// "dominated by 7 replicas · 1.10× static" or "not dominated · 0.83× static": the CLI's
// dominated_by and cost_vs_static, one cell. Null when the file has no frontier.
export function frontierText(r: SimRun): string | null {
  if (!r.frontier) return null;
  const d = r.frontier.dominated_by;
  const head = d ? `dominated by ${d.replicas} replica${d.replicas === 1 ? '' : 's'}` : 'not dominated';
  const cost = r.frontier.cost_vs_static;
  return cost === null ? head : `${head} · ${cost.toFixed(2)}× static`;
}

// "reactive (+1 spare, hold 60 s)", as the CLI's "reactive (+1, hold 1)" in seconds.
function reactiveLabel(p: ReactivePlan): string {
  const parts = [p.spare_replicas !== null ? `+${p.spare_replicas} spare` : '',
    p.hold_seconds !== null ? `hold ${Math.round(p.hold_seconds)} s` : ''].filter((s) => s);
  return parts.length > 0 ? `reactive (${parts.join(', ')})` : 'reactive reference';
}

// ---- formatting (the CLI's figures, in the dashboard's units)

// A share as a percentage, rounded down so that a run just under its target never reads as
// on it (0.98996 is 98.99 %, not 99.00 %).
export function formatAttainment(share: number | null): string {
  if (share === null || !Number.isFinite(share)) return MISSING;
  return `${(Math.floor(share * 10000 + 1e-9) / 100).toFixed(2)} %`;
}

export function formatTarget(share: number | null): string {
  if (share === null || !Number.isFinite(share)) return MISSING;
  return `${Number((share * 100).toFixed(2))} %`;
}

export function formatGpuHours(hours: number | null): string {
  if (hours === null || !Number.isFinite(hours)) return MISSING;
  return hours >= 100 ? hours.toFixed(1) : hours.toFixed(3);
}

export function formatOverOracle(factor: number | null): string {
  return factor === null || !Number.isFinite(factor) ? MISSING : `${factor.toFixed(2)}×`;
}

export function formatP99(seconds: number | null): string {
  return formatLatency(seconds);
}

function percentDifference(value: number, reference: number): string {
  const diff = Math.round((100 * (value - reference)) / reference);
  return diff === 0 ? 'the same as' : `${Math.abs(diff)} % ${diff < 0 ? 'under' : 'over'}`;
}

// The CLI table's last line: the cheapest run meeting its SLO target and how it compares
// with the static fleet and the reactive reference; when none meets it, the best attainment.
export function verdict(c: SimComparison): string {
  const targets = new Set(c.runs.map((r) => r.slo_target));
  const target = targets.size === 1 ? `the SLO target ${formatTarget(c.runs[0]?.slo_target ?? null)}` : 'its SLO target';
  const meeting = c.runs.filter((r) => r.slo_attainment >= r.slo_target).sort((a, b) => a.gpu_hours - b.gpu_hours);
  const best = meeting[0];
  if (!best) {
    const top = [...c.runs].sort((a, b) => b.slo_attainment - a.slo_attainment)[0];
    return `No run meets ${target}; the best attainment is ${top?.name}'s, ${formatAttainment(top?.slo_attainment ?? null)}.`;
  }
  const parts: string[] = [];
  if (best.static_fleet && best.static_fleet.gpu_hours > 0) {
    parts.push(`${percentDifference(best.gpu_hours, best.static_fleet.gpu_hours)} the static fleet of ` +
      `${best.static_fleet.replicas} replica${best.static_fleet.replicas === 1 ? '' : 's'}`);
  }
  if (best.reactive_plan && best.reactive_plan.gpu_hours > 0) {
    parts.push(`${percentDifference(best.gpu_hours, best.reactive_plan.gpu_hours)} the reactive reference`);
  }
  const over = overOracle(best);
  const oracle = over !== null ? ` (${formatOverOracle(over)} the oracle bound)` : '';
  return `Cheapest run meeting ${target}: ${best.name}, ${formatGpuHours(best.gpu_hours)} GPU-hours${oracle}` +
    (parts.length > 0 ? `; ${parts.join(', ')}.` : '.');
}

// "azure_csv, 1,500 requests over 310 s (4.85 req/s)": the trace as replayed.
export function traceSummary(c: SimComparison): string {
  const t = c.runs[0]?.trace;
  if (!t) return '';
  const parts = [t.format ?? 'trace'];
  if (t.requests !== null) {
    parts.push(`${t.requests.toLocaleString('en-US')} requests` +
      (t.span_seconds !== null ? ` over ${Math.round(t.span_seconds).toLocaleString('en-US')} s` : '') +
      (t.rate_per_second !== null ? ` (${t.rate_per_second.toFixed(2)} req/s)` : ''));
  }
  return parts.join(', ');
}

// ---- charts

export interface ScatterPoint {
  label: string;
  kind: RowKind;
  run: number | null;
  gpuHours: number;
  attainment: number; // percent
}

export interface ScatterData {
  points: ScatterPoint[];
  targets: number[]; // percent; one horizontal line each
  oracles: number[]; // GPU-hours; one vertical line each
}

// A point per run and per reference that has an attainment (the oracle has none: it is
// the vertical line).
export function scatterData(c: SimComparison): ScatterData {
  const rows = simRows(c);
  const points = rows.filter((r) => r.attainment !== null).map((r) => ({
    label: r.name, kind: r.kind, run: r.run, gpuHours: r.gpuHours, attainment: (r.attainment ?? 0) * 100 }));
  return {
    points,
    targets: [...new Set(c.runs.map((r) => r.slo_target * 100))],
    oracles: rows.filter((r) => r.kind === 'oracle').map((r) => r.gpuHours),
  };
}

export interface TimelineLine {
  label: string;
  values: (number | null)[];
  run: number | null;
}

export interface TimelineData {
  x: number[]; // seconds from the trace's start: every run's bucket starts, merged
  runs: TimelineLine[]; // replicas holding GPUs, one line per run with a timeline
  arrival: (number | null)[] | null; // req/s of the trace (the first run's timeline)
  oracle: (number | null)[] | null; // the oracle plan's ready replicas, a step per bucket
  missing: string[]; // runs without a timeline (an older gpuscale)
}

// One x column for all lines: runs may tick at different intervals, so each line has
// values at its own times and null between (drawn across, not as gaps). The oracle plan
// gets a point at each bucket start and one at the end of its last bucket, so that its last
// step has a width.
export function timelineData(c: SimComparison): TimelineData | null {
  const withTimeline = c.runs.map((r, i) => ({ r, i })).filter(({ r }) => r.timeline !== null);
  if (withTimeline.length === 0) return null;
  const plan = c.runs.find((r) => r.oracle_plan !== null)?.oracle_plan ?? null;
  const planTimes = plan ? [...plan.replicas.map((_, i) => i * plan.bucket_seconds),
    plan.replicas.length * plan.bucket_seconds] : [];
  const x = [...new Set([...withTimeline.flatMap(({ r }) => r.timeline?.time_s ?? []), ...planTimes])].sort((a, b) => a - b);
  const at = new Map(x.map((t, i) => [t, i]));
  const column = (times: readonly number[], values: readonly (number | null)[]) => {
    const out: (number | null)[] = x.map(() => null);
    times.forEach((t, i) => {
      const slot = at.get(t);
      if (slot !== undefined) out[slot] = values[i] ?? null;
    });
    return out;
  };
  const first = withTimeline[0]?.r.timeline;
  return {
    x,
    runs: withTimeline.map(({ r, i }) => ({ label: r.name, run: i,
      values: column(r.timeline?.time_s ?? [], r.timeline?.replicas ?? []) })),
    arrival: first ? column(first.time_s, first.arrival_rate) : null,
    oracle: plan ? column(planTimes, [...plan.replicas, plan.replicas[plan.replicas.length - 1] ?? null]) : null,
    missing: c.runs.filter((r) => r.timeline === null).map((r) => r.name),
  };
}

// ---- the live services that use a run's policy (a user choosing a policy sees which
// services already run it)

export function servicesByPolicy(services: readonly Pick<Service, 'name' | 'policy_family'>[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const s of services) by.set(s.policy_family, [...(by.get(s.policy_family) ?? []), s.name]);
  return by;
}

// ---- the last loaded file, kept across reloads

export const STORAGE_KEY = 'gpuscale.simulation';

export interface StoredSimulation {
  name: string; // the file's name
  text: string; // as loaded: checked again on every load, as a dropped file is
  loadedAt: number; // Unix seconds
}

type StorageLike = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

export function readStored(storage: StorageLike): StoredSimulation | null {
  let value: unknown;
  try {
    value = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null');
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Json;
  return typeof v.name === 'string' && typeof v.text === 'string' && isNumber(v.loadedAt)
    ? { name: v.name, text: v.text, loadedAt: v.loadedAt } : null;
}

// Null when stored; else why not (the browser's quota), for a note: the page still shows it.
export function writeStored(storage: StorageLike, value: StoredSimulation): string | null {
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(value));
    return null;
  } catch (error) {
    storage.removeItem(STORAGE_KEY); // not an older file in its place
    return `It will not be kept across reloads: ${error instanceof Error ? error.message : String(error)}`;
  }
}

export function clearStored(storage: StorageLike): void {
  storage.removeItem(STORAGE_KEY);
}
