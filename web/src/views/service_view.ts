// Service page: charts over time on one time axis from the daemon's history of the service
// (policy metrics against their targets, replicas, gateway traffic; every 5 s), the
// gateway's current figures (from the poll and the stream's gateway_stats messages), the
// policy and its last decision, the decision log (live), the replica table, the manual
// replica count and, for services whose policy reads stored rules, the rules editor.

import { ApiError, describeError } from '../api/errors';
import type { GpuscaleEvent, Rule, Service } from '../api/types';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { errorHint, errorState, loadingState } from '../ui/states';
import { DecisionLog } from './decision_log';
import { GatewayPanel } from './gateway_panel';
import { HistoryPanel } from './history_panel';
import { PolicyPanel } from './policy_panel';
import { readsStoredRules } from './policy_model';
import { replicaTable } from './replica_table';
import { ReplicasForm } from './replicas_form';
import { RulesEditor } from './rules_editor';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 2000;
const HISTORY_MS = 5000;

export function serviceView(root: HTMLElement, ctx: ViewContext, name: string): Dispose {
  const title = h('div', { class: 'view-header' },
    h('a', { href: routeHash({ view: 'services' }), class: 'back' }, '← Services'), h('h1', null, name));
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const body = h('div', null, loadingState(`service ${name}`));
  mount(root, title, banner, body);

  const policy = new PolicyPanel();
  const gateway = new GatewayPanel(name);
  const decisions = new DecisionLog(ctx.api, name);
  const history = new HistoryPanel(ctx.api, name, ctx.now, () => current?.policy_family ?? 'service\'s');
  const replicas = h('div', null, loadingState('replicas'));
  const form = new ReplicasForm(ctx.api, name, (s) => update(s));
  let rulesEditor: RulesEditor | null = null;
  let rules: Rule[] = [];
  let current: Service | null = null;

  function update(service: Service): void {
    current = service;
    form.update(service);
    gateway.update(service.gateway, service.spec);
    policy.update(service, rules, ctx.now());
  }

  function layout(service: Service): void {
    // Only a service whose policy reads stored rules gets the rules editor (the daemon
    // refuses rules for the others); the policy panel says why the others have none.
    rulesEditor = readsStoredRules(service) ? new RulesEditor(ctx.api, name, (list) => {
      rules = list;
      if (current) policy.update(current, rules, ctx.now());
    }) : null;
    mount(body,
      history.element,
      gateway.element,
      policy.element,
      h('section', { class: 'panel' }, h('h2', null, 'Replicas'), replicas),
      form.element, decisions.element, rulesEditor?.element ?? null);
    void decisions.load();
    void rulesEditor?.reload();
  }

  const poller = new Poller(async () => {
    try {
      const [service, list] = await Promise.all([ctx.api.service(name), ctx.api.replicas(name)]);
      const first = current === null;
      if (first) layout(service);
      update(service);
      if (first) historyPoller.refresh();
      mount(replicas, replicaTable(list));
      banner.hidden = true;
    } catch (error) {
      if (!current || (error instanceof ApiError && error.status === 404)) {
        mount(body, errorState(`service ${name}`, error));
        current = null;
        return;
      }
      banner.hidden = false;
      setCodeText(banner, `Live update failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, POLL_MS);
  // Starts once the service has loaded (the poll refreshes it); the panel shows its own errors.
  const historyPoller = new Poller(async () => {
    if (current) await history.load();
  }, HISTORY_MS);

  const unsubscribe = ctx.events.subscribe((event: GpuscaleEvent) => {
    if (event.service !== name) return;
    if (event.kind === 'decision') decisions.add(event);
    if (event.kind === 'rules_changed') void rulesEditor?.reload();
    poller.refresh();
  });
  // Between polls: the stream's current figures.
  const unsubscribeGateway = ctx.events.subscribeGatewayStats((services) => {
    const stats = services[name];
    if (!current || !stats) return;
    gateway.update(stats, current.spec);
  });
  return () => {
    poller.stop();
    historyPoller.stop();
    unsubscribe();
    unsubscribeGateway();
    history.destroy();
  };
}
