import { describe, expect, it } from 'vitest';
import { ApiClient, historyQueryString, type FetchLike } from '../../src/api/client';
import type { ServiceHistory } from '../../src/api/types';
import {
  carryTarget,
  column,
  compactHistory,
  firstRecorded,
  formatStep,
  historyRange,
  historyView,
  loadHistory,
  metricCharts,
  replicaChart,
  trafficCharts,
  type HistoryCharts,
} from '../../src/views/history_model';

const T0 = 1764140000;
const noGateway = () => ({ requests_per_second: [null, null, null], error_ratio: [null, null, null],
  ttft_p50_seconds: [null, null, null], ttft_p90_seconds: [null, null, null], tpot_p50_seconds: [null, null, null],
  e2e_p90_seconds: [null, null, null], in_flight: [null, null, null] });

// Three 6 s steps, as documented: a metric against its target, replica counts, traffic.
function history(overrides: Partial<ServiceHistory> = {}): ServiceHistory {
  return {
    service: 'chat', from: T0, to: T0 + 18, step: 6,
    t: [T0, T0 + 6, T0 + 12],
    desired: [2, 2, 3], ready: [1, 2, null], current: [2, 2, 3],
    metrics: [{ name: 'vllm:num_requests_waiting', value: [3.5, null, 7], target: [5, 5, 5] }],
    gateway: { requests_per_second: [1.5, 2, null], error_ratio: [0, 0.25, null],
      ttft_p50_seconds: [0.03, 0.05, null], ttft_p90_seconds: [0.08, 0.1, null], tpot_p50_seconds: [0.005, null, null],
      e2e_p90_seconds: [0.5, 0.6, null], in_flight: [3, 4, null] },
    ...overrides,
  };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

function client(answer: (url: string) => Response): { api: ApiClient; urls: string[] } {
  const urls: string[] = [];
  const fetchImpl: FetchLike = async (url) => {
    urls.push(url);
    return answer(url);
  };
  const tokens = { token: () => null, requestToken: async () => null };
  return { api: new ApiClient(tokens, fetchImpl), urls };
}

describe('service history charts', () => {
  it('charts each policy metric against its target, the target dashed', () => {
    const [chart, ...rest] = metricCharts(history());
    expect(rest).toEqual([]);
    expect(chart?.title).toBe('vllm:num_requests_waiting against its target');
    expect(chart?.unit).toBe('requests');
    expect(chart?.data).toEqual({ x: [T0, T0 + 6, T0 + 12], series: [
      { label: 'value', values: [3.5, null, 7] },
      { label: 'target', values: [5, 5, 5], dash: true },
    ] });
  });

  it('keeps drawing the policy\'s target through a manual override, whose ticks record no target', () => {
    // As the daemon answers while PUT /replicas holds the count: the ticks (replica counts)
    // go on, the metric and its target are null from the override on.
    const t = [T0, T0 + 6, T0 + 12, T0 + 18, T0 + 24];
    const overridden = history({ to: T0 + 30, t, desired: [2, 2, 4, 4, 4], ready: [2, 2, 2, 3, 4],
      current: [2, 2, 4, 4, 4], metrics: [{ name: 'vllm:num_requests_waiting', value: [3.5, 6, null, null, null],
        target: [5, 5, null, null, null] }], gateway: { ...noGateway(), in_flight: [null, null, null, null, null] } });
    const [chart] = (historyView(overridden) as HistoryCharts).metrics;
    expect(chart?.data.series).toEqual([
      { label: 'value', values: [3.5, 6, null, null, null] }, // no reading under the override: a gap
      { label: 'target', values: [5, 5, 5, 5, 5], dash: true },
    ]);
    expect(metricCharts(overridden)[0]?.data.series[1]?.values).toEqual([5, 5, 5, 5, 5]);
  });

  it('carries a target only across recorded ticks, never before the first or over a break', () => {
    const all = [true, true, true, true, true];
    expect(carryTarget([null, 5, null, 7, null], all)).toEqual([null, 5, 5, 7, 7]);
    expect(carryTarget([5, null, null, null, null], [true, true, false, true, true])).toEqual([5, 5, null, null, null]);
    expect(carryTarget([null, null], [true, true])).toEqual([null, null]);
    // a break in the record (compactHistory's all-null entry) ends the carried line
    const n = 40; // 1 s steps; a tick every 5 s, none from 15 to 30 s; the target stops at 10 s
    const times = Array.from({ length: n }, (_, i) => T0 + i);
    const ticked = (i: number) => i % 5 === 0 && (i < 15 || i > 30);
    const col = (v: (i: number) => number | null) => times.map((_x, i) => (ticked(i) ? v(i) : null));
    const view = historyView(history({ from: T0, to: T0 + n, step: 1, t: times, desired: col(() => 2),
      ready: col(() => 2), current: col(() => 2), metrics: [{ name: 'm', value: col(() => null),
        target: col((i) => (i <= 5 ? 3 : null)) }], gateway: noGateway() })) as HistoryCharts;
    expect(view.metrics[0]?.data.x).toEqual([0, 5, 10, 15, 35].map((s) => T0 + s));
    expect(view.metrics[0]?.data.series[1]?.values).toEqual([3, 3, 3, null, null]);
  });

  it('charts desired, ready and current replicas as counts', () => {
    const chart = replicaChart(history());
    expect(chart.integers).toBe(true);
    expect(chart.data.series.map((s) => [s.label, s.values])).toEqual([
      ['desired', [2, 2, 3]], ['ready', [1, 2, null]], ['current', [2, 2, 3]]]);
  });

  it('charts traffic in req/s, ms and %, and none when the window had no gateway traffic', () => {
    const charts = trafficCharts(history());
    expect(charts.map((c) => [c.key, c.title, c.unit])).toEqual([
      ['rate', 'Request rate', 'req/s'], ['ttft', 'Time to first token', 'ms'], ['tpot', 'Time per output token', 'ms'],
      ['e2e', 'End-to-end latency', 'ms'], ['errors', 'Error ratio', '%'], ['in_flight', 'In flight', 'requests']]);
    const ttft = charts[1]?.data.series ?? [];
    expect(ttft.map((s) => s.label)).toEqual(['TTFT p50', 'TTFT p90']);
    expect(ttft[0]?.values[0]).toBeCloseTo(30);
    expect(charts[4]?.data.series[0]?.values).toEqual([0, 25, null]);
    expect(trafficCharts(history({ gateway: noGateway() }))).toEqual([]);
  });

  it('puts TTFT, TPOT and e2e latency in panels of their own, so a 2 s e2e does not flatten the others', () => {
    const charts = trafficCharts(history({ gateway: { ...noGateway(), ttft_p50_seconds: [0.04, 0.05, 0.06],
      ttft_p90_seconds: [0.09, 0.1, 0.12], tpot_p50_seconds: [0.008, 0.009, 0.01], e2e_p90_seconds: [1.8, 2, 2.1] } }));
    const lines = (key: string) => charts.find((c) => c.key === key)?.data.series.map((s) => s.label);
    expect(lines('ttft')).toEqual(['TTFT p50', 'TTFT p90']);
    expect(lines('tpot')).toEqual(['TPOT p50']);
    expect(lines('e2e')).toEqual(['E2E p90']);
    // no chart holds lines more than 10x apart (each gets an axis of its own scale)
    for (const c of charts) {
      const peaks = c.data.series.map((s) => Math.max(...s.values.map((v) => v ?? 0)));
      expect(Math.max(...peaks), c.key).toBeLessThanOrEqual(10 * Math.min(...peaks));
    }
  });

  it('aligns short or malformed columns to t with gaps', () => {
    expect(column([1, 'x', Number.NaN], 4)).toEqual([1, null, null, null]);
    expect(column(undefined, 2)).toEqual([null, null]);
    const chart = replicaChart(history({ desired: [1] }));
    expect(chart.data.series[0]?.values).toEqual([1, null, null]);
  });

  it('spans the answer\'s window and knows the first recorded point', () => {
    const view = historyView(history({ ready: [null, 2, 2], desired: [null, 2, 3], current: [null, null, 3],
      metrics: [] })) as HistoryCharts;
    expect(view.kind).toBe('charts');
    expect([view.from, view.to, view.step]).toEqual([T0, T0 + 18, 6]);
    expect(view.firstRecorded).toBe(T0 + 6);
    expect(view.metrics).toEqual([]);
    expect(firstRecorded(history())).toBe(T0);
  });

  it('says so when nothing was recorded, instead of drawing empty axes', () => {
    const empty = historyView(history({ t: [], desired: [], ready: [], current: [], metrics: [] }));
    expect(empty).toMatchObject({ kind: 'empty', title: 'No history in this window yet.' });
    const allNull = historyView(history({ desired: [null, null, null], ready: [null, null, null],
      current: [null, null, null], metrics: [], gateway: noGateway() }));
    expect(allNull.kind).toBe('empty');
  });

  it('keeps only the seconds that hold a tick, and breaks the lines where the daemon recorded nothing', () => {
    const n = 40; // 1 s steps; a tick every 5 s, none from 15 to 30 s
    const t = Array.from({ length: n }, (_, i) => T0 + i);
    const ticked = (i: number) => i % 5 === 0 && (i < 15 || i > 30);
    const col = (v: number) => t.map((_x, i) => (ticked(i) ? v : null));
    const sparse = history({ from: T0, to: T0 + n, step: 1, t, desired: col(2), ready: col(1), current: col(2),
      metrics: [{ name: 'm', value: col(4), target: col(5) }],
      gateway: { ...noGateway(), requests_per_second: col(9) } });
    const compact = compactHistory(sparse);
    expect(compact.t).toEqual([0, 5, 10, 15, 35].map((s) => T0 + s));
    expect(compact.desired).toEqual([2, 2, 2, null, 2]);
    expect(compact.metrics[0]?.target).toEqual([5, 5, 5, null, 5]);
    expect(compact.gateway.requests_per_second).toEqual([9, 9, 9, null, 9]);
    expect(compact.gateway.in_flight).toEqual([null, null, null, null, null]);
    const view = historyView(sparse) as HistoryCharts;
    expect(view.step).toBe(5);
    expect([view.from, view.to]).toEqual([T0, T0 + n]); // the window, not the points
    const full = history();
    expect(compactHistory(full)).toBe(full);
  });

  it('names the step of the points', () => {
    expect(formatStep(6)).toBe('6 s');
    expect(formatStep(1.5)).toBe('1.5 s');
    expect(formatStep(60)).toBe('1 min');
    expect(formatStep(90)).toBe('1 min 30 s');
  });

  it('asks for whole seconds ending now', () => {
    expect(historyRange(3600, T0 + 0.7)).toEqual({ from: T0 - 3600, to: T0 });
    expect(historyRange(600, T0)).toEqual({ from: T0 - 600, to: T0, step: 1 }); // every tick kept
    expect(historyQueryString({ from: 10.9, to: 20 })).toBe('?from=10&to=20');
    expect(historyQueryString({})).toBe('');
  });
});

describe('loading the service history (mocked fetch)', () => {
  it('GETs the window and shows charts', async () => {
    const { api, urls } = client(() => json(200, history()));
    const view = await loadHistory(api, 'chat', 3600, T0 + 3600);
    expect(urls).toEqual([`/v1/services/chat/history?from=${T0}&to=${T0 + 3600}`]);
    await loadHistory(api, 'chat', 600, T0 + 600);
    expect(urls[1]).toBe(`/v1/services/chat/history?from=${T0}&to=${T0 + 600}&step=1`);
    expect(view.kind).toBe('charts');
  });

  it('explains a daemon without the endpoint (404)', async () => {
    const { api } = client(() => json(404, { error: { code: 'not_found', message: 'no route', field: null } }));
    const view = await loadHistory(api, 'chat', 3600, T0);
    expect(view).toMatchObject({ kind: 'unavailable', title: 'This daemon keeps no service history.' });
    expect(view.kind !== 'charts' && view.hint).toContain('GET /v1/services/chat/history answered 404');
  });

  it('shows an empty window and other errors as messages', async () => {
    const empty = await loadHistory(client(() => json(200, history({ t: [], desired: [], ready: [], current: [],
      metrics: [] }))).api, 'chat', 600, T0);
    expect(empty.kind).toBe('empty');
    const failed = await loadHistory(client(() => json(400, { error: { code: 'invalid_argument',
      message: 'from must be before to', field: 'from' } })).api, 'chat', 600, T0);
    expect(failed).toMatchObject({ kind: 'error' });
    expect(failed.kind !== 'charts' && failed.hint).toContain('from must be before to');
  });

  it('encodes the service name in the path', async () => {
    const { api, urls } = client(() => json(200, history()));
    await api.serviceHistory('a b', { step: 60 });
    expect(urls).toEqual(['/v1/services/a%20b/history?step=60']);
  });
});
