import { describe, expect, it } from 'vitest';
import { formatElapsed } from '../../src/charts/elapsed_axis';
import {
  STORAGE_KEY,
  clearStored,
  fileTooLarge,
  formatAttainment,
  formatGpuHours,
  formatOverOracle,
  formatTarget,
  frontierText,
  parseSimulation,
  readStored,
  scatterData,
  servicesByPolicy,
  simRows,
  timelineData,
  traceSummary,
  verdict,
  writeStored,
  type SimComparison,
} from '../../src/views/simulations_model';
import { noOracle, simRunJson } from './sim_fixtures';

function parsed(value: unknown): SimComparison {
  const result = parseSimulation(JSON.stringify(value));
  if (!result.ok) throw new Error(result.message);
  return result.comparison;
}

function problem(text: string): string {
  const result = parseSimulation(text);
  if (result.ok) throw new Error(`accepted: ${text}`);
  return result.message;
}

// A --compare of three policies: slo cheapest meeting the target, keda missing it.
const compare = () => [
  simRunJson('slo', { slo_attainment: 0.9951, gpu_hours: 0.36, gpu_hours_over_oracle: 1.44 }),
  simRunJson('hpa', { slo_attainment: 1, gpu_hours: 0.9, gpu_hours_over_oracle: 3.6, scale_ups: 0 }),
  simRunJson('keda', { policy: 'target', slo_attainment: 0.98996, gpu_hours: 0.3, gpu_hours_over_oracle: 1.2,
    ttft_seconds: { p50: null, p90: null, p99: null } }),
];

describe('parsing simulate -o json', () => {
  it('reads a --compare array and a single --config run', () => {
    const c = parsed(compare());
    expect(c.single).toBe(false);
    expect(c.runs.map((r) => [r.name, r.policy, r.gpu_hours])).toEqual([['slo', 'slo', 0.36], ['hpa', 'target', 0.9],
      ['keda', 'target', 0.3]]);
    expect(c.runs[2]?.ttft_seconds.p99).toBeNull(); // no request finished: nlohmann writes NaN as null
    const one = parsed(simRunJson('slo'));
    expect(one.single).toBe(true);
    expect(one.runs[0]?.timeline?.time_s).toEqual([0, 15, 30]);
    expect(one.runs[0]?.oracle_plan).toEqual({ bucket_seconds: 60, replicas: [1, 3, 2] });
  });

  it('reads a --no-oracle run and one from before timelines', () => {
    const [run] = parsed([noOracle(simRunJson('slo', { timeline: undefined }))]).runs;
    expect(run?.oracle_gpu_hours).toBeNull();
    expect(run?.gpu_hours_over_oracle).toBeNull();
    expect(run?.oracle_plan).toBeNull();
    expect(run?.reactive_plan).toBeNull();
    expect(run?.static_fleet).not.toBeNull();
    expect(run?.timeline).toBeNull();
  });

  const broken = (index: number, change: (run: Record<string, unknown>) => void): string => {
    const runs = compare();
    const run = runs[index];
    if (run) change(run);
    return JSON.stringify(runs);
  };
  const timeline = (run: Record<string, unknown>) => run.timeline as Record<string, unknown>;

  // [what, text, words the message starts with or contains]
  it.each<[string, string, string]>([
    ['an empty file', '', 'Not JSON: line 1, column 1 (character 1): the text is empty'],
    ['the CLI\'s table', 'policy   attain  gpu_h\nslo      0.9951  0.360\n',
      'Not JSON: line 1, column 1 (character 1): expected a value'],
    ['the table (hint)', 'policy   attain\n', 'prints a table unless given `-o json`'],
    ['a trailing comma', '[{"name": "x",}]', 'Not JSON: line 1, column 15 (character 15): a trailing comma before \'}\''],
    ['a cut-off file', '[\n  {"name": "slo",\n   "policy": "sl', 'Not JSON: line 3, column 14 (character 34): a string is not closed (missing ")'],
    ['an empty array', '[]', 'The file is an empty array: it holds no runs.'],
    ['a string', '"compare.json"', 'The file holds a string ("compare.json"), not a run object or an array of them.'],
    ['an array of numbers', '[1, 2]', 'Not a simulation result: [0] is a number (1), expected a run object.'],
    ['another tool\'s JSON', '{"requests_completed": 10}', 'Not a simulation result: name is missing (expected a string).'],
    ['a missing timeline column', broken(1, (r) => delete timeline(r).time_s),
      'Not a simulation result: [1].timeline.time_s is missing (expected an array of numbers).'],
    ['a string for a number', broken(0, (r) => (r.gpu_hours = '0.36')),
      'Not a simulation result: [0].gpu_hours is a string ("0.36"), expected a number.'],
    ['a short column', broken(2, (r) => (timeline(r).replicas = [1, 2])),
      'Not a simulation result: [2].timeline.replicas has 2 entries, but time_s has 3.'],
    ['times out of order', broken(0, (r) => (timeline(r).time_s = [0, 30, 15])),
      'Not a simulation result: [0].timeline.time_s[2] is 15, before the entry ahead of it (30): times must ascend.'],
    ['a text in a column', broken(0, (r) => (timeline(r).arrival_rate = [0, 'x', 1])),
      'Not a simulation result: [0].timeline.arrival_rate[1] is a string ("x"), expected a number.'],
    ['a null time', broken(0, (r) => (timeline(r).time_s = [0, null, 30])),
      'Not a simulation result: [0].timeline.time_s[1] is null, expected a number.'],
    ['a timeline that is no object', broken(1, (r) => (r.timeline = [])),
      'Not a simulation result: [1].timeline is an array, expected an object.'],
    ['a reference without its verdict', broken(0, (r) => delete (r.static_fleet as Record<string, unknown>).meets_target),
      'Not a simulation result: [0].static_fleet.meets_target is missing (expected true or false).'],
    ['a null in the oracle plan', broken(0, (r) => ((r.oracle_plan as Record<string, unknown>).replicas = [null])),
      'Not a simulation result: [0].oracle_plan.replicas[0] is null, expected a number.'],
    ['percentiles that are null', broken(0, (r) => (r.tpot_seconds = null)),
      'Not a simulation result: [0].tpot_seconds is null, expected {p50, p90, p99}.'],
    ['a single run without its attainment', JSON.stringify({ ...simRunJson('slo'), slo_attainment: undefined }),
      'Not a simulation result: slo_attainment is missing (expected a share 0..1).'],
  ])('names what is wrong: %s', (_what, text, message) => {
    expect(problem(text)).toContain(message);
  });

  it('says how to make a right file', () => {
    expect(problem('[]')).toContain('gpuscale simulate --compare a.yaml,b.yaml --trace FILE -o json');
  });

  it.each([[1024, null], [20 * 1024 * 1024, null], [64 * 1024 * 1024, 'it is 64.0 MiB']])(
    'fileTooLarge(%d)', (bytes, text) => {
      const got = fileTooLarge(bytes);
      if (text === null) expect(got).toBeNull();
      else expect(got).toContain(text);
    });
});

