// End-to-end: a daemon with an API token. The dashboard meets a 401, asks for the token,
// re-asks when it is wrong, then shows the data and opens the live stream with it. The
// New task form POSTs with the token too and opens the new task's page.

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Task, TaskSummary } from '../../src/api/types';
import { launchBrowser, newPage, screenshot } from './browser';
import { Daemon } from './daemon';
import { slowTask } from './task_defs';

const TOKEN = 'e2e-secret-token';
let daemon: Daemon;
let browser: Browser;

function noServices(stateDir: string): string {
  return `gpu:\n  backend: simulated\napi:\n  listen: "127.0.0.1:0"\nstate_dir: ${JSON.stringify(stateDir)}\n` +
    'loop_interval_seconds: 1\nservices: []\n';
}

beforeAll(async () => {
  const problem = Daemon.check();
  if (problem) throw new Error(`cannot run the dashboard e2e tests: ${problem}`);
  daemon = new Daemon({ config: noServices, token: TOKEN });
  await daemon.start();
  browser = await launchBrowser();
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

describe('dashboard with an API token', () => {
  it('prompts for the token after a 401 and then shows live data', async () => {
    expect((await fetch(`${daemon.url}/v1/gpus`)).status).toBe(401);
    const { page, errors } = await newPage(browser);
    await page.goto(`${daemon.url}/#/gpus`);
    await page.waitForSelector('#token-dialog[open]');
    await screenshot(page, 'token-prompt');
    await page.fill('#token-input', 'wrong-token');
    await page.click('#token-dialog button[type=submit]');
    await page.waitForSelector('#token-dialog[open] >> text=rejected');
    await page.fill('#token-input', TOKEN);
    await page.click('#token-dialog button[type=submit]');
    await page.waitForSelector('.gpu-card');
    await page.waitForSelector('#stream-status[data-status="open"]');
    expect(await page.evaluate(() => window.sessionStorage.getItem('gpuscale.token'))).toBe(TOKEN);
    await go(page, '#/services');
    await page.waitForSelector('text=No services yet.');
    expect(errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    await page.close();
  });

  it('submits a task through the New task form with the token', async () => {
    expect((await fetch(`${daemon.url}/v1/tasks`)).status).toBe(401);
    const { page, errors } = await newPage(browser); // a new tab: no token stored yet
    try {
      await page.goto(`${daemon.url}/#/tasks`);
      await page.waitForSelector('#token-dialog[open]');
      await page.fill('#token-input', TOKEN);
      await page.click('#token-dialog button[type=submit]');
      await page.waitForSelector('#tasks-table, .state-empty');
      const text = JSON.stringify(slowTask({ name: 'e2e-auth-form' }), null, 2);
      await page.click('#new-task summary');
      await page.fill('#task-definition', text);
      await page.click('#task-form button[type=submit]');
      await page.waitForFunction(() => /^#\/tasks\/\d+$/.test(window.location.hash));
      const id = Number((await page.evaluate(() => window.location.hash)).split('/')[2]);
      await page.waitForFunction((t) => document.querySelector('h1')?.textContent === `e2e-auth-form (task ${t})`, id);
      await page.waitForSelector('section#task-definition');
      expect(await page.isVisible('#token-dialog')).toBe(false);
      // the daemon took the POST (it answers 401 without the token): the task is there
      const { status, body: created } = await daemon.api<Task>(`/v1/tasks/${id}`);
      expect(status).toBe(200);
      expect(created.name).toBe('e2e-auth-form');
      expect(created.source_text).toBe(text);
      const { body: list } = await daemon.api<{ tasks: TaskSummary[] }>('/v1/tasks');
      expect(list.tasks.map((t) => t.id)).toEqual([id]);
      await screenshot(page, 'task-form-token');
      expect((await daemon.api(`/v1/tasks/${id}`, { method: 'DELETE' })).status).toBe(200);
      expect(errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

async function go(page: import('playwright-core').Page, hash: string): Promise<void> {
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
}
