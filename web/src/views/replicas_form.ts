// Manual replica count of a service page: PUT /v1/services/{name}/replicas with a number
// (the override) or null (back to the policy). Errors appear beside the field.

import type { ApiClient } from '../api/client';
import type { Service } from '../api/types';
import { h } from '../ui/dom';
import { FormErrors, fieldRow } from '../ui/form';
import { numberOrText } from './rule_form_model';

export class ReplicasForm {
  readonly element: HTMLElement;
  private readonly status = h('p', { class: 'muted', id: 'replicas-control' });

  constructor(
    private readonly api: ApiClient,
    private readonly service: string,
    private readonly onChange: (service: Service) => void,
  ) {
    const input = h('input', { type: 'text', inputmode: 'numeric', placeholder: 'replicas' });
    const formError = h('div', { class: 'form-error', role: 'alert', hidden: true });
    const reset = h('button', { type: 'button' }, 'Return to policy');
    const form = h('form', { id: 'replicas-form', class: 'inline-form', novalidate: true },
      formError, fieldRow('replicas', 'Replicas', input),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Set count'), reset));
    const errors = new FormErrors(form, ['replicas'], formError);
    const send = async (value: number | string | null) => {
      errors.clear();
      try {
        this.onChange(await this.api.setReplicas(this.service, value));
      } catch (error) {
        errors.show(error);
      }
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void send(numberOrText(input.value) ?? input.value);
    });
    reset.addEventListener('click', () => void send(null));
    this.element = h('section', { class: 'panel' }, h('h2', null, 'Manual replica count'), this.status, form);
  }

  update(service: Service): void {
    this.status.textContent = service.manual_replicas === null
      ? `The ${service.policy_family} policy decides (bounds ${service.min_replicas}–${service.max_replicas} replicas).`
      : `Manual override: ${service.manual_replicas} replica(s); the policy is ignored until you return control to it.`;
  }
}
