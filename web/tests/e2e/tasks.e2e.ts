// End-to-end: the tasks and experiments views against a real `gpuscale serve` (simulated
// GPUs, no services). The test submits a small task (POST /v1/tasks: a 1 x 2 sweep of
// `gpuscale emulate` servers with 1 s benchmarks), watches the tasks view update to
// `succeeded` without a reload, checks the best experiment's highlight against the API and
// the experiment's GPU monitoring table against its JSON, and saves full-page screenshots
// (tasks, task, experiment; also at phone width) under build/screenshots/. The task actions:
// the "New task" form shows JSON errors by position and the API's 400 / 409 messages, submits
// a task that stays starting (its emulator loads for minutes) and opens its page, where the
// Cancel button (confirm dialog declined, then accepted) cancels it; the same button on a
// running task's experiment page cancels that task.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Experiment, Task, TaskSummary } from '../../src/api/types';
import { launchBrowser, newPage, screenshot } from './browser';
import { Daemon, GPUSCALE_BIN, waitFor } from './daemon';
import { slowTask } from './task_defs';

let daemon: Daemon;
let browser: Browser;
let page: Page;
let pageErrors: string[] = [];
let taskId = 0;

function tasksConfig(stateDir: string): string {
  return `gpu:
  backend: simulated
  sample_interval_seconds: 1
api:
  listen: "127.0.0.1:0"
state_dir: ${JSON.stringify(stateDir)}
loop_interval_seconds: 1
services: []
`;
}

// Two experiments (max-num-seqs 2 and 8 on one GPU each), each a 1 s closed-loop benchmark.
function sweep(): Record<string, unknown> {
  return {
    name: 'e2e-sweep',
    model: 'gpuscale/emulated-llama-3.1-8b',
    params_b: 1,
    parameters: { 'tensor-parallel-size': [1], 'max-num-seqs': [2, 8] },
    server: {
      command: [GPUSCALE_BIN, 'emulate', '--port', '{port}', '--model', '{model}', '--max-batch-size',
        '{max-num-seqs}', '--startup-seconds', '0.3', '--drain-seconds', '0.5'],
      startup_timeout_seconds: 30,
    },
    benchmark: { concurrency: 8, input_tokens: 64, output_tokens: 16, duration_seconds: 1 },
    gpu_wait_timeout_seconds: 60,
    objective: { maximize: 'throughput' },
  };
}

// Types `text` into the New task form (opening it), submits with the button and returns
// the message that then appears under the textarea (a different one than before).
async function submitForm(text: string): Promise<string> {
  if (!(await page.$eval('#new-task', (d) => (d as HTMLDetailsElement).open))) await page.click('#new-task summary');
  const before = (await page.textContent('#task-definition-error')) ?? '';
  await page.fill('#task-definition', text);
  await page.click('#task-form button[type=submit]');
  await page.waitForFunction((old) => {
    const now = document.querySelector('#task-definition-error')?.textContent ?? '';
    return now !== '' && now !== old;
  }, before);
  return (await page.textContent('#task-definition-error')) ?? '';
}

async function go(hash: string): Promise<void> {
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
}

beforeAll(async () => {
  const problem = Daemon.check();
  if (problem) throw new Error(`cannot run the tasks e2e tests: ${problem}`);
  daemon = new Daemon({ config: tasksConfig });
  await daemon.start();
  browser = await launchBrowser();
  ({ page, errors: pageErrors } = await newPage(browser));
  await page.goto(`${daemon.url}/#/tasks`);
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  // a task a failed test left running: cancel it so its server stops with the daemon
  const tasks = await daemon?.api<{ tasks: TaskSummary[] }>('/v1/tasks').catch(() => null);
  for (const t of tasks?.body.tasks ?? []) {
    if (t.status === 'queued' || t.status === 'running') await daemon.api(`/v1/tasks/${t.id}`, { method: 'DELETE' }).catch(() => null);
  }
  await daemon?.stop();
});

