// Tasks view: one row per task (id, name, model, status, experiments done / total, the best
// experiment's figure for the task's objective, created / finished times), newest first,
// linking to each task's page. Refreshed every 5 s and at once on any task_* or
// experiment_* event. A daemon without the tasks API (404) is said so, not hidden. Above
// the list, a "New task" form submits a definition and opens the new task's page.

import { describeError } from '../api/errors';
import type { Experiment, TaskSummary } from '../api/types';
import { MISSING, formatUnixTime } from '../format';
import { routeHash } from '../router';
import { setCodeText, withCode } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { emptyState, errorHint, errorState, loadingState } from '../ui/states';
import { NewTaskForm } from './new_task_form';
import { NO_TASKS_HINT, isTaskEvent, keyFigure, sortTasks, statusTone, taskProgress } from './tasks_model';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 5000;

export function statusBadge(status: string): HTMLElement {
  return h('span', { class: `status status-${statusTone(status)}`, dataset: { status } }, status);
}

function bestCell(task: TaskSummary, best: Experiment | undefined): HTMLElement {
  if (task.best_experiment_id === null) return h('td', { class: 'muted' }, MISSING);
  const figure = keyFigure(task.objective, best?.bench ?? null);
  return h('td', { class: 'num best-cell' },
    h('a', { href: routeHash({ view: 'experiment', id: task.best_experiment_id }) },
      `#${task.best_experiment_id}`),
    ` ${figure.text}`, h('span', { class: 'muted' }, best ? ` ${figure.label}` : ''));
}

function taskRow(task: TaskSummary, best: Experiment | undefined): HTMLElement {
  return h('tr', { dataset: { taskId: task.id, status: task.status } },
    h('td', { class: 'num' }, String(task.id)),
    h('td', null, h('a', { href: routeHash({ view: 'task', id: task.id }) }, task.name)),
    h('td', { class: 'model' }, task.model),
    h('td', null, statusBadge(task.status), task.message ? h('div', { class: 'muted small' }, task.message) : null),
    h('td', { class: 'num progress' }, taskProgress(task)),
    bestCell(task, best),
    h('td', { class: 'muted' }, task.objective.description || task.objective.kind),
    h('td', { class: 'num' }, formatUnixTime(task.created_at)),
    h('td', { class: 'num' }, formatUnixTime(task.finished_at)));
}

function tasksTable(tasks: readonly TaskSummary[], bests: ReadonlyMap<number, Experiment>): HTMLElement {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'tasks-table' },
    h('thead', null, h('tr', null,
      ['ID', 'Name', 'Model', 'Status', 'Experiments', 'Best', 'Objective', 'Created', 'Finished']
        .map((t) => h('th', null, t)))),
    h('tbody', null, sortTasks(tasks).map((t) => taskRow(t,
      t.best_experiment_id === null ? undefined : bests.get(t.best_experiment_id))))));
}

function unavailable(): HTMLElement {
  return h('div', { class: 'state state-empty', id: 'tasks-unavailable' },
    h('strong', null, 'The tasks API is not available in this daemon.'),
    h('p', null, withCode('GET /v1/tasks answered 404: this `gpuscale serve` predates tasks. Upgrade it to run ' +
      'parameter sweeps and see their experiments here.')));
}

export function tasksView(root: HTMLElement, ctx: ViewContext): Dispose {
  const body = h('div', null, loadingState('tasks'));
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const form = new NewTaskForm(ctx.api, (task) => {
    window.location.hash = routeHash({ view: 'task', id: task.id });
  });
  mount(root, h('div', { class: 'view-header' }, h('h1', null, 'Tasks and experiments')), form.element, banner, body);
  const bests = new Map<number, Experiment>(); // best experiments' results, by id (final once best)
  let loaded = false;
  const poller = new Poller(async () => {
    try {
      const tasks = await ctx.api.tasks();
      form.element.hidden = tasks === null; // nowhere to submit to
      if (tasks === null) {
        mount(body, unavailable());
        return;
      }
      const missing = tasks.map((t) => t.best_experiment_id).filter((id): id is number => id !== null && !bests.has(id));
      await Promise.all(missing.map(async (id) => {
        try {
          bests.set(id, await ctx.api.experiment(id));
        } catch {
          // the row links to the experiment anyway; its figure comes with a later poll
        }
      }));
      loaded = true;
      banner.hidden = true;
      mount(body, tasks.length === 0
        ? emptyState('No tasks yet.', NO_TASKS_HINT)
        : tasksTable(tasks, bests));
    } catch (error) {
      if (!loaded) mount(body, errorState('tasks', error));
      banner.hidden = !loaded;
      setCodeText(banner, `Live update failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, POLL_MS);
  const unsubscribe = ctx.events.subscribe((event) => {
    if (isTaskEvent(event)) poller.refresh();
  });
  return () => {
    poller.stop();
    unsubscribe();
  };
}
