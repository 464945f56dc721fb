// The replica table of a service page: id, state, GPUs, port, uptime, restarts, in-flight
// requests and the last error (why a replica is pending, its last crash).

import type { Replica } from '../api/types';
import { formatDuration, formatGpuList } from '../format';
import { h } from '../ui/dom';
import { emptyState } from '../ui/states';

function replicaRow(r: Replica): HTMLElement {
  return h('tr', { dataset: { replica: r.id, state: r.state } },
    h('td', null, r.id, r.adopted ? h('span', { class: 'badge', title: 'adopted after a daemon restart' }, 'adopted') : null),
    h('td', null, h('span', { class: `state-badge state-${r.state}` }, r.state)),
    h('td', null, formatGpuList(r.gpus)),
    h('td', { class: 'num' }, r.port > 0 ? String(r.port) : '—'),
    h('td', null, r.pid > 0 ? formatDuration(r.uptime_seconds) : '—'),
    h('td', { class: 'num' }, String(r.restarts)),
    h('td', { class: 'num' }, `${r.outstanding_requests} req`),
    h('td', { class: 'reason' }, r.last_error || h('span', { class: 'muted' }, 'none')));
}

export function replicaTable(replicas: readonly Replica[]): HTMLElement {
  if (replicas.length === 0) {
    return emptyState('No replicas.', 'The policy wants none right now (min_replicas may be 0); ' +
      'set a manual count below to start one.');
  }
  return h('div', { class: 'table-wrap' }, h('table', { id: 'replicas-table' },
    h('thead', null, h('tr', null, ['Replica', 'State', 'GPUs', 'Port', 'Uptime', 'Restarts', 'In flight', 'Last error']
      .map((t) => h('th', null, t)))),
    h('tbody', null, replicas.map(replicaRow))));
}
