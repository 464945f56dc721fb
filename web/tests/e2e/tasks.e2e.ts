// End-to-end: the tasks and experiments views against a real `gpuscale serve` (simulated
// GPUs, no services). The test submits a small task (POST /v1/tasks: a 1 x 2 sweep of
// `gpuscale emulate` servers with 1 s benchmarks), watches the tasks view update to
// `succeeded` without a reload, checks the best experiment's highlight against the API and
// the experiment's GPU monitoring table against its JSON, and saves full-page screenshots
// (tasks, task, experiment; also at phone width) under build/screenshots/.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Experiment, Task, TaskSummary } from '../../src/api/types';
import { launchBrowser, newPage, screenshot } from './browser';
import { Daemon, GPUSCALE_BIN } from './daemon';

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
  await daemon?.stop();
});

describe('tasks and experiments views against gpuscale serve', () => {
  it('says how to submit a task while there is none', async () => {
    await page.waitForSelector('.state-empty');
    expect(await page.textContent('.state-empty')).toContain('gpuscale task submit FILE');
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

  it('raised no uncaught page errors', () => {
    expect(pageErrors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
  });
});
