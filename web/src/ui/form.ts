// Form helpers: a labelled field with an error slot beside it, and FormErrors, which puts
// an API error's message next to the field it names (error.field) or, when it names none
// of the form's fields, at the top of the form.

import { ApiError, describeError, formFieldFor } from '../api/errors';
import { setCodeText } from './code_text';
import { h } from './dom';

export type FieldInput = HTMLInputElement | HTMLSelectElement;

export function fieldRow(name: string, label: string, input: FieldInput, hint?: string): HTMLElement {
  input.name = name;
  input.id ||= `field-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const error = h('div', { class: 'field-error', dataset: { errorFor: name }, role: 'alert' });
  input.setAttribute('aria-describedby', `${input.id}-error`);
  error.id = `${input.id}-error`;
  return h('div', { class: 'field', dataset: { field: name } },
    h('label', { for: input.id }, label), input,
    hint ? h('div', { class: 'hint' }, hint) : null, error);
}

export class FormErrors {
  constructor(
    private readonly form: HTMLElement,
    private readonly fields: readonly string[],
    private readonly formError: HTMLElement,
  ) {}

  clear(): void {
    this.formError.textContent = '';
    this.formError.hidden = true;
    for (const slot of this.form.querySelectorAll<HTMLElement>('.field-error')) slot.textContent = '';
    for (const input of this.form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
  }

  // Shows `error`; returns the field it was shown beside, or null (form-level).
  show(error: unknown): string | null {
    this.clear();
    const field = error instanceof ApiError ? formFieldFor(error.field, this.fields) : null;
    const slot = field ? this.form.querySelector<HTMLElement>(`[data-error-for="${field}"]`) : null;
    if (field && slot) {
      setCodeText(slot, describeError(error));
      this.form.querySelector(`[name="${field}"]`)?.setAttribute('aria-invalid', 'true');
      return field;
    }
    setCodeText(this.formError, describeError(error));
    this.formError.hidden = false;
    return null;
  }
}