describe('the comparison table', () => {
  it('has a row per run, then the references once each', () => {
    const rows = simRows(parsed(compare()));
    expect(rows.map((r) => [r.kind, r.name, r.met])).toEqual([
      ['run', 'slo', true], ['run', 'hpa', true], ['run', 'keda', false],
      ['reactive', 'reactive (+1 spare, hold 60 s)', true], ['static_fleet', 'static fleet (2)', true],
      ['oracle', 'oracle (lower bound)', null],
    ]);
    const byName = new Map(rows.map((r) => [r.name, r]));
    expect(byName.get('static fleet (2)')).toMatchObject({ gpuHours: 0.6, overOracle: 2.4, attainment: 0.993, peak: 2 });
    expect(byName.get('oracle (lower bound)')).toMatchObject({ gpuHours: 0.25, overOracle: 1, attainment: null });
    expect(byName.get('hpa')).toMatchObject({ overOracle: 3.6, ttftP99: 0.1305, peak: 2, ups: 0, downs: 0, run: 1 });
  });

  it('keeps references that differ apart, naming their runs', () => {
    const rows = simRows(parsed([simRunJson('a'), simRunJson('b', { static_fleet: { replicas: 3, gpu_hours: 0.9,
      attainment: 0.999, meets_target: true } })]));
    expect(rows.filter((r) => r.kind === 'static_fleet').map((r) => r.name)).toEqual(['static fleet (2) · a', 'static fleet (3) · b']);
  });

  it('shows no factor over an oracle of 0 GPU-hours (gpuscale writes 0 for it)', () => {
    const rows = simRows(parsed([simRunJson('idle', { oracle_gpu_hours: 0, gpu_hours_over_oracle: 0 })]));
    expect(rows.map((r) => [r.kind, r.overOracle])).toEqual([['run', null], ['reactive', null], ['static_fleet', null],
      ['oracle', null]]);
  });

  it('says per run which static fleet dominates it and its cost over the static fleet', () => {
    const fleet = (replicas: number, gpu_hours: number, attainment: number) =>
      ({ replicas, gpu_hours, attainment, meets_target: attainment >= 0.99 });
    const frontier = [fleet(1, 0.3, 0.9), fleet(2, 0.6, 0.993), fleet(3, 0.9, 1)];
    const c = parsed([
      simRunJson('slo', { static_frontier: frontier, dominated_by: null, cost_vs_static: 0.6 }),
      simRunJson('hpa', { static_frontier: frontier, dominated_by: fleet(3, 0.9, 1), cost_vs_static: 1.5 }),
      simRunJson('keda', { static_frontier: frontier, dominated_by: fleet(1, 0.3, 0.9), cost_vs_static: null }),
      simRunJson('old'), // before the frontier, or --no-static-fleet
    ]);
    expect(c.runs[1]?.frontier).toEqual({ dominated_by: fleet(3, 0.9, 1), cost_vs_static: 1.5 });
    expect(c.runs[3]?.frontier).toBeNull();
    expect(simRows(c).map((r) => [r.name, r.vsStatic])).toEqual([
      ['slo', 'not dominated · 0.60× static'], ['hpa', 'dominated by 3 replicas · 1.50× static'],
      ['keda', 'dominated by 1 replica'], ['old', null],
      ['reactive (+1 spare, hold 60 s)', null], ['static fleet (2)', null], ['oracle (lower bound)', null],
    ]);
    expect(frontierText(c.runs[0]!)).toBe('not dominated · 0.60× static');
    expect(problem(JSON.stringify([simRunJson('slo', { dominated_by: { replicas: 3 }, cost_vs_static: 1 })])))
      .toContain('[0].dominated_by.gpu_hours is missing');
  });

  it('has no oracle or reactive rows without the oracle', () => {
    const rows = simRows(parsed([noOracle(simRunJson('slo'))]));
    expect(rows.map((r) => r.kind)).toEqual(['run', 'static_fleet']);
    expect(rows[0]?.overOracle).toBeNull();
  });

  it.each<[number | null, string]>([
    [1, '100.00 %'], [0.9951, '99.51 %'], [0.98996, '98.99 %'], [0.99, '99.00 %'], [0.7876, '78.76 %'], [null, '—'],
  ])('formatAttainment(%j) = %j (rounded down)', (share, text) => expect(formatAttainment(share)).toBe(text));

  it.each<[string, string]>([
    [formatGpuHours(3.84376), '3.844'], [formatGpuHours(123.456), '123.5'], [formatOverOracle(1.2368), '1.24×'],
    [formatOverOracle(null), '—'], [formatTarget(0.99), '99 %'], [formatTarget(0.995), '99.5 %'],
  ])('formats %j as %j', (got, want) => expect(got).toBe(want));

  it.each<[string, unknown, string]>([
    ['the cheapest run meeting the target (not the cheaper one missing it)', compare(),
      'Cheapest run meeting the SLO target 99 %: slo, 0.360 GPU-hours (1.44× the oracle bound); 40 % under the static fleet ' +
      'of 2 replicas, 10 % under the reactive reference.'],
    ['the best attainment when none meets it', [simRunJson('a', { slo_attainment: 0.9 }), simRunJson('b', { slo_attainment: 0.95 })],
      'No run meets the SLO target 99 %; the best attainment is b\'s, 95.00 %.'],
    ['no references', [noOracle(simRunJson('slo', { static_fleet: null }))], 'Cheapest run meeting the SLO target 99 %: slo, 0.500 GPU-hours.'],
    ['different targets', [simRunJson('a'), simRunJson('b', { slo_target: 0.9, slo_attainment: 0.95, gpu_hours: 0.6 })],
      'Cheapest run meeting its SLO target: a,'],
  ])('gives a verdict: %s', (_what, runs, text) => {
    expect(verdict(parsed(runs))).toContain(text);
  });

  it('sums up the trace as replayed', () => {
    expect(traceSummary(parsed(compare()))).toBe('azure_csv, 1,500 requests over 310 s (4.85 req/s)');
    expect(traceSummary(parsed([simRunJson('a', { trace: 'odd' })]))).toBe('');
  });

  it('maps policies to the live services that run them', () => {
    const by = servicesByPolicy([{ name: 'demo', policy_family: 'target' }, { name: 'chat', policy_family: 'target' },
      { name: 'batch', policy_family: 'slo' }]);
    expect(Object.fromEntries(by)).toEqual({ target: ['demo', 'chat'], slo: ['batch'] });
  });
});

