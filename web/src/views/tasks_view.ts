// Tasks and experiments view. The tasks API (GET /v1/tasks, issue 6) is not part of the
// daemon yet: when it answers 404 the view says so instead of showing invented data; when
// it exists, the view lists what it returns until a dedicated view replaces this one.

import type { JsonValue } from '../api/types';
import { h, mount } from '../ui/dom';
import { emptyState, errorState, loadingState } from '../ui/states';
import type { Dispose, ViewContext } from './view';

function cell(value: JsonValue | undefined): string {
  if (value === undefined || value === null) return '—';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function tasksTable(tasks: readonly JsonValue[]): HTMLElement {
  const rows = tasks.filter((t): t is { [k: string]: JsonValue } => typeof t === 'object' && t !== null && !Array.isArray(t));
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))].slice(0, 8);
  return h('div', { class: 'table-wrap' }, h('table', { id: 'tasks-table' },
    h('thead', null, h('tr', null, columns.map((c) => h('th', null, c)))),
    h('tbody', null, rows.map((r) => h('tr', null, columns.map((c) => h('td', null, cell(r[c]))))))));
}

export function tasksView(root: HTMLElement, ctx: ViewContext): Dispose {
  const body = h('div', null, loadingState('tasks'));
  mount(root, h('div', { class: 'view-header' }, h('h1', null, 'Tasks and experiments')), body);
  void ctx.api.tasks().then((answer) => {
    if (answer === null) {
      mount(body, h('div', { class: 'state state-empty', id: 'tasks-unavailable' },
        h('strong', null, 'The tasks API is not available in this daemon yet.'),
        h('p', null, 'GET /v1/tasks answered 404. Tasks, experiments and their GPU monitoring statistics will ' +
          'appear here once `gpuscale serve` supports tasks (issue 6).')));
      return;
    }
    const list = Array.isArray(answer) ? answer
      : typeof answer === 'object' && answer !== null && Array.isArray(answer.tasks) ? answer.tasks : [];
    mount(body, list.length === 0 ? emptyState('No tasks yet.', 'Submit a task to the daemon to see it here.')
      : tasksTable(list));
  }, (error) => mount(body, errorState('tasks', error)));
  return () => undefined;
}
