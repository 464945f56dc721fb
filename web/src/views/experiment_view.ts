// Experiment page: parameters and timings, the GPUs it leased, its GPU monitoring stats
// (mean and min – max per GPU), charts of those GPUs over the experiment's window from
// /v1/gpus/history (while the daemon's history still holds it; else a note), the benchmark
// summary, log path and failure message. The experiment refreshes every 4 s and on each of
// its events; the history every 10 s. While the experiment's task is queued or running, a
// Cancel button (the task page's control) cancels the whole task; the task is loaded with
// the experiment until it has ended, to know whether to offer it.

import { ApiError, describeError } from '../api/errors';
import type { BenchReport, Experiment, GpuHistory } from '../api/types';
import { LineChart } from '../charts/line_chart';
import { GPU_METRICS, GPU_METRIC_ORDER, countPoints, gpuHistorySeries } from '../charts/series';
import { MISSING, formatDuration, formatLatency, formatMib, formatPercent, formatRate, formatScore,
  formatUnixTime } from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { errorHint, errorState, loadingState } from '../ui/states';
import {
  benchFigures,
  concernsExperiment,
  errorCount,
  formatParameters,
  historyCoverage,
  historyWindow,
  isEnded,
  monitoringRows,
  monitoringSamples,
  windowPoints,
} from './tasks_model';
import { CancelControl } from './cancel_control';
import { statusBadge } from './tasks_view';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 4000;
const HISTORY_MS = 10000;

function item(label: string, value: string | HTMLElement | null): HTMLElement[] {
  return [h('dt', null, label), h('dd', null, value ?? MISSING)];
}

function since(from: number | null, to: number | null): string {
  return from === null || to === null ? MISSING : formatDuration(to - from);
}

function overview(e: Experiment, now: number): HTMLElement {
  return h('dl', { class: 'definition', id: 'experiment-overview' },
    item('Parameters', formatParameters(e.parameters)),
    item('GPUs needed', `${e.gpus_required} × ${formatMib(e.memory_mb_per_gpu)} per GPU`),
    item('Queued', formatUnixTime(e.queued_at)),
    item('Started', formatUnixTime(e.started_at)),
    item('Finished', formatUnixTime(e.finished_at)),
    item('Waited for GPUs', since(e.queued_at, e.started_at ?? (isEnded(e.status) ? null : now))),
    item('Ran', since(e.started_at, e.finished_at ?? (e.started_at === null ? null : now))),
    item('Server', e.server_argv.length ? h('code', null, e.server_argv.join(' ')) : null),
    item('Port / pid', e.port > 0 ? `${e.port} / ${e.pid > 0 ? e.pid : MISSING}` : null),
    item('Log', e.log_path ? h('code', { id: 'experiment-log' }, e.log_path) : null));
}

function gpuInfoTable(e: Experiment): HTMLElement {
  const info = e.gpu_info;
  if (!info) return h('p', { class: 'muted' }, isEnded(e.status) ? 'No GPUs were leased.' : 'Waiting for GPUs…');
  return h('div', null, h('p', { class: 'muted' }, `${info.count} × ${info.model}, allocated by ${info.allocation_method}`),
    h('div', { class: 'table-wrap' }, h('table', { id: 'gpu-info-table' },
      h('thead', null, h('tr', null, ['GPU', 'Name', 'Node', 'Memory free / total', 'Utilization', 'Score', 'UUID']
        .map((t) => h('th', null, t)))),
      h('tbody', null, info.gpus.map((g) => h('tr', null,
        h('td', { class: 'num' }, String(g.index)), h('td', null, g.name), h('td', null, g.node),
        h('td', { class: 'num' }, `${formatMib(g.memory_free_mb)} / ${formatMib(g.memory_total_mb)}`),
        h('td', { class: 'num' }, formatPercent(g.utilization_percent)),
        h('td', { class: 'num' }, formatScore(g.score)), h('td', { class: 'uuid' }, g.uuid)))))));
}

function statCell(c: { mean: string; range: string }): HTMLElement {
  return h('td', { class: 'num' }, c.mean, h('div', { class: 'muted small' }, c.range));
}

function monitoringTable(e: Experiment): HTMLElement {
  const m = e.gpu_monitoring;
  if (!m) {
    const why = e.bench ? 'the monitor took no sample during the benchmark.' : 'the benchmark did not run.';
    return h('p', { class: 'muted', id: 'monitoring-none' }, isEnded(e.status)
      ? `No GPU monitoring data: ${why}` : 'Recorded while the benchmark runs.');
  }
  const samples = monitoringSamples(m);
  return h('div', null,
    h('p', { class: 'muted' }, `Over ${formatDuration(m.monitoring_duration_seconds)} of benchmark` +
      `${samples === null ? '' : `, ${samples} ${samples === 1 ? 'sample' : 'samples'}`}: mean, and min – max below it.`),
    h('div', { class: 'table-wrap' }, h('table', { id: 'monitoring-table' },
      h('thead', null, h('tr', null, ['GPU', 'Name', 'Utilization %', 'Memory used', 'Memory %',
        'Temperature °C', 'Power W'].map((t) => h('th', null, t)))),
      h('tbody', null, monitoringRows(m).map((r) => h('tr', { dataset: { gpu: r.index } },
        h('td', { class: 'num' }, r.index), h('td', null, r.name), statCell(r.utilization), statCell(r.memory),
        statCell(r.memoryPercent), statCell(r.temperature), statCell(r.power)))))));
}

