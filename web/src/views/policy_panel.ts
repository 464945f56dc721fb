// Policy panel of a service page: the policy family and bounds, the last decision's reason,
// the metric errors of the last tick, what the policy aims at (metric, target, unit) and,
// for services whose policy reads no stored rules, why there is no rules form. The metric
// against its target over time is in the history panel.

import type { Rule, Service } from '../api/types';
import { formatAgo } from '../format';
import { h, mount } from '../ui/dom';
import { metricUnit, policyTargets, readsStoredRules, storedRulesNote, type PolicyTarget } from './policy_model';

export class PolicyPanel {
  readonly element: HTMLElement;
  private readonly summary = h('div', { id: 'policy-summary' });
  private readonly targets = h('div');

  constructor() {
    this.element = h('section', { class: 'panel', id: 'policy-panel' },
      h('h2', null, 'Policy'), this.summary, this.targets);
  }

  update(service: Service, rules: readonly Rule[], now: number): void {
    const d = service.last_decision;
    mount(this.summary,
      h('p', null, h('strong', null, `${service.policy_family} policy`),
        ` · desired ${service.desired_replicas} replica(s) within ${service.min_replicas}–${service.max_replicas}`),
      d ? h('p', { class: 'reason' }, `Last decision (${formatAgo(d.at, now)}): ${d.reason}`,
        d.details.length > 0 ? h('ul', { class: 'details' }, d.details.map((x) => h('li', null, x))) : null)
        : h('p', { class: 'muted' }, 'No decision yet: the first control-loop tick has not run.'),
      service.metric_errors.length > 0
        ? h('div', { class: 'warn' }, h('strong', null, 'Metric errors (no scale-in while they last): '),
          h('ul', null, service.metric_errors.map((e) => h('li', null, e))))
        : null,
      readsStoredRules(service) ? null : h('p', { class: 'muted', id: 'rules-not-used' }, storedRulesNote(service)));
    const targets = policyTargets(service.spec, rules);
    mount(this.targets, targets.length > 0 ? targetTable(targets) : null);
  }
}

function targetTable(targets: readonly PolicyTarget[]): HTMLElement {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'policy-targets' },
    h('thead', null, h('tr', null, ['Metric', 'Target', 'Unit'].map((t) => h('th', null, t)))),
    h('tbody', null, targets.map((t) => h('tr', null,
      h('td', null, t.metric), h('td', null, t.description), h('td', null, metricUnit(t.metric)))))));
}