describe('the charts', () => {
  it('draws a point per run and per reference with an attainment, the target and the oracle as lines', () => {
    const data = scatterData(parsed(compare()));
    expect(data.points.map((p) => [p.label, p.gpuHours, p.attainment])).toEqual([
      ['slo', 0.36, 99.51], ['hpa', 0.9, 100], ['keda', 0.3, 98.996], ['reactive (+1 spare, hold 60 s)', 0.4, 99.5],
      ['static fleet (2)', 0.6, 99.3]]);
    expect(data.targets).toEqual([99]);
    expect(data.oracles).toEqual([0.25]);
    expect(scatterData(parsed([noOracle(simRunJson('slo'))])).oracles).toEqual([]);
  });

  it('puts every run\'s replicas, the arrival rate and the oracle plan on one x column', () => {
    const runs = [simRunJson('a'), simRunJson('b', { timeline: { bucket_seconds: 10, time_s: [0, 10, 20, 30],
      arrival_rate: [0, 4, 5, 5], replicas: [1, 1, 3, 3], ready_replicas: [1, 1, 1, 3] } })];
    const data = timelineData(parsed(runs));
    expect(data?.x).toEqual([0, 10, 15, 20, 30, 60, 120, 180]);
    expect(data?.runs).toEqual([
      { label: 'a', run: 0, values: [1, null, 2, null, 2, null, null, null] },
      { label: 'b', run: 1, values: [1, 1, null, 3, 3, null, null, null] },
    ]);
    expect(data?.arrival).toEqual([0, null, 4.5, null, 5, null, null, null]);
    // a step per 60 s bucket, and the last step's end
    expect(data?.oracle).toEqual([1, null, null, null, null, 3, 2, 2]);
    expect(data?.missing).toEqual([]);
  });

  it('draws what it has: no oracle plan, runs without a timeline', () => {
    const data = timelineData(parsed([noOracle(simRunJson('a')), noOracle(simRunJson('b', { timeline: null }))]));
    expect(data?.oracle).toBeNull();
    expect(data?.runs.map((r) => r.label)).toEqual(['a']);
    expect(data?.missing).toEqual(['b']);
    expect(timelineData(parsed([simRunJson('old', { timeline: null })]))).toBeNull();
  });

  it.each<[number, string]>([[0, '0 s'], [45, '45 s'], [60, '1 min'], [150, '2 min 30 s'], [3600, '1 h'], [5400, '1 h 30 min'],
    [86400, '24 h']])('labels %d s of elapsed time %j', (seconds, text) => expect(formatElapsed(seconds)).toBe(text));
});

