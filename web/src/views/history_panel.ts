// History panel of a service page: charts on one shared time axis, fed by the daemon's
// record of the service (GET /v1/services/{name}/history): each policy metric against its
// target (dashed), desired / ready / current replicas, and the gateway's traffic (request
// rate; TTFT, TPOT and e2e latency, a chart each; error ratio, in flight). Every chart spans the same window
// (10 min … 24 h, ending now) and one cursor moves over all of them. The service page
// calls load() every few seconds. A daemon without the endpoint (404), an empty window or
// a failed request shows a message, never empty axes.

import type { ApiClient } from '../api/client';
import { LineChart } from '../charts/line_chart';
import { formatUnixTime } from '../format';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { emptyState, loadingState } from '../ui/states';
import {
  DEFAULT_WINDOW_SECONDS,
  SERVICE_HISTORY_WINDOWS,
  formatStep,
  loadHistory,
  type HistoryChartSpec,
  type HistoryView,
} from './history_model';

const SYNC_KEY = 'service-history';
let windowSeconds = DEFAULT_WINDOW_SECONDS; // kept across visits to service pages

const HEIGHTS: Record<HistoryChartSpec['group'], number> = { metric: 150, replicas: 140, traffic: 120 };

export class HistoryPanel {
  readonly element: HTMLElement;
  private readonly meta = h('span', { class: 'muted', id: 'history-meta' });
  private readonly message = h('div', { id: 'history-message' }, loadingState('the service history'));
  private readonly groups = {
    metric: h('div', { class: 'chart-stack', id: 'history-metrics' }),
    replicas: h('div', { class: 'chart-stack', id: 'history-replicas' }),
    traffic: h('div', { class: 'chart-stack', id: 'history-traffic' }),
  };
  private readonly notes = {
    metric: h('p', { class: 'muted', id: 'history-metrics-note', hidden: true }),
    traffic: h('p', { class: 'muted', id: 'history-traffic-note', hidden: true }),
  };
  private readonly charts = new Map<string, LineChart>();
  private readonly body: HTMLElement;
  private loaded = false;
  private requests = 0; // only the newest answer is shown (a window change races the poll)
  private destroyed = false;

  constructor(
    private readonly api: ApiClient,
    private readonly service: string,
    private readonly now: () => number,
    private readonly policyFamily: () => string,
  ) {
    const select = h('select', { id: 'history-window', 'aria-label': 'History window' },
      SERVICE_HISTORY_WINDOWS.map((w) => h('option', { value: w.seconds, selected: w.seconds === windowSeconds }, w.label)));
    select.addEventListener('change', () => {
      windowSeconds = Number(select.value);
      void this.load();
    });
    this.body = h('div', { id: 'history-charts', class: 'chart-stack', hidden: true },
      this.notes.metric, this.groups.metric, this.groups.replicas, this.notes.traffic, this.groups.traffic);
    this.element = h('section', { class: 'panel', id: 'history-panel', dataset: { state: 'loading' } },
      h('div', { class: 'section-header' }, h('h2', null, 'Over time'), this.meta, h('label', null, 'Window ', select)),
      this.message, this.body);
  }

  async load(): Promise<void> {
    const request = ++this.requests;
    const view = await loadHistory(this.api, this.service, windowSeconds, this.now());
    if (request === this.requests && !this.destroyed) this.show(view);
  }

  destroy(): void {
    this.destroyed = true;
    this.charts.forEach((c) => c.destroy());
    this.charts.clear();
  }

  private show(view: HistoryView): void {
    if (view.kind === 'error' && this.loaded) { // keep the charts; say the last refresh failed
      setCodeText(this.meta, `update failed: ${view.hint}`);
      return;
    }
    this.element.dataset.state = view.kind;
    this.loaded = view.kind === 'charts';
    this.message.hidden = this.loaded;
    this.body.hidden = !this.loaded;
    if (view.kind !== 'charts') {
      mount(this.message, emptyState(view.title, view.hint));
      this.meta.textContent = '';
      return;
    }
    this.element.dataset.firstRecorded = String(view.firstRecorded);
    this.meta.textContent = `${formatUnixTime(view.from)} – ${formatUnixTime(view.to, false)}` +
      (view.step > 0 ? ` · one point per ${formatStep(view.step)}` : '');
    this.notes.metric.hidden = view.metrics.length > 0;
    this.notes.metric.textContent = `The ${this.policyFamily()} policy reads no metric with a target; ` +
      'the decision log explains each change.';
    this.notes.traffic.hidden = view.traffic.length > 0;
    setCodeText(this.notes.traffic, 'No request went through the gateway in this window. Send OpenAI API ' +
      'requests to the gateway address `gpuscale serve` printed to see rate, latency and errors here.');
    const specs = [...view.metrics, view.replicas, ...view.traffic];
    this.place(specs);
    const range: [number, number] = [view.from, view.to];
    for (const spec of specs) this.charts.get(spec.key)?.setData(spec.data, range);
  }

  // One chart object per key, mounted in its group in order; charts no longer listed go.
  private place(specs: readonly HistoryChartSpec[]): void {
    const keys = new Set(specs.map((s) => s.key));
    for (const [key, chart] of this.charts) {
      if (!keys.has(key)) {
        chart.destroy();
        this.charts.delete(key);
      }
    }
    for (const group of ['metric', 'replicas', 'traffic'] as const) {
      const elements = specs.filter((s) => s.group === group).map((s) => this.chartFor(s).element);
      const parent = this.groups[group];
      const same = elements.length === parent.children.length && elements.every((e, i) => parent.children[i] === e);
      if (!same) mount(parent, elements); // moving a chart would reset its size and cursor
    }
  }

  private chartFor(spec: HistoryChartSpec): LineChart {
    let chart = this.charts.get(spec.key);
    if (!chart) {
      chart = new LineChart({ title: spec.title, unit: spec.unit, integers: spec.integers, percent: spec.percent,
        height: HEIGHTS[spec.group], syncKey: SYNC_KEY,
        colors: spec.group === 'metric' ? ['#2563eb', '#dc2626'] : undefined,
        emptyText: 'Nothing recorded in this window.' });
      chart.element.dataset.key = spec.key;
      this.charts.set(spec.key, chart);
    }
    return chart;
  }
}
