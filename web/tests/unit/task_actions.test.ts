import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors';
import type { Task } from '../../src/api/types';
import {
  EXAMPLE_TASK,
  apiErrorText,
  cancelQuestion,
  cancelOutcomeLine,
  cancelTaskAfterConfirm,
  checkTaskDefinition,
  isCancellable,
  isStaleTaskAnswer,
  jsonErrorPlace,
  lineColumn,
  offsetOf,
  submitTaskDefinition,
  taskStatusPending,
} from '../../src/views/task_actions_model';
import { summary, task } from './task_fixtures';

const invalid = (field: string, message: string, status = 400, code = 'invalid_argument') =>
  new ApiError(status, code, message, field);

describe('checkTaskDefinition', () => {
  it('accepts a JSON object, the example included', () => {
    const check = checkTaskDefinition(EXAMPLE_TASK);
    expect(check.ok).toBe(true);
    if (check.ok) expect(check.value).toMatchObject({ name: 'emulated-sweep', objective: { maximize: 'throughput' } });
  });

  it('names line, column and character of a JSON error and keeps the offset for the cursor', () => {
    const text = '{\n  "name": "s",\n  "model": "m"\n  "params_b": 8\n}';
    const check = checkTaskDefinition(text);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.problem).toMatchObject({ line: 4, column: 3, position: text.indexOf('"params_b"') });
    expect(check.problem.message).toBe(
      "Not valid JSON at line 4, column 3 (character 35): expected ',' or '}' after a property value.");
  });

  it.each([
    ['', 'Enter a task definition'],
    ['  \n ', 'Enter a task definition'],
    ['[1, 2]', 'is a JSON object'],
    ['"sweep"', 'not a string'],
    ['null', 'not null'],
    ['42', 'not a number'],
  ])('rejects %j: %s', (text, words) => {
    const check = checkTaskDefinition(text);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.problem.message).toContain(words);
  });

  it('points YAML users to `gpuscale task submit`', () => {
    const check = checkTaskDefinition('name: sweep\nmodel: m\n');
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.problem.message).toMatch(/^Not valid JSON at line 1, column 1 \(character 1\): expected a value/);
    expect(check.problem.message).toContain('gpuscale task submit FILE');
    // a JSON-looking text with a typo gets no YAML hint
    const typo = checkTaskDefinition('{"name": sweep}');
    expect(!typo.ok && typo.problem.message).not.toContain('YAML');
  });
});

describe('positions in a JSON text', () => {
  it.each([
    ['abc', 0, 1, 1],
    ['abc', 2, 1, 3],
    ['a\nbc\nd', 3, 2, 2],
    ['a\nbc\nd', 5, 3, 1],
    ['a\n', 2, 2, 1],
  ])('offset %#: lineColumn and offsetOf are inverse', (text, offset, line, column) => {
    expect(lineColumn(text, offset)).toEqual({ line, column });
    expect(offsetOf(text, line, column)).toBe(offset);
  });

  const text = '{"a": 1,\n "b" 2}';
  it.each([
    ['Unexpected number in JSON at position 14', { position: 14, line: 2, column: 6 }], // V8 (Node 20)
    ["Expected ':' after property name in JSON at position 14 (line 2 column 6)", { position: 14, line: 2, column: 6 }], // newer V8
    ["JSON.parse: expected ':' after property name in object at line 2 column 6 of the JSON data", { position: 14, line: 2, column: 6 }], // Firefox
    ['Unexpected end of JSON input', { position: text.length, line: 2, column: 8 }],
    ["JSON Parse error: Expected ':' before value in object property definition", null], // Safari: no place
  ])('reads the place in the engine message %j', (message, place) => {
    expect(jsonErrorPlace(text, message)).toEqual(place);
  });
});

describe('apiErrorText', () => {
  it.each([
    [invalid('benchmark.duration_seconds', 'expected a positive number of seconds (line 12)'),
      'benchmark.duration_seconds: expected a positive number of seconds (line 12)'],
    [invalid('body', 'malformed JSON at line 1, column 13: unexpected end of input'),
      'malformed JSON at line 1, column 13: unexpected end of input'],
    [invalid('parameters', 'parameter combination 0 (tensor-parallel-size=64) needs 64 GPUs but this machine has 4', 409, 'resource_exhausted'),
      'parameters: parameter combination 0 (tensor-parallel-size=64) needs 64 GPUs but this machine has 4'],
    [invalid('bogus', 'bogus: unknown field'), 'bogus: unknown field'],
    [new ApiError(503, 'unavailable', 'the task manager is not running'), 'the task manager is not running'],
    [new Error('boom'), 'boom'],
  ])('shows %s as %j', (error, text) => {
    expect(apiErrorText(error)).toBe(text);
  });
});

describe('submitTaskDefinition', () => {
  function fakeApi(answer: (text: string) => Promise<Task>) {
    const sent: string[] = [];
    return { sent, api: { submitTask: (text: string) => { sent.push(text); return answer(text); } } };
  }

  it('sends nothing when the text is not JSON', async () => {
    const { api, sent } = fakeApi(async () => task([]));
    const outcome = await submitTaskDefinition(api, '{"name": "x",}');
    expect(outcome.kind).toBe('invalid');
    expect(sent).toEqual([]);
  });

  it('sends the text as typed and returns the created task', async () => {
    const { api, sent } = fakeApi(async () => task([], { id: 12, status: 'queued' }));
    const outcome = await submitTaskDefinition(api, EXAMPLE_TASK);
    expect(sent).toEqual([EXAMPLE_TASK]);
    expect(outcome).toMatchObject({ kind: 'created', task: { id: 12 } });
  });

  it.each([
    [invalid('benchmark.duration_seconds', 'expected a positive number of seconds (line 2)'), 400,
      'benchmark.duration_seconds: expected a positive number of seconds (line 2)'],
    [invalid('parameters', 'needs 64 GPUs but this machine has 4', 409, 'resource_exhausted'), 409,
      'parameters: needs 64 GPUs but this machine has 4'],
    [new ApiError(0, 'unreachable', 'Cannot reach the gpuscale daemon'), 0, 'Cannot reach the gpuscale daemon'],
  ])('returns the API\'s rejection %#', async (error, status, message) => {
    const { api } = fakeApi(async () => { throw error; });
    expect(await submitTaskDefinition(api, '{"name": "x"}')).toEqual({ kind: 'rejected', status, message });
  });
});

