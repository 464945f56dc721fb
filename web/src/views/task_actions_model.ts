// Logic of the dashboard's two task actions, without DOM: the "New task" form (the task
// definition is typed as JSON, checked in the browser so a typo is pointed at before any
// request, then POSTed as written to /v1/tasks) and the "Cancel" button (confirm, then
// DELETE /v1/tasks/{id}). The views only wire these to elements; the API client carries
// the bearer token as for every other call.
//
// YAML is not parsed in the browser (it would need a parser dependency for one textarea);
// `gpuscale task submit FILE` takes YAML files.

import type { ApiClient } from '../api/client';
import { ApiError, describeError } from '../api/errors';
import type { Task, TaskSummary } from '../api/types';
import { findJsonSyntaxError, lineColumn } from '../json_syntax';
import { isEnded } from './tasks_model';

// Where JSON.parse gave up, as 1-based line and column and a 0-based character offset (for
// placing the cursor), with the parser's own reason. Null fields: the engine did not say.
export interface JsonProblem {
  message: string; // the whole sentence the form shows
  position: number | null;
  line: number | null;
  column: number | null;
}

export type DefinitionCheck = { ok: true; value: Record<string, unknown> } | { ok: false; problem: JsonProblem };

export { lineColumn }; // where it is tested, beside offsetOf

// Character offset of 1-based `line`, `column` in `text` (clamped to the text).
export function offsetOf(text: string, line: number, column: number): number {
  const lines = text.split('\n');
  let offset = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length - 1); i++) offset += (lines[i] ?? '').length + 1;
  return Math.min(text.length, offset + Math.max(0, column - 1));
}

// The place a JSON.parse error names (the fallback when the scanner of json_syntax.ts
// passed a text JSON.parse rejects). Engines word it differently: V8 "… in JSON at position
// 13 (line 2 column 5)" or "Unexpected end of JSON input", Firefox "… at line 2 column 5 of
// the JSON data"; Safari names no place (then null).
export function jsonErrorPlace(text: string, engineMessage: string): { position: number; line: number; column: number } | null {
  const position = /at position (\d+)/.exec(engineMessage);
  if (position?.[1] !== undefined) {
    const offset = Number(position[1]);
    return { position: offset, ...lineColumn(text, offset) };
  }
  const lineCol = /line (\d+) column (\d+)/.exec(engineMessage);
  if (lineCol?.[1] !== undefined && lineCol[2] !== undefined) {
    const line = Number(lineCol[1]);
    const column = Number(lineCol[2]);
    return { position: offsetOf(text, line, column), line, column };
  }
  if (/end of (JSON )?(input|data)/i.test(engineMessage)) {
    return { position: text.length, ...lineColumn(text, text.length) };
  }
  return null;
}

// The engine's reason without the place it already gave ("Expected ',' or '}' after property
// value"), so the place is said once, in the same words on every browser.
function engineReason(engineMessage: string): string {
  return engineMessage
    .replace(/^JSON\.parse:\s*/, '')
    .replace(/\s*(in JSON )?at position \d+.*$/, '')
    .replace(/\s*at line \d+ column \d+ of the JSON data$/, '')
    .replace(/\s*\(line \d+ column \d+\)$/, '')
    .trim();
}

export const YAML_HINT = 'This form takes JSON (the page does not parse YAML); submit a YAML file with ' +
  '`gpuscale task submit FILE`, or write the same fields as a JSON object.';

function problem(message: string, place: { position: number; line: number; column: number } | null = null): DefinitionCheck {
  return { ok: false, problem: { message, position: place?.position ?? null, line: place?.line ?? null, column: place?.column ?? null } };
}

function placeText(place: { position: number; line: number; column: number }): string {
  return `line ${place.line}, column ${place.column} (character ${place.position + 1})`;
}

// Checks that `text` is one JSON object (the task file of docs/tasks.md as JSON). Fields are
// not checked here: the API validates them and names the field it rejects.
export function checkTaskDefinition(text: string): DefinitionCheck {
  const trimmed = text.trim();
  if (trimmed.length === 0) return problem('Enter a task definition: a JSON object such as the example.');
  const yaml = trimmed.startsWith('{') || trimmed.startsWith('[') ? '' : ` ${YAML_HINT}`;
  const syntax = findJsonSyntaxError(text);
  if (syntax) {
    const place = { position: syntax.position, ...lineColumn(text, syntax.position) };
    return problem(`Not valid JSON at ${placeText(place)}: ${syntax.reason}.${yaml}`, place);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) { // only what the scanner lets through (nesting deeper than it checks)
    const engineMessage = error instanceof Error ? error.message : String(error);
    const place = jsonErrorPlace(text, engineMessage);
    return problem(`Not valid JSON${place ? ` at ${placeText(place)}` : ''}: ${engineReason(engineMessage)}.${yaml}`, place);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    return problem(`A task definition is a JSON object ({"name": …, "model": …}), not ${kind}.`);
  }
  return { ok: true, value: value as Record<string, unknown> };
}

// How the form shows an API rejection: the field the API names, then its message
// ("benchmark.duration_seconds: expected a positive number of seconds (line 12)"). "body"
// (malformed JSON) and "id" say nothing a user can act on beyond the message.
export function apiErrorText(error: unknown): string {
  const message = describeError(error);
  if (!(error instanceof ApiError) || !error.field || error.field === 'body' || error.field === 'id') return message;
  return message.startsWith(error.field) ? message : `${error.field}: ${message}`;
}