describe('tasks and experiments views against gpuscale serve', () => {
  it('says how to submit a task while there is none', async () => {
    await page.waitForSelector('.state-empty');
    expect(await page.textContent('.state-empty')).toContain('gpuscale task submit FILE');
    expect(await page.textContent('.state-empty code')).toBe('gpuscale task submit FILE');
    expect(await page.textContent('#view')).not.toContain('`'); // the form's hint too
  });

  it('shows a submitted task and follows it to succeeded without a reload', async () => {
    await page.evaluate(() => {
      (window as unknown as { e2eMarker: number }).e2eMarker = 7; // lost on any reload
    });
    const submitted = await daemon.api<Task>('/v1/tasks', { method: 'POST', body: JSON.stringify(sweep()) });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    taskId = submitted.body.id;
    expect(submitted.body.experiments_total).toBe(2);
    const row = `#tasks-table tr[data-task-id="${taskId}"]`;
    await page.waitForSelector(row, { timeout: 15_000 });
    await page.waitForSelector(`${row}[data-status="succeeded"]`, { timeout: 110_000 });
    expect(await page.evaluate(() => (window as unknown as { e2eMarker?: number }).e2eMarker)).toBe(7);
    const { body } = await daemon.api<{ tasks: TaskSummary[] }>('/v1/tasks');
    const summary = body.tasks.find((t) => t.id === taskId);
    expect(summary).toMatchObject({ status: 'succeeded', experiments_done: 2 });
    expect(summary?.best_experiment_id).not.toBeNull();
    const text = await page.textContent(row);
    expect(text).toContain('e2e-sweep');
    expect(text).toContain('2 / 2 done');
    await page.waitForFunction((r) => /\d tok\/s/.test(document.querySelector(r)?.textContent ?? ''), row);
    // the best experiment by its id, as `gpuscale task list` shows it, not its index in the task
    expect(await page.textContent(`${row} .best-cell a`)).toBe(`#${summary?.best_experiment_id}`);
    await screenshot(page, 'tasks');
  }, 150_000);

  it('highlights the best experiment in the task view', async () => {
    const { body: task } = await daemon.api<Task>(`/v1/tasks/${taskId}`);
    await go(`#/tasks/${taskId}`);
    await page.waitForSelector('#experiments-table tbody tr');
    expect(await page.locator('#experiments-table tbody tr').count()).toBe(task.experiments.length);
    const best = await page.$$eval('#experiments-table tr.best', (rows) => rows.map((r) => Number((r as HTMLElement).dataset.experimentId)));
    expect(best).toEqual([task.best_experiment_id]);
    expect(await page.textContent('#experiments-table tr.best')).toContain('best');
    const monitored = task.experiments.filter((e) => e.gpu_monitoring !== null).length;
    expect(monitored).toBeGreaterThan(0);
    expect(await page.locator('#experiments-table .monitor-badge').count()).toBe(monitored);
    expect(await page.textContent('#experiments-table')).toMatch(/\d+(\.\d)? req\/s/);
    const labels = await page.$$eval('#experiments-table tbody tr td:first-child a', (as) => as.map((a) => a.textContent));
    expect(labels).toEqual([...task.experiments].sort((a, b) => a.index - b.index).map((e) => `#${e.id}`));
    await page.waitForFunction(() => Number(document.querySelector<HTMLElement>('#task-chart .chart')?.dataset.points) > 0);
    await screenshot(page, 'task');
  });

  it('shows the best experiment with its GPU monitoring table', async () => {
    const { body: task } = await daemon.api<Task>(`/v1/tasks/${taskId}`);
    await page.click('#experiments-table tr.best td:first-child a');
    await page.waitForFunction((id) => window.location.hash === `#/experiments/${id}`, task.best_experiment_id);
    const { body: experiment } = await daemon.api<Experiment>(`/v1/experiments/${task.best_experiment_id}`);
    await page.waitForSelector('#monitoring-table tbody tr');
    const gpus = Object.keys(experiment.gpu_monitoring?.gpus ?? {}).sort((a, b) => Number(a) - Number(b));
    expect(gpus.length).toBe(experiment.gpu_info?.count);
    const rows = await page.$$eval('#monitoring-table tbody tr', (trs) => trs.map((r) => ({
      gpu: (r as HTMLElement).dataset.gpu, text: r.textContent ?? '' })));
    expect(rows.map((r) => r.gpu)).toEqual(gpus);
    for (const row of rows) {
      expect(row.text).toMatch(/(\d+ %|—)/);
      expect(row.text).toMatch(/(MiB|GiB|—)/);
      expect(row.text).toMatch(/(°C|—)/);
      expect(row.text).toMatch(/( W|—)/);
    }
    expect(await page.textContent('#gpu-info-table')).toContain(experiment.gpu_info?.model ?? '?');
    expect(await page.textContent('#bench-summary')).toMatch(/req\/s/);
    expect(await page.textContent('#experiment-log')).toBe(experiment.log_path);
    // charts of the window while the history holds it (it does: the run ended seconds ago)
    await page.waitForFunction(() => [...document.querySelectorAll<HTMLElement>('#experiment-charts .chart')]
      .some((c) => Number(c.dataset.points) > 0), undefined, { timeout: 20_000 });
    await screenshot(page, 'experiment');
  });

  it('shows a failed experiment\'s message instead of charts, and links its events to the task', async () => {
    const failing = { ...sweep(), name: 'e2e-failing', parameters: { 'tensor-parallel-size': [1] },
      server: { command: [GPUSCALE_BIN, 'emulate', '--port', '{port}', '--no-such-flag'], startup_timeout_seconds: 30 } };
    const submitted = await daemon.api<Task>('/v1/tasks', { method: 'POST', body: JSON.stringify(failing) });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const id = submitted.body.id;
    const experimentId = submitted.body.experiments[0]?.id ?? 0;
    const ended = await waitFor(async () => (await daemon.api<Task>(`/v1/tasks/${id}`)).body.status === 'failed', 60_000);
    expect(ended, `task ${id} did not fail`).toBe(true);
    await go(`#/experiments/${experimentId}`);
    await page.waitForSelector('#experiment-failure:not([hidden])');
    expect(await page.textContent('#experiment-failure')).toMatch(/^Failed: /);
    await page.waitForSelector('#history-note:not([hidden])');
    expect(await page.textContent('#history-note')).toContain('No GPU charts');
    expect(await page.isHidden('#experiment-charts')).toBe(true);
    expect(await page.locator('#experiment-charts canvas:visible').count()).toBe(0);
    expect(await page.textContent('h1')).toBe(`Experiment #${experimentId} of task ${id}`);
    await screenshot(page, 'experiment-failed');
    // the events view links the experiment's events to its task and to itself
    await go('#/events?kind=experiment_failed');
    const row = page.locator('#events-table tr[data-kind="experiment_failed"]').first();
    await row.waitFor();
    expect(await row.locator('a.task-link').getAttribute('href')).toBe(`#/tasks/${id}`);
    expect(await row.locator('a.experiment-link').getAttribute('href')).toBe(`#/experiments/${experimentId}`);
    expect(await row.locator('a.experiment-link').textContent()).toBe(`#${experimentId}`);
  }, 90_000);

  it('fits a phone-width screen', async () => {
    const { body: task } = await daemon.api<Task>(`/v1/tasks/${taskId}`);
    const phone = await newPage(browser, 390, 844);
    try {
      const views = [['#/tasks', 'tasks-phone', '#tasks-table'], [`#/tasks/${taskId}`, 'task-phone', '#experiments-table'],
        [`#/experiments/${task.best_experiment_id}`, 'experiment-phone', '#monitoring-table']] as const;
      for (const [hash, name, selector] of views) {
        await phone.page.goto(`${daemon.url}/${hash}`);
        await phone.page.waitForSelector(selector);
        const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow).toBeLessThanOrEqual(0);
        await screenshot(phone.page, name);
      }
      expect(phone.errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    } finally {
      await phone.page.close();
    }
  });

  it('shows JSON errors by position and the API\'s 400 / 409 messages beside the form', async () => {
    await go('#/tasks');
    await page.waitForSelector('#tasks-table');
    const before = (await daemon.api<{ tasks: TaskSummary[] }>('/v1/tasks')).body.tasks.length;
    expect(await submitForm('{\n  "name": "x",\n}'))
      .toBe("Not valid JSON at line 3, column 1 (character 18): a trailing comma before '}' is not allowed in JSON.");
    expect(await page.getAttribute('#task-definition', 'aria-invalid')).toBe('true');
    expect(await page.$eval('#task-definition', (t) => (t as HTMLTextAreaElement).selectionStart)).toBe(17);

    const badField = JSON.stringify(slowTask({ benchmark: { duration_seconds: -1 } }), null, 2);
    const api400 = await daemon.api<{ error: { field: string; message: string } }>('/v1/tasks', { method: 'POST', body: badField });
    expect(api400.status).toBe(400);
    expect(await submitForm(badField)).toBe(`${api400.body.error.field}: ${api400.body.error.message}`);

    expect(await submitForm(JSON.stringify(slowTask({ params_b: 1000, parameters: { 'tensor-parallel-size': [64] } }))))
      .toMatch(/^parameters: .*64 GPUs/);
    expect((await daemon.api<{ tasks: TaskSummary[] }>('/v1/tasks')).body.tasks.length).toBe(before);
    await screenshot(page, 'task-form-errors');
  });

  it('submits a task through the form and cancels it with the button', async () => {
    await go('#/tasks');
    const text = JSON.stringify(slowTask(), null, 2);
    if (!(await page.$eval('#new-task', (d) => (d as HTMLDetailsElement).open))) await page.click('#new-task summary');
    await page.fill('#task-definition', text);
    await page.press('#task-definition', 'Control+Enter'); // the keyboard path
    await page.waitForFunction(() => /^#\/tasks\/\d+$/.test(window.location.hash));
    const newId = Number((await page.evaluate(() => window.location.hash)).split('/')[2]);
    expect(newId).toBeGreaterThan(taskId);
    const { body: created } = await daemon.api<Task>(`/v1/tasks/${newId}`);
    expect(created.name).toBe('e2e-form-cancel');
    expect(created.source_text).toBe(text); // sent as typed
    await page.waitForSelector('#cancel-task', { state: 'visible' });

    const asked: string[] = [];
    page.once('dialog', (d) => { asked.push(d.message()); void d.dismiss(); });
    await page.click('#cancel-task');
    await page.waitForFunction(() => !document.querySelector<HTMLButtonElement>('#cancel-task')?.disabled);
    expect(asked[0]).toContain(`Cancel task ${newId} (e2e-form-cancel)?`);
    expect((await daemon.api<Task>(`/v1/tasks/${newId}`)).body.status).not.toBe('cancelled');

    page.once('dialog', (d) => { asked.push(d.message()); void d.accept(); });
    await page.focus('#cancel-task');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.view-header [data-status="cancelled"]', { timeout: 20_000 });
    await page.waitForSelector('#cancel-task', { state: 'hidden' });
    // The event stream can refresh the page to "cancelled" before the DELETE answer arrives;
    // the outcome line is written when that answer does.
    await page.waitForSelector('#cancel-message:not([hidden])');
    expect(asked).toHaveLength(2);
    expect(await page.textContent('#cancel-message')).toBe(`Task ${newId} cancelled.`);
    const { body: cancelled } = await daemon.api<Task>(`/v1/tasks/${newId}`);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.experiments.every((e) => e.status === 'cancelled' || e.status === 'failed')).toBe(true);
    await screenshot(page, 'task-cancelled');

    // an ended task offers no Cancel; the API would answer 409
    await go(`#/tasks/${taskId}`);
    await page.waitForSelector('#experiments-table');
    expect(await page.isHidden('#cancel-task')).toBe(true);
    expect((await daemon.api(`/v1/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(409);
  });

  it('cancels a running task from its experiment page', async () => {
    const submitted = await daemon.api<Task>('/v1/tasks', { method: 'POST', body: JSON.stringify(slowTask({ name: 'e2e-experiment-cancel' })) });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const id = submitted.body.id;
    const experimentId = submitted.body.experiments[0]?.id ?? 0;
    expect(experimentId).toBeGreaterThan(0);
    const running = await waitFor(async () => (await daemon.api<Task>(`/v1/tasks/${id}`)).body.status === 'running', 20_000);
    expect(running, `task ${id} did not start`).toBe(true);
    await go(`#/experiments/${experimentId}`);
    await page.waitForFunction((t) => document.querySelector('h1')?.textContent?.endsWith(`of task ${t}`), id);
    await page.waitForSelector('#cancel-task', { state: 'visible' });
    expect(await page.isHidden('#cancel-message')).toBe(true);

    const asked: string[] = [];
    page.once('dialog', (d) => { asked.push(d.message()); void d.dismiss(); });
    await page.click('#cancel-task');
    await page.waitForFunction(() => !document.querySelector<HTMLButtonElement>('#cancel-task')?.disabled);
    expect(asked[0]).toContain(`Cancel task ${id} (e2e-experiment-cancel)?`);
    expect(await page.isHidden('#cancel-message')).toBe(true);
    expect((await daemon.api<Task>(`/v1/tasks/${id}`)).body.status).toBe('running');

    page.once('dialog', (d) => { asked.push(d.message()); void d.accept(); });
    await page.focus('#cancel-task');
    await page.keyboard.press('Enter');
    // The event stream can refresh the page before the DELETE answer arrives: wait for the
    // outcome line, written when that answer does.
    await page.waitForSelector('#cancel-message:not([hidden])', { timeout: 20_000 });
    expect(asked).toHaveLength(2);
    expect(await page.textContent('#cancel-message')).toBe(`Task ${id} cancelled.`);
    await page.waitForSelector('#cancel-task', { state: 'hidden' });
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H1'); // focus stays on the page
    const { body: cancelled } = await daemon.api<Task>(`/v1/tasks/${id}`);
    expect(cancelled.status).toBe('cancelled');
    const { body: experiment } = await daemon.api<Experiment>(`/v1/experiments/${experimentId}`);
    expect(['cancelled', 'failed']).toContain(experiment.status);
    await page.waitForSelector(`.view-header [data-status="${experiment.status}"]`, { timeout: 20_000 });
    await screenshot(page, 'experiment-cancelled');

    // the experiment page of an ended task offers no Cancel
    const { body: ended } = await daemon.api<Task>(`/v1/tasks/${taskId}`);
    await go(`#/experiments/${ended.experiments[0]?.id ?? 0}`);
    await page.waitForFunction((t) => document.querySelector('h1')?.textContent?.endsWith(`of task ${t}`), taskId);
    await page.waitForSelector('#bench-summary');
    expect(await page.isHidden('#cancel-task')).toBe(true);
    expect(await page.isHidden('#cancel-message')).toBe(true);
  });

  it('fits the open New task form on a phone-width screen', async () => {
    const phone = await newPage(browser, 390, 844);
    try {
      await phone.page.goto(`${daemon.url}/#/tasks`);
      await phone.page.waitForSelector('#tasks-table');
      await phone.page.click('#new-task summary');
      await phone.page.click('#task-example');
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      expect(await phone.page.getAttribute('label[for="task-definition"]', 'for')).toBe('task-definition');
      await screenshot(phone.page, 'tasks-form-phone');
      expect(phone.errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    } finally {
      await phone.page.close();
    }
  });

  it('raised no uncaught page errors', () => {
    expect(pageErrors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
  });
});
