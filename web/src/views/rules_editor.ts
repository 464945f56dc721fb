// Rules editor of a service page: the service's stored scaling rules (the fields of
// Backend.AI's model-service autoscaling rules) with delete buttons, and a form that adds one
// through POST /v1/services/{name}/rules. The API validates; its message appears beside the
// field it names (e.g. threshold).

import type { ApiClient } from '../api/client';
import { describeError } from '../api/errors';
import { RULE_COMPARATORS, RULE_SOURCES, type Rule } from '../api/types';
import { formatDuration } from '../format';
import { h, mount } from '../ui/dom';
import { FormErrors, fieldRow, type FieldInput } from '../ui/form';
import { emptyState, errorState } from '../ui/states';
import { AGGREGATIONS, RULE_FIELDS, comparatorSymbol, ruleInputFromForm, type RuleField } from './rule_form_model';

function select(options: readonly string[], value: string): HTMLSelectElement {
  return h('select', null, options.map((o) => h('option', { value: o, selected: o === value }, o)));
}

function text(placeholder: string, numeric = false): HTMLInputElement {
  return h('input', { type: 'text', placeholder, ...(numeric ? { inputmode: 'decimal' } : {}) });
}

function rulesTable(rules: readonly Rule[], onDelete: (rule: Rule) => void): HTMLElement {
  return h('div', { class: 'table-wrap' }, h('table', { id: 'rules-table' },
    h('thead', null, h('tr', null, ['Name', 'Condition', 'Step', 'Cooldown', 'Bounds', 'Enabled', '']
      .map((t) => h('th', null, t)))),
    h('tbody', null, rules.map((rule) => h('tr', { dataset: { ruleId: rule.id } },
      h('td', null, rule.name),
      h('td', null, `${rule.aggregation}(${rule.metric}) ${comparatorSymbol(rule.comparator)} ${rule.threshold}`,
        h('div', { class: 'muted' }, rule.source)),
      h('td', { class: 'num' }, `${rule.step_size > 0 ? '+' : ''}${rule.step_size} replica(s)`),
      h('td', null, formatDuration(rule.cooldown_seconds)),
      h('td', null, `${rule.min_replicas}–${rule.max_replicas} replicas`),
      h('td', null, rule.enabled ? 'yes' : 'no'),
      h('td', null, h('button', { type: 'button', class: 'danger', onclick: () => onDelete(rule) }, 'Delete')))))));
}

export class RulesEditor {
  readonly element: HTMLElement;
  private readonly list = h('div', null);
  private readonly inputs: Record<Exclude<RuleField, 'enabled'>, FieldInput>;
  private readonly enabled = h('input', { type: 'checkbox', checked: true, name: 'enabled' });

  constructor(
    private readonly api: ApiClient,
    private readonly service: string,
    private readonly onRules: (rules: Rule[]) => void = () => {},
  ) {
    this.inputs = {
      name: text('queue-high'),
      source: select(RULE_SOURCES, 'inference_framework'),
      metric: text('vllm:num_requests_waiting'),
      aggregation: select(AGGREGATIONS, 'average'),
      comparator: select(RULE_COMPARATORS, 'GREATER_THAN'),
      threshold: text('10', true),
      step_size: text('1', true),
      cooldown_seconds: text('60', true),
      min_replicas: text('service min', true),
      max_replicas: text('service max', true),
    };
    const formError = h('div', { class: 'form-error', role: 'alert', hidden: true });
    const form = h('form', { id: 'rule-form', class: 'form-grid', novalidate: true },
      formError,
      fieldRow('name', 'Name', this.inputs.name),
      fieldRow('source', 'Source', this.inputs.source),
      fieldRow('metric', 'Metric', this.inputs.metric, 'Prometheus name, or PromQL for source prometheus'),
      fieldRow('aggregation', 'Aggregation over replicas', this.inputs.aggregation),
      fieldRow('comparator', 'Comparator', this.inputs.comparator),
      fieldRow('threshold', 'Threshold (metric units)', this.inputs.threshold),
      fieldRow('step_size', 'Step (replicas; negative scales in)', this.inputs.step_size),
      fieldRow('cooldown_seconds', 'Cooldown (s)', this.inputs.cooldown_seconds),
      fieldRow('min_replicas', 'Min replicas', this.inputs.min_replicas),
      fieldRow('max_replicas', 'Max replicas', this.inputs.max_replicas),
      h('div', { class: 'field' }, h('label', null, this.enabled, ' Enabled'),
        h('div', { class: 'field-error', dataset: { errorFor: 'enabled' } })),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Add rule')));
    const errors = new FormErrors(form, RULE_FIELDS, formError);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.submit(form, errors);
    });
    this.element = h('section', { class: 'panel', id: 'rules-editor' },
      h('h2', null, 'Scaling rules'),
      this.list, h('h3', null, 'Add a rule'), form);
  }

  async reload(): Promise<void> {
    try {
      const rules = await this.api.rules(this.service);
      this.onRules(rules);
      mount(this.list, rules.length === 0
        ? emptyState('No stored rules.', 'Add one below; the control loop uses it from its next tick.')
        : rulesTable(rules, (rule) => void this.remove(rule)));
    } catch (error) {
      mount(this.list, errorState('rules', error));
    }
  }

  private async submit(form: HTMLFormElement, errors: FormErrors): Promise<void> {
    errors.clear();
    const values: Partial<Record<RuleField, string>> = {};
    for (const [field, input] of Object.entries(this.inputs)) values[field as RuleField] = input.value;
    const button = form.querySelector('button[type=submit]');
    button?.setAttribute('disabled', '');
    try {
      await this.api.addRule(this.service, ruleInputFromForm(values, this.enabled.checked));
      this.inputs.name.value = '';
      await this.reload();
    } catch (error) {
      errors.show(error);
    } finally {
      button?.removeAttribute('disabled');
    }
  }

  private async remove(rule: Rule): Promise<void> {
    try {
      await this.api.deleteRule(this.service, rule.id);
    } catch (error) {
      window.alert(`Could not delete rule ${rule.name}: ${describeError(error)}`);
    }
    await this.reload();
  }
}