describe('cancelling a task', () => {
  it.each([
    ['queued', true],
    ['running', true],
    ['succeeded', false],
    ['failed', false],
    ['cancelled', false],
    ['', false],
  ])('offers Cancel for status %j: %s', (status, expected) => {
    expect(isCancellable(status)).toBe(expected);
  });

  it('says what cancelling does to this task', () => {
    expect(cancelQuestion(summary({ id: 3, name: 'sweep', experiments_total: 6, experiments_done: 2, experiments_running: 1 })))
      .toBe('Cancel task 3 (sweep)? 1 running experiment(s) are stopped and their GPUs released; ' +
        '3 queued experiment(s) are dropped; 2 ended experiment(s) keep their results. This cannot be undone.');
    expect(cancelQuestion(summary({ id: 4, name: 'q', experiments_total: 2, experiments_done: 0, experiments_running: 0 })))
      .toBe('Cancel task 4 (q)? 2 queued experiment(s) are dropped. This cannot be undone.');
  });

  function cancelApi(answer: () => Promise<Task>) {
    const ids: number[] = [];
    return { ids, api: { cancelTask: (id: number) => { ids.push(id); return answer(); } } };
  }

  it('asks first and sends nothing when the user declines', async () => {
    const { api, ids } = cancelApi(async () => task([]));
    const asked: string[] = [];
    const outcome = await cancelTaskAfterConfirm(api, summary({ id: 3 }), (q) => { asked.push(q); return false; });
    expect(outcome).toEqual({ kind: 'declined' });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('Cancel task 3');
    expect(ids).toEqual([]);
  });

  it('cancels after confirmation and returns the cancelled task', async () => {
    const { api, ids } = cancelApi(async () => task([], { id: 3, status: 'cancelled' }));
    const outcome = await cancelTaskAfterConfirm(api, summary({ id: 3 }), () => true);
    expect(ids).toEqual([3]);
    expect(outcome).toMatchObject({ kind: 'cancelled', task: { status: 'cancelled' } });
  });

  it('returns the API\'s message when the task ended meanwhile (409)', async () => {
    const { api } = cancelApi(async () => {
      throw new ApiError(409, 'failed_precondition', 'task 3 already ended (succeeded)', 'id');
    });
    expect(await cancelTaskAfterConfirm(api, summary({ id: 3 }), () => true)).toEqual({
      kind: 'failed', status: 409, message: 'Could not cancel task 3: task 3 already ended (succeeded)' });
  });
});

describe('the Cancel button\'s outcome line and task status', () => {
  it('says nothing when declined, the task id when cancelled, the API\'s message when failed', () => {
    expect(cancelOutcomeLine({ kind: 'declined' })).toBeNull();
    expect(cancelOutcomeLine({ kind: 'cancelled', task: task([], { id: 7, status: 'cancelled' }) }))
      .toEqual({ text: 'Task 7 cancelled.', failed: false });
    expect(cancelOutcomeLine({ kind: 'failed', status: 409, message: 'Could not cancel task 7: task 7 already ended (failed)' }))
      .toEqual({ text: 'Could not cancel task 7: task 7 already ended (failed)', failed: true });
  });

  it('turns a 409 from the API into the failed line end to end', async () => {
    const api = { cancelTask: async (): Promise<Task> => {
      throw new ApiError(409, 'failed_precondition', 'task 5 already ended (succeeded)', 'id');
    } };
    expect(cancelOutcomeLine(await cancelTaskAfterConfirm(api, summary({ id: 5 }), () => true)))
      .toEqual({ text: 'Could not cancel task 5: task 5 already ended (succeeded)', failed: true });
  });

  it.each([
    [null, true],
    ['queued', true],
    ['running', true],
    ['succeeded', false],
    ['failed', false],
    ['cancelled', false],
  ])('loads the task again while its status is %j: %s', (status, expected) => {
    expect(taskStatusPending(status)).toBe(expected);
  });

  it.each([
    [null, { id: 3, status: 'running' }, false], // nothing known yet
    [{ id: 3, status: 'running' }, { id: 3, status: 'cancelled' }, false], // news
    [{ id: 3, status: 'queued' }, { id: 3, status: 'running' }, false],
    [{ id: 3, status: 'cancelled' }, { id: 3, status: 'running' }, true], // sent before the DELETE
    [{ id: 3, status: 'succeeded' }, { id: 3, status: 'queued' }, true],
    [{ id: 3, status: 'cancelled' }, { id: 3, status: 'cancelled' }, false],
    [{ id: 3, status: 'cancelled' }, { id: 4, status: 'running' }, false], // another task
  ])('known %j, answer %j: stale %s', (known, answer, expected) => {
    expect(isStaleTaskAnswer(known, answer)).toBe(expected);
  });
});
