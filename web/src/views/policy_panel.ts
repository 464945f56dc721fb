// Policy panel of a service page: each metric the policy reads against its target or
// threshold, charted over the decisions that recorded a value, plus the last decision's
// reason and the metric errors of the last tick.

import type { GpuscaleEvent, Rule, Service } from '../api/types';
import { LineChart } from '../charts/line_chart';
import { formatAgo } from '../format';
import { h, mount } from '../ui/dom';
import type { ChartData } from '../charts/series';
import { metricUnit, metricVsTarget, policyTargets, type PolicyTarget } from './policy_model';

export class PolicyPanel {
  readonly element: HTMLElement;
  private readonly summary = h('div', { id: 'policy-summary' });
  private readonly targets = h('div', { class: 'chart-grid' });
  private charts: LineChart[] = [];
  private chartKey = '';

  constructor() {
    this.element = h('section', { class: 'panel', id: 'policy-panel' },
      h('h2', null, 'Policy: metric vs target'), this.summary, this.targets);
  }

  update(service: Service, rules: readonly Rule[], decisions: readonly GpuscaleEvent[], now: number): void {
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
        : null);
    this.renderTargets(service, rules, decisions);
  }

  destroy(): void {
    this.charts.forEach((c) => c.destroy());
  }

  private renderTargets(service: Service, rules: readonly Rule[], decisions: readonly GpuscaleEvent[]): void {
    const targets = policyTargets(service.spec, rules);
    if (targets.length === 0) {
      mount(this.targets, h('p', { class: 'muted' },
        `The ${service.policy_family} policy has no single metric target to chart; the decision log explains each change.`));
      return;
    }
    const charted = targets.map((t) => ({ target: t, data: metricVsTarget(decisions, t) }))
      .filter((c): c is { target: PolicyTarget; data: ChartData } => c.data !== null);
    if (charted.length === 0) {
      mount(this.targets, targetTable(targets));
      return;
    }
    const key = charted.map((c) => `${c.target.metric}=${c.target.target}`).join('|');
    if (key !== this.chartKey) {
      this.charts.forEach((c) => c.destroy());
      this.charts = charted.map((c) => new LineChart({ title: c.target.metric, unit: metricUnit(c.target.metric), height: 150 }));
      this.chartKey = key;
    }
    mount(this.targets, this.charts.map((c) => c.element));
    charted.forEach((c, i) => this.charts[i]?.setData(c.data));
  }
}

function targetTable(targets: readonly PolicyTarget[]): HTMLElement {
  return h('div', null,
    h('div', { class: 'table-wrap' }, h('table', { id: 'policy-targets' },
      h('thead', null, h('tr', null, ['Metric', 'Target', 'Unit'].map((t) => h('th', null, t)))),
      h('tbody', null, targets.map((t) => h('tr', null,
        h('td', null, t.metric), h('td', null, t.description), h('td', null, metricUnit(t.metric))))))),
    h('p', { class: 'muted' }, 'The daemon does not record metric values with its decisions yet, so there is no ' +
      'metric-vs-target chart; the decision reasons give the value at each change.'));
}