function latencyRow(label: string, s: BenchReport['ttft_seconds'] | undefined): HTMLElement {
  return h('tr', null, h('td', null, label), ...[s?.mean, s?.p50, s?.p90, s?.p99, s?.max]
    .map((v) => h('td', { class: 'num' }, formatLatency(v))), h('td', { class: 'num' }, String(s?.count ?? MISSING)));
}

function benchSummary(e: Experiment): HTMLElement {
  const b = e.bench;
  if (!b) return h('p', { class: 'muted' }, isEnded(e.status) ? 'The benchmark did not run.' : 'Not finished yet.');
  const f = benchFigures(b);
  const byKind = Object.entries(b.errors_by_kind ?? b.errors ?? {}).filter(([, n]) => n > 0);
  return h('div', { id: 'bench-summary' },
    h('dl', { class: 'definition' },
      item('Requests', `${formatRate(b.request_throughput_per_second, 'req/s')} · ${b.requests_completed} completed`),
      item('Output tokens', f.tokenRate),
      item('Input tokens', formatRate(b.input_token_throughput_per_second, 'tok/s')),
      item('Errors', errorCount(b) === 0 ? '0' : `${f.errors}: ${byKind.map(([k, n]) => `${k} ${n}`).join(', ')}`),
      item('Elapsed', formatDuration(b.elapsed_seconds))),
    h('div', { class: 'table-wrap' }, h('table', { id: 'latency-table' },
      h('thead', null, h('tr', null, ['Latency', 'Mean', 'p50', 'p90', 'p99', 'Max', 'Requests'].map((t) => h('th', null, t)))),
      h('tbody', null, latencyRow('Time to first token', b.ttft_seconds),
        latencyRow('Time per output token', b.time_per_output_token_seconds),
        latencyRow('Inter-token latency', b.inter_token_latency_seconds),
        latencyRow('End to end', b.e2e_latency_seconds)))));
}

// The GPU charts over the experiment's window; a note when the history no longer has it.
class WindowCharts {
  readonly note = h('p', { class: 'note', id: 'history-note', hidden: true });
  readonly charts = GPU_METRIC_ORDER.map((m) => new LineChart({
    title: GPU_METRICS[m].title, unit: GPU_METRICS[m].unit, percent: GPU_METRICS[m].percent }));
  readonly element = h('div', null, h('h3', null, 'Over the experiment\'s window'), this.note,
    h('div', { class: 'chart-grid', id: 'experiment-charts' }, this.charts.map((c) => c.element)));

  async update(ctx: ViewContext, e: Experiment | null): Promise<void> {
    const window = e ? historyWindow(e, ctx.now()) : null;
    if (e && isEnded(e.status) && e.bench === null) {
      return this.say(`No GPU charts: the experiment ${e.status === 'succeeded' ? 'ended' : e.status} before its ` +
        'benchmark ran, so there is no load to show.');
    }
    if (!e || !window) return this.say('Charts appear once the experiment has leased its GPUs.');
    if (window.tooOld) return this.say('The daemon keeps 24 h of GPU history; this experiment is older.');
    const history: GpuHistory = await ctx.api.gpuHistory(window.requestSeconds);
    const coverage = historyCoverage(history.points, window);
    if (coverage === 'none') {
      return this.say('The daemon\'s GPU history no longer covers this experiment\'s window ' +
        `(${formatUnixTime(window.start)} – ${formatUnixTime(window.end)}); the stats table holds what was recorded.`);
    }
    const points = windowPoints(history.points, window, e.gpu_info?.indices ?? []);
    const series = GPU_METRIC_ORDER.map((m) => gpuHistorySeries(points, m));
    if (series.every((s) => countPoints(s) === 0)) {
      return this.say('The daemon recorded no GPU sample of this experiment\'s GPUs within its window ' +
        `(${formatUnixTime(window.start)} – ${formatUnixTime(window.end, false)}).`);
    }
    this.note.hidden = coverage === 'full';
    this.note.textContent = 'The history starts after this experiment did: the charts show the part still kept.';
    this.element.querySelector('.chart-grid')?.removeAttribute('hidden');
    // The experiment's window, at least 30 s wide (a short benchmark is a few samples).
    const range: [number, number] = [window.start, Math.max(window.end, window.start + 30)];
    series.forEach((data, i) => this.charts[i]?.setData(data, range));
  }

