// Events view: the daemon's events, newest first — the last 200 stored ones matching the
// filter, then live ones from the shared event stream as they happen. Filters (service,
// kind) live in the URL (#/events?service=chat&kind=decision).

import { recentEvents } from '../api/client';
import type { StreamStatus } from '../api/event_stream';
import type { GpuscaleEvent } from '../api/types';
import { formatClock } from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { emptyState, errorState, loadingState } from '../ui/states';
import { eventSubject, kindOptions, matchesFilter, mergeEvents, type EventFilter } from './events_model';
import type { Dispose, ViewContext } from './view';

const HISTORY = 200;
const CAP = 500;

const STATUS_TEXT: Record<StreamStatus, string> = {
  connecting: 'connecting to the live stream…',
  open: 'live',
  reconnecting: 'stream lost, reconnecting…',
  unauthorized: 'waiting for an API token',
  stopped: 'live stream stopped (reload to restart)',
};

// A link to the service, or to the task and experiment the event names.
function subjectCell(e: GpuscaleEvent): HTMLElement {
  const subject = eventSubject(e);
  if (!subject) return h('td', { class: 'muted' }, '—');
  if (subject.kind === 'service') {
    return h('td', null, h('a', { href: routeHash({ view: 'service', name: subject.name }) }, subject.name));
  }
  const experiment = subject.experimentId;
  return h('td', { class: 'subject' },
    h('a', { href: routeHash({ view: 'task', id: subject.taskId }), class: 'task-link' }, `task ${subject.taskId}`),
    experiment === null ? null : [' · ', h('a', { href: routeHash({ view: 'experiment', id: experiment }),
      class: 'experiment-link' }, `#${experiment}`)]);
}

function eventRow(e: GpuscaleEvent): HTMLElement {
  return h('tr', { dataset: { eventId: e.id, kind: e.kind } },
    h('td', { class: 'num' }, h('time', { datetime: e.at }, formatClock(e.at, true))),
    subjectCell(e),
    h('td', null, h('span', { class: `kind kind-${e.kind}` }, e.kind)),
    h('td', null, e.replica || '—'),
    h('td', { class: 'reason' }, e.message));
}

function select(label: string, id: string, options: readonly string[], value: string, all: string): HTMLSelectElement {
  const values = options.includes(value) || !value ? options : [value, ...options];
  return h('select', { id, 'aria-label': label },
    h('option', { value: '' }, all), values.map((o) => h('option', { value: o, selected: o === value }, o)));
}

export function eventsView(root: HTMLElement, ctx: ViewContext, filter: EventFilter): Dispose {
  let events: GpuscaleEvent[] = [];
  const seenKinds = new Set<string>(filter.kind ? [filter.kind] : []);
  const liveStatus = h('span', { class: 'stream-status', id: 'events-stream-status' });
  const table = h('tbody', { id: 'events-body' });
  const body = h('div', null, loadingState('events'));
  const serviceSelect = select('Service', 'events-service', [], filter.service, 'all services');
  let knownKinds: string[] = [];
  const kindSelect = select('Kind', 'events-kind', kindOptions([], seenKinds), filter.kind, 'all kinds');
  const renderKinds = () => mount(kindSelect, h('option', { value: '' }, 'all kinds'),
    kindOptions(knownKinds, seenKinds).map((k) => h('option', { value: k, selected: k === filter.kind }, k)));
  const onFilter = () => {
    const route = { view: 'events' as const, service: serviceSelect.value, kind: kindSelect.value };
    window.location.hash = routeHash(route); // the router mounts the view again with the filter
  };
  serviceSelect.addEventListener('change', onFilter);
  kindSelect.addEventListener('change', onFilter);
  mount(root, h('div', { class: 'view-header' }, h('h1', null, 'Events'), liveStatus),
    h('div', { class: 'filters' }, h('label', null, 'Service ', serviceSelect), h('label', null, 'Kind ', kindSelect)),
    body);

  const render = () => {
    if (events.length === 0) {
      mount(body, emptyState('No events match.', filter.service || filter.kind
        ? 'Clear the filters, or wait: new events appear here as they happen.'
        : 'Events appear as the daemon starts replicas and makes decisions.'));
      return;
    }
    mount(table, events.map(eventRow));
    mount(body, h('div', { class: 'table-wrap' }, h('table', { id: 'events-table' },
      h('thead', null, h('tr', null, ['Time', 'Service / task', 'Kind', 'Replica', 'Message'].map((t) => h('th', null, t)))),
      table)));
  };
  const add = (incoming: GpuscaleEvent[]) => {
    incoming.forEach((e) => seenKinds.add(e.kind));
    events = mergeEvents(events, incoming.filter((e) => matchesFilter(e, filter)), CAP);
    render();
  };

  let loaded = false;
  const pending: GpuscaleEvent[] = []; // live events that arrive before the history
  const unsubscribe = ctx.events.subscribe((e) => (loaded ? add([e]) : pending.push(e)));
  const unwatch = ctx.events.watchStatus((status, detail) => {
    setCodeText(liveStatus, STATUS_TEXT[status] + (detail && status !== 'open' ? ` (${detail})` : ''));
    liveStatus.dataset.status = status;
  });
  void recentEvents(ctx.api, filter, HISTORY).then((history) => {
    loaded = true;
    add([...history, ...pending]);
    renderKinds();
  }, (error) => {
    loaded = true; // live events still show
    mount(body, errorState('events', error));
  });
  void ctx.api.eventKinds().then((kinds) => {
    knownKinds = kinds;
    renderKinds();
  }, () => undefined); // the filter keeps the kinds seen
  void ctx.api.services().then((services) => {
    mount(serviceSelect, h('option', { value: '' }, 'all services'),
      services.map((s) => h('option', { value: s.name, selected: s.name === filter.service }, s.name)));
  }, () => undefined);
  return () => {
    unsubscribe();
    unwatch();
  };
}
