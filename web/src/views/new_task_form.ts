// "New task" form of the tasks view: a textarea for the task definition as JSON, checked in
// the browser (a parse error names its line and column and puts the cursor there), then
// POSTed to /v1/tasks as typed; on 201 `onCreated` gets the new task (the view navigates
// to it). The API's 400 / 409 message, with the field it names, appears under the
// textarea. Built once and never re-rendered, so polling never disturbs typing.

import type { ApiClient } from '../api/client';
import type { Task } from '../api/types';
import { setCodeText, withCode } from '../ui/code_text';
import { h } from '../ui/dom';
import { EXAMPLE_TASK, submitTaskDefinition } from './task_actions_model';

export class NewTaskForm {
  readonly element: HTMLDetailsElement;
  private readonly textarea: HTMLTextAreaElement;
  private readonly error: HTMLElement;
  private readonly submitButton: HTMLButtonElement;
  private readonly form: HTMLFormElement;

  constructor(
    private readonly api: Pick<ApiClient, 'submitTask'>,
    private readonly onCreated: (task: Task) => void,
  ) {
    this.textarea = h('textarea', {
      id: 'task-definition', name: 'definition', rows: 14, spellcheck: 'false', autocomplete: 'off',
      autocapitalize: 'off', 'aria-describedby': 'task-definition-hint task-definition-error',
      placeholder: '{"name": "my-sweep", "model": "…", "parameters": {…}, "server": {"command": […]}}',
    });
    this.error = h('div', { class: 'field-error', id: 'task-definition-error', role: 'alert', dataset: { errorFor: 'definition' } });
    this.submitButton = h('button', { type: 'submit', class: 'primary' }, 'Submit task');
    const example = h('button', { type: 'button', id: 'task-example' }, 'Insert example');
    this.form = h('form', { id: 'task-form', novalidate: true },
      h('div', { class: 'field' },
        h('label', { for: this.textarea.id }, 'Task definition (JSON)'), this.textarea,
        h('div', { class: 'hint', id: 'task-definition-hint' },
          withCode('The task file of docs/tasks.md, written as a JSON object. YAML files: `gpuscale task submit FILE`. ' +
          'Ctrl+Enter submits.')),
        this.error),
      h('div', { class: 'actions' }, this.submitButton, example));
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.submit();
    });
    this.textarea.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.form.requestSubmit();
      }
    });
    example.addEventListener('click', () => this.insertExample());
    this.element = h('details', { class: 'panel new-task', id: 'new-task' },
      h('summary', null, h('h2', { class: 'summary-title' }, 'New task')), this.form);
  }

  private showError(message: string): void {
    setCodeText(this.error, message);
    this.textarea.setAttribute('aria-invalid', 'true');
  }

  private clearError(): void {
    this.error.textContent = '';
    this.textarea.removeAttribute('aria-invalid');
  }

  private insertExample(): void {
    const current = this.textarea.value.trim();
    if (current && current !== EXAMPLE_TASK.trim() && !window.confirm('Replace the definition you typed with the example?')) return;
    this.textarea.value = EXAMPLE_TASK;
    this.clearError();
    this.textarea.focus();
  }

  private async submit(): Promise<void> {
    if (this.submitButton.disabled) return;
    this.clearError();
    const text = this.textarea.value;
    this.submitButton.disabled = true;
    this.form.setAttribute('aria-busy', 'true');
    this.submitButton.textContent = 'Submitting…';
    try {
      const outcome = await submitTaskDefinition(this.api, text);
      if (outcome.kind === 'created') {
        this.textarea.value = '';
        this.onCreated(outcome.task);
      } else if (outcome.kind === 'invalid') {
        this.showError(outcome.problem.message);
        this.textarea.focus();
        const at = outcome.problem.position;
        if (at !== null) this.textarea.setSelectionRange(at, Math.min(text.length, at + 1));
      } else {
        this.showError(outcome.message);
      }
    } finally {
      this.submitButton.disabled = false;
      this.form.removeAttribute('aria-busy');
      this.submitButton.textContent = 'Submit task';
    }
  }
}