  destroy(): void {
    this.charts.forEach((c) => c.destroy());
  }

  private say(text: string): void {
    this.note.hidden = false;
    this.note.textContent = text;
    this.element.querySelector('.chart-grid')?.setAttribute('hidden', '');
  }
}

// The title row and the failure line, filled in from the experiment once it loads.
class ExperimentHeader {
  readonly back = h('a', { href: routeHash({ view: 'tasks' }), class: 'back' }, '← Tasks');
  readonly title: HTMLElement;
  readonly status = h('span');
  readonly failure = h('div', { class: 'state state-error', id: 'experiment-failure', role: 'alert', hidden: true });

  constructor(id: number) {
    this.title = h('h1', { tabindex: -1 }, `Experiment #${id}`);
  }

  show(e: Experiment): void {
    this.back.setAttribute('href', routeHash({ view: 'task', id: e.task_id }));
    this.back.textContent = `← Task ${e.task_id}`;
    this.title.textContent = `Experiment #${e.id} of task ${e.task_id}`;
    mount(this.status, statusBadge(e.status), e.is_best ? h('span', { class: 'badge best-badge' }, 'best') : null);
    this.failure.hidden = !(e.message && e.status !== 'succeeded');
    this.failure.textContent = e.status === 'failed' ? `Failed: ${e.message}` : e.message;
  }
}

// The four panels of the page body: mounted into it on a first load (again after an error
// replaced them), refreshed on every load.
class ExperimentPanels {
  readonly charts = new WindowCharts();
  private readonly sections = { overview: h('div'), gpus: h('div'), monitoring: h('div'), bench: h('div') };

  mountInto(body: HTMLElement): void {
    const s = this.sections;
    mount(body,
      h('section', { class: 'panel' }, h('h2', null, 'Parameters and timings'), s.overview),
      h('section', { class: 'panel' }, h('h2', null, 'GPUs'), s.gpus),
      h('section', { class: 'panel' }, h('h2', null, 'GPU monitoring'), s.monitoring, this.charts.element),
      h('section', { class: 'panel' }, h('h2', null, 'Benchmark'), s.bench));
  }

  show(e: Experiment, now: number): void {
    mount(this.sections.overview, overview(e, now));
    mount(this.sections.gpus, gpuInfoTable(e));
    mount(this.sections.monitoring, monitoringTable(e));
    mount(this.sections.bench, benchSummary(e));
  }
}

export function experimentView(root: HTMLElement, ctx: ViewContext, id: number): Dispose {
  const header = new ExperimentHeader(id);
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const body = h('div', null, loadingState(`experiment ${id}`));
  const showBanner = (text: string, error: unknown) => {
    banner.hidden = false;
    setCodeText(banner, `${text}: ${describeError(error)} ${errorHint(error)}`);
  };
  // After a cancel: hide the button at once, then poll (the experiment ends too; after a
  // 409 the task ended meanwhile and the page is behind).
  const cancel = new CancelControl(ctx, (task) => {
    if (task) cancel.update(task);
    poller.refresh();
  }, header.title);
  mount(root, h('div', { class: 'view-header' }, header.back, header.title, header.status, cancel.button),
    cancel.message, banner, header.failure, body);
  const panels = new ExperimentPanels();
  let current: Experiment | null = null;

  // The task's status, for the Cancel button. Its own catch: a failure here is no reason to
  // replace the experiment shown.
  const loadTask = async (taskId: number) => {
    try {
      cancel.update(await ctx.api.task(taskId));
    } catch (error) {
      showBanner(`Task ${taskId} status failed`, error);
    }
  };
  const poller = new Poller(async () => {
    try {
      const e = await ctx.api.experiment(id);
      const first = current === null;
      if (first) panels.mountInto(body);
      panels.show(e, ctx.now());
      header.show(e);
      current = e;
      banner.hidden = true;
      if (first) historyPoller.refresh();
      if (cancel.wantsTask()) await loadTask(e.task_id);
    } catch (error) {
      if (!current || (error instanceof ApiError && error.status === 404)) {
        mount(body, errorState(`experiment ${id}`, error));
        cancel.hide();
        current = null;
        return;
      }
      showBanner('Live update failed', error);
    }
  }, POLL_MS);
  const historyPoller = new Poller(async () => {
    try {
      await panels.charts.update(ctx, current);
    } catch (error) {
      showBanner('GPU history failed', error);
    }
  }, HISTORY_MS);
  const unsubscribe = ctx.events.subscribe((event) => {
    if (concernsExperiment(event, id)) poller.refresh();
  });
  return () => {
    poller.stop();
    historyPoller.stop();
    unsubscribe();
    panels.charts.destroy();
  };
}
