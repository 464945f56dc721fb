// Service page: replicas desired / ready / starting / pending over time (sampled from the
// polled service state, every 2 s and on each of its events), the gateway's request rate and
// latencies (from the poll and the stream's gateway_stats messages), the policy's metric
// against its target, the decision log (live), the replica table, the manual replica count
// and the rules editor.

import { ApiError, describeError } from '../api/errors';
import type { GpuscaleEvent, Rule, Service } from '../api/types';
import { LineChart } from '../charts/line_chart';
import { SampleBuffer, replicaChartData, sampleFromService, type ReplicaSample } from '../charts/series';
import { routeHash } from '../router';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { errorHint, errorState, loadingState } from '../ui/states';
import { DecisionLog } from './decision_log';
import { GatewayPanel } from './gateway_panel';
import { PolicyPanel } from './policy_panel';
import { replicaTable } from './replica_table';
import { ReplicasForm } from './replicas_form';
import { RulesEditor } from './rules_editor';
import type { Dispose, ViewContext } from './view';

const POLL_MS = 2000;
const SAMPLES = new Map<string, SampleBuffer<ReplicaSample>>(); // per service, across visits

function samplesFor(name: string): SampleBuffer<ReplicaSample> {
  let buffer = SAMPLES.get(name);
  if (!buffer) {
    buffer = new SampleBuffer<ReplicaSample>(2000, 3600);
    SAMPLES.set(name, buffer);
  }
  return buffer;
}

function rulesNote(service: Service): string | null {
  const spec = service.spec;
  const hasPolicy = typeof spec === 'object' && spec !== null && !Array.isArray(spec) && spec.policy != null;
  return hasPolicy
    ? `This service's policy (${service.policy_family}) is part of its spec, so stored rules do not apply to it; ` +
      'they drive services defined without a policy block.'
    : null;
}

export function serviceView(root: HTMLElement, ctx: ViewContext, name: string): Dispose {
  const title = h('div', { class: 'view-header' },
    h('a', { href: routeHash({ view: 'services' }), class: 'back' }, '← Services'), h('h1', null, name));
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const body = h('div', null, loadingState(`service ${name}`));
  mount(root, title, banner, body);

  const samples = samplesFor(name);
  const replicaChart = new LineChart({ title: 'Replicas', unit: 'replicas', integers: true, height: 200,
    minSpanSeconds: 120 });
  const policy = new PolicyPanel();
  const gateway = new GatewayPanel(name);
  const decisions = new DecisionLog(ctx.api, name);
  const replicas = h('div', null, loadingState('replicas'));
  const form = new ReplicasForm(ctx.api, name, (s) => update(s));
  let rulesEditor: RulesEditor | null = null;
  let rules: Rule[] = [];
  let current: Service | null = null;

  function update(service: Service): void {
    current = service;
    samples.push(sampleFromService(service, ctx.now()));
    replicaChart.setData(replicaChartData(samples.all));
    form.update(service);
    ctx.gateway.record(name, service.gateway, ctx.now());
    gateway.update(service.gateway, service.spec, ctx.gateway.samples(name, ctx.now()));
    policy.update(service, rules, decisions.decisions, ctx.now());
  }

  function layout(service: Service): void {
    rulesEditor = new RulesEditor(ctx.api, name, rulesNote(service), (list) => {
      rules = list;
      if (current) policy.update(current, rules, decisions.decisions, ctx.now());
    });
    mount(body,
      h('section', { class: 'panel', id: 'replica-chart' }, h('h2', null, 'Replicas over time'),
        h('p', { class: 'muted' }, 'Sampled while this page is open: desired, ready, starting and pending replicas.'),
        replicaChart.element),
      gateway.element,
      policy.element,
      h('section', { class: 'panel' }, h('h2', null, 'Replicas'), replicas),
      form.element, decisions.element, rulesEditor.element);
    void decisions.load().then(() => current && policy.update(current, rules, decisions.decisions, ctx.now()));
    void rulesEditor.reload();
  }

  const poller = new Poller(async () => {
    try {
      const [service, list] = await Promise.all([ctx.api.service(name), ctx.api.replicas(name)]);
      if (!current) layout(service);
      update(service);
      mount(replicas, replicaTable(list));
      banner.hidden = true;
    } catch (error) {
      if (!current || (error instanceof ApiError && error.status === 404)) {
        mount(body, errorState(`service ${name}`, error));
        current = null;
        return;
      }
      banner.hidden = false;
      banner.textContent = `Live update failed: ${describeError(error)} ${errorHint(error)}`;
    }
  }, POLL_MS);

  const unsubscribe = ctx.events.subscribe((event: GpuscaleEvent) => {
    if (event.service !== name) return;
    if (event.kind === 'decision') decisions.add(event);
    if (event.kind === 'rules_changed') void rulesEditor?.reload();
    poller.refresh();
  });
  // Between polls: the stream's figures (main.ts has already added them to ctx.gateway).
  const unsubscribeGateway = ctx.events.subscribeGatewayStats((services) => {
    const stats = services[name];
    if (!current || !stats) return;
    gateway.update(stats, current.spec, ctx.gateway.samples(name, ctx.now()));
  });
  return () => {
    poller.stop();
    unsubscribe();
    unsubscribeGateway();
    replicaChart.destroy();
    policy.destroy();
    gateway.destroy();
  };
}
