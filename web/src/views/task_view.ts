// Task page: the task's definition (model, objective, parameter grid, server command,
// benchmark), its experiments (status, parameters, GPUs, a marker when GPU monitoring data
// exists, key benchmark figures; the best one highlighted) and a chart comparing the
// experiments' throughput and TTFT p90. Refreshed every 4 s and at once on each
// task_* / experiment_* event of this task. A queued or running task has a Cancel button
// (confirm, DELETE /v1/tasks/{id}); a failure shows the API's message beside it.

import { ApiError, describeError } from '../api/errors';
import type { Experiment, Task } from '../api/types';
import { ComparisonChart } from '../charts/comparison_chart';
import { MISSING, formatDuration, formatUnixTime } from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { errorHint, errorState, loadingState } from '../ui/states';
import {
  benchFigures,
  bestExperiment,
  comparisonData,
  concernsTask,
  formatParameters,
  gpuSummary,
  isBest,
  keyFigure,
  sortExperiments,
  taskProgress,
} from './tasks_model';
import { CancelControl } from './cancel_control';
import { statusBadge } from './tasks_view';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 4000;

function definitionItem(label: string, value: string | HTMLElement): HTMLElement[] {
  return [h('dt', null, label), h('dd', null, value)];
}

function benchText(task: Task): string {
  const b = task.bench;
  const load = b.mode === 'poisson' ? `Poisson ${b.rate_per_second} req/s (≤ ${b.concurrency} in flight)`
    : `closed loop, ${b.concurrency} clients`;
  return `${load}; ${b.input_tokens} input / ${b.output_tokens} output tokens; ${formatDuration(b.duration_seconds)}`;
}

function definitionList(task: Task): HTMLElement {
  const best = bestExperiment(task);
  const figure = keyFigure(task.objective, best?.bench ?? null);
  return h('dl', { class: 'definition' },
      definitionItem('Model', task.model),
      definitionItem('Objective', task.objective.description || task.objective.kind),
      definitionItem('Best', best ? h('a', { href: routeHash({ view: 'experiment', id: best.id }) },
        `#${best.id}: ${figure.text} ${figure.label}`) : 'none yet'),
      definitionItem('Progress', taskProgress(task)),
      definitionItem('Parameters', formatParameters(task.parameters)),
      definitionItem('Server', h('code', null, task.server_command.join(' '))),
      definitionItem('Benchmark', benchText(task)),
      definitionItem('GPU wait', `up to ${formatDuration(task.gpu_wait_timeout_seconds)}`),
      definitionItem('Parallel', task.max_parallel > 0 ? `at most ${task.max_parallel} at once` : 'as GPUs allow'),
      definitionItem('Priority', String(task.priority)),
      definitionItem('Created', formatUnixTime(task.created_at)),
      definitionItem('Finished', formatUnixTime(task.finished_at)),
      task.message ? definitionItem('Message', task.message) : []);
}

function duration(e: Experiment, now: number): string {
  if (e.started_at === null) return MISSING;
  return formatDuration((e.finished_at ?? now) - e.started_at);
}

function experimentRow(task: Task, e: Experiment, now: number): HTMLElement {
  const best = isBest(task, e);
  const f = benchFigures(e.bench);
  return h('tr', { class: best ? 'best' : undefined, dataset: { experimentId: e.id, status: e.status, best: String(best) } },
    h('td', { class: 'num' }, h('a', { href: routeHash({ view: 'experiment', id: e.id }) }, `#${e.id}`),
      best ? h('span', { class: 'badge best-badge' }, 'best') : null),
    h('td', null, statusBadge(e.status)),
    h('td', { class: 'params' }, formatParameters(e.parameters)),
    h('td', null, gpuSummary(e),
      e.gpu_monitoring ? h('span', { class: 'badge monitor-badge', title: 'GPU monitoring data recorded' }, 'monitored') : null),
    h('td', { class: 'num' }, f.requestRate),
    h('td', { class: 'num' }, f.tokenRate),
    h('td', { class: 'num' }, f.ttftP90),
    h('td', { class: 'num' }, f.tpotP90),
    h('td', { class: 'num' }, f.errors),
    h('td', { class: 'num' }, duration(e, now)),
    h('td', { class: 'reason muted' }, e.message || ''));
}

function experimentsTable(task: Task, now: number): HTMLElement {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'experiments-table' },
    h('thead', null, h('tr', null,
      ['Experiment', 'Status', 'Parameters', 'GPUs', 'Requests', 'Output', 'TTFT p90', 'TPOT p90', 'Errors', 'Ran', 'Message']
        .map((t) => h('th', null, t)))),
    h('tbody', null, sortExperiments(task.experiments).map((e) => experimentRow(task, e, now)))));
}

export function taskView(root: HTMLElement, ctx: ViewContext, id: number): Dispose {
  const title = h('h1', { tabindex: -1 }, `Task ${id}`);
  const status = h('span');
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const body = h('div', null, loadingState(`task ${id}`));
  // After a cancel: show the answer's state at once, then poll (also after a 409, when
  // the task ended meanwhile and the page is behind).
  const cancel = new CancelControl(ctx, (task) => {
    if (task) render(task);
    poller.refresh();
  }, title);
  mount(root, h('div', { class: 'view-header' },
    h('a', { href: routeHash({ view: 'tasks' }), class: 'back' }, '← Tasks'), title, status, cancel.button),
    cancel.message, banner, body);
  const chart = new ComparisonChart('Experiments: output throughput (tok/s) and TTFT p90 (ms)');
  const definition = h('div');
  const source = h('pre', { class: 'source' }); // built once: an opened <details> stays open
  const experiments = h('div');
  let loaded = false;

  const render = (task: Task) => {
    if (!loaded) {
      mount(body, h('section', { class: 'panel', id: 'task-definition' }, definition,
        h('details', null, h('summary', null, 'Task as submitted'), source)),
        h('section', { class: 'panel' }, h('h2', null, 'Experiments'), experiments),
        h('section', { class: 'panel', id: 'task-chart' }, chart.element));
      loaded = true;
    }
    title.textContent = `${task.name} (task ${task.id})`;
    mount(status, statusBadge(task.status));
    cancel.update(task);
    mount(definition, definitionList(task));
    source.textContent = task.source_text;
    mount(experiments, task.experiments.length === 0
      ? h('p', { class: 'muted' }, 'No experiments: the parameter grid is empty.') : experimentsTable(task, ctx.now()));
    chart.setData(comparisonData(task.experiments));
  };

  const poller = new Poller(async () => {
    try {
      render(await ctx.api.task(id));
      banner.hidden = true;
    } catch (error) {
      if (!loaded || (error instanceof ApiError && error.status === 404)) {
        mount(body, errorState(`task ${id}`, error));
        cancel.hide();
        loaded = false;
        return;
      }
      banner.hidden = false;
      setCodeText(banner, `Live update failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, POLL_MS);
  const unsubscribe = ctx.events.subscribe((event) => {
    if (concernsTask(event, id)) poller.refresh();
  });
  return () => {
    poller.stop();
    unsubscribe();
    chart.destroy();
  };
}