describe('keeping the last file', () => {
  function memory(failWith: Error | null = null) {
    const items = new Map<string, string>();
    return {
      items,
      getItem: (k: string) => items.get(k) ?? null,
      setItem: (k: string, v: string) => {
        if (failWith) throw failWith;
        items.set(k, v);
      },
      removeItem: (k: string) => void items.delete(k),
    };
  }

  it('stores, reads back and clears', () => {
    const storage = memory();
    const file = { name: 'compare.json', text: '[]', loadedAt: 1764140000 };
    expect(writeStored(storage, file)).toBeNull();
    expect(readStored(storage)).toEqual(file);
    clearStored(storage);
    expect(readStored(storage)).toBeNull();
  });

  it.each([['not JSON', '{'], ['another shape', '{"name": 1}'], ['null', 'null']])('ignores a stored value that is %s', (_w, text) => {
    const storage = memory();
    storage.items.set(STORAGE_KEY, text);
    expect(readStored(storage)).toBeNull();
  });

  it('says when the browser will not keep it, and keeps no older file instead', () => {
    const storage = memory(new Error('The quota has been exceeded.'));
    storage.items.set(STORAGE_KEY, JSON.stringify({ name: 'old.json', text: '[]', loadedAt: 1 }));
    expect(writeStored(storage, { name: 'big.json', text: '[]', loadedAt: 2 })).toBe(
      'It will not be kept across reloads: The quota has been exceeded.');
    expect(readStored(storage)).toBeNull();
  });
});
