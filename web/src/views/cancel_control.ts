// CancelControl: the "Cancel task" button of the task page and the experiment page, and the
// line that reports its outcome. The button asks for confirmation (naming the task and what
// cancelling does to it), then calls DELETE /v1/tasks/{id} through cancelTaskAfterConfirm.
// Built once per page: refreshes only show or hide it (update()), so keyboard focus on it
// survives them. The page owns both elements' placement; only one page is mounted at a
// time, so the ids #cancel-task and #cancel-message are unique.

import type { Task } from '../api/types';
import { h } from '../ui/dom';
import type { CancelTarget } from './task_actions_model';
import { cancelOutcomeLine, cancelTaskAfterConfirm, isCancellable, isStaleTaskAnswer, taskStatusPending } from './task_actions_model';
import type { ViewContext } from './view';

export class CancelControl {
  readonly button = h('button', { type: 'button', class: 'danger', id: 'cancel-task', hidden: true }, 'Cancel task');
  readonly message = h('div', { class: 'action-message', id: 'cancel-message', role: 'status', hidden: true });
  private task: CancelTarget | null = null;

  // `onDone` gets the cancelled task from the DELETE answer, or null after a failure (the
  // task may have ended meanwhile: the page should refresh either way). `focusAfter` takes
  // keyboard focus once the button hides after a successful cancel.
  constructor(ctx: ViewContext, onDone: (task: Task | null) => void, focusAfter: HTMLElement) {
    this.button.addEventListener('click', () => void (async () => {
      if (!this.task || this.button.disabled) return;
      this.message.hidden = true;
      this.button.disabled = true;
      const outcome = await cancelTaskAfterConfirm(ctx.api, this.task, (q) => window.confirm(q));
      this.button.disabled = false;
      const line = cancelOutcomeLine(outcome);
      if (!line) return; // declined
      this.message.hidden = false;
      this.message.classList.toggle('form-error', line.failed);
      this.message.setAttribute('role', line.failed ? 'alert' : 'status');
      this.message.textContent = line.text;
      if (!line.failed) focusAfter.focus(); // the button disappears; keep focus on the page
      onDone(outcome.kind === 'cancelled' ? outcome.task : null);
    })());
  }

  // The task as last loaded: the button shows while it is queued or running. An answer
  // older than what is known (running after cancelled) is ignored.
  update(task: CancelTarget): void {
    if (isStaleTaskAnswer(this.task, task)) return;
    this.task = task;
    this.button.hidden = !isCancellable(task.status);
  }

  // Whether the page should load the task again to keep the button right: until it ended.
  wantsTask(): boolean {
    return taskStatusPending(this.task?.status ?? null);
  }

  // No task to offer (it failed to load): hide the button, keep any outcome line.
  hide(): void {
    this.task = null;
    this.button.hidden = true;
  }
}
