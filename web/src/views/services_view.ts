// Services view: one row per service (policy, replicas ready/desired and in other phases,
// bounds, manual override, last decision), refreshed every 3 s and whenever an event
// arrives, linking to each service's page.

import type { Service } from '../api/types';
import { describeError } from '../api/errors';
import { formatAgo, formatReplicaRange } from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { emptyState, errorHint, errorState, loadingState } from '../ui/states';
import { serviceWarnings } from './services_model';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 3000;

function serviceRow(service: Service, now: number): HTMLElement {
  const decision = service.last_decision;
  return h('tr', { dataset: { service: service.name } },
    h('td', null, h('a', { href: routeHash({ view: 'service', name: service.name }) }, service.name)),
    h('td', null, service.policy_family),
    h('td', { class: 'num' }, `${service.ready_replicas} / ${service.desired_replicas}`),
    h('td', { class: 'num' }, String(service.pending_replicas)),
    h('td', { class: 'num' }, String(service.draining_replicas)),
    h('td', null, formatReplicaRange(service.min_replicas, service.max_replicas)),
    h('td', null, service.manual_replicas === null ? 'policy' : `manual: ${service.manual_replicas}`),
    h('td', { class: 'reason' },
      decision ? [decision.reason, h('span', { class: 'muted' }, ` (${formatAgo(decision.at, now)})`)]
        : h('span', { class: 'muted' }, 'no decision yet'),
      serviceWarnings(service, now).map((w) => h('div', { class: 'warn' }, w))));
}

function servicesTable(services: readonly Service[], now: number): HTMLElement {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'services-table' },
    h('thead', null, h('tr', null,
      ['Service', 'Policy', 'Ready / desired', 'Pending', 'Draining', 'Bounds', 'Control', 'Last decision']
        .map((t) => h('th', null, t)))),
    h('tbody', null, services.map((s) => serviceRow(s, now)))));
}

export function servicesView(root: HTMLElement, ctx: ViewContext): Dispose {
  const body = h('div', null, loadingState('services'));
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  mount(root, h('div', { class: 'view-header' }, h('h1', null, 'Services')), banner, body);
  let loaded = false;
  const poller = new Poller(async () => {
    try {
      const services = await ctx.api.services();
      loaded = true;
      banner.hidden = true;
      mount(body, services.length === 0
        ? emptyState('No services yet.', 'Add one under `services:` in the daemon config and restart it, ' +
          'or POST a service to /v1/services (see docs/api.md).')
        : servicesTable(services, ctx.now()));
    } catch (error) {
      if (!loaded) mount(body, errorState('services', error));
      banner.hidden = !loaded;
      setCodeText(banner, `Live update failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, POLL_MS);
  const unsubscribe = ctx.events.subscribe(() => poller.refresh());
  return () => {
    poller.stop();
    unsubscribe();
  };
}