export type SubmitOutcome =
  | { kind: 'invalid'; problem: JsonProblem } // not sent
  | { kind: 'rejected'; message: string; status: number } // the API said no (status 0: no answer)
  | { kind: 'created'; task: Task };

// Checks `text`, then POSTs it exactly as typed (the API keeps it as the task's source
// text, and its "(line N)" refers to the textarea's lines).
export async function submitTaskDefinition(api: Pick<ApiClient, 'submitTask'>, text: string): Promise<SubmitOutcome> {
  const check = checkTaskDefinition(text);
  if (!check.ok) return { kind: 'invalid', problem: check.problem };
  try {
    return { kind: 'created', task: await api.submitTask(text) };
  } catch (error) {
    return { kind: 'rejected', message: apiErrorText(error), status: error instanceof ApiError ? error.status : 0 };
  }
}

// The API cancels tasks that have not ended (docs/api.md: queued or running); ended ones
// (succeeded, failed, cancelled) answer 409, so the button is not offered for them.
export function isCancellable(status: string): boolean {
  return status === 'queued' || status === 'running';
}

// What the Cancel button needs of a task: a TaskSummary or a full Task both fit.
export type CancelTarget = Pick<TaskSummary, 'id' | 'name' | 'status' | 'experiments_running' | 'experiments_total' | 'experiments_done'>;

// The question the Cancel button asks first, saying what cancelling does to this task.
export function cancelQuestion(task: Omit<CancelTarget, 'status'>): string {
  const waiting = task.experiments_total - task.experiments_done - task.experiments_running;
  const parts: string[] = [];
  if (task.experiments_running > 0) parts.push(`${task.experiments_running} running experiment(s) are stopped and their GPUs released`);
  if (waiting > 0) parts.push(`${waiting} queued experiment(s) are dropped`);
  if (task.experiments_done > 0) parts.push(`${task.experiments_done} ended experiment(s) keep their results`);
  const effects = parts.length > 0 ? ` ${parts.join('; ')}.` : '';
  return `Cancel task ${task.id} (${task.name})?${effects} This cannot be undone.`;
}

export type CancelOutcome =
  | { kind: 'declined' }
  | { kind: 'cancelled'; task: Task }
  | { kind: 'failed'; message: string; status: number };

// Asks `confirm`, then DELETE /v1/tasks/{id}. A 409 (the task ended meanwhile) comes back
// as 'failed' with the API's message; the caller refreshes either way.
export async function cancelTaskAfterConfirm(
  api: Pick<ApiClient, 'cancelTask'>,
  task: Parameters<typeof cancelQuestion>[0],
  confirm: (question: string) => boolean,
): Promise<CancelOutcome> {
  if (!confirm(cancelQuestion(task))) return { kind: 'declined' };
  try {
    return { kind: 'cancelled', task: await api.cancelTask(task.id) };
  } catch (error) {
    return { kind: 'failed', message: `Could not cancel task ${task.id}: ${describeError(error)}`, status: error instanceof ApiError ? error.status : 0 };
  }
}

// The line shown under the page header after the Cancel button's outcome; null when the
// user declined (nothing to say).
export function cancelOutcomeLine(outcome: CancelOutcome): { text: string; failed: boolean } | null {
  switch (outcome.kind) {
    case 'declined':
      return null;
    case 'cancelled':
      return { text: `Task ${outcome.task.id} cancelled.`, failed: false };
    case 'failed':
      return { text: outcome.message, failed: true };
  }
}

// Whether a page that shows part of a task (the experiment page) should (re)load the task
// to know whether to offer Cancel: while its status is unknown (null) or it has not ended.
// An ended task never runs again, so its page stops asking.
export function taskStatusPending(status: string | null): boolean {
  return status === null || !isEnded(status);
}

// True when `answer` is older news than `known` about the same task: `known` has ended (an
// ended task never runs again) but `answer` still says queued or running, as a load sent
// before the cancel's DELETE can. Such an answer must not bring the Cancel button back.
export function isStaleTaskAnswer(known: Pick<TaskSummary, 'id' | 'status'> | null, answer: Pick<TaskSummary, 'id' | 'status'>): boolean {
  return known !== null && known.id === answer.id && isEnded(known.status) && !isEnded(answer.status);
}

// A starting point for the form: the emulated sweep of examples/tasks/, as JSON. `gpuscale`
// must be on the daemon's PATH (or replace it with the binary's path).
export const EXAMPLE_TASK = `{
  "name": "emulated-sweep",
  "model": "gpuscale/emulated-llama-3.1-8b",
  "params_b": 8,
  "parameters": {
    "tensor-parallel-size": [1],
    "max-num-seqs": [8, 32]
  },
  "server": {
    "command": ["gpuscale", "emulate", "--port", "{port}", "--model", "{model}",
                "--tensor-parallel-size", "{tensor-parallel-size}",
                "--max-num-seqs", "{max-num-seqs}", "--startup-seconds", "1"],
    "startup_timeout_seconds": 60
  },
  "benchmark": { "concurrency": 8, "input_tokens": 128, "output_tokens": 64, "duration_seconds": 10 },
  "gpu_wait_timeout_seconds": 120,
  "objective": { "maximize": "throughput" }
}
`;
