// End-to-end: a daemon with an API token. The dashboard meets a 401, asks for the token,
// re-asks when it is wrong, then shows the data and opens the live stream with it.

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot } from './browser';
import { Daemon } from './daemon';

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
});

async function go(page: import('playwright-core').Page, hash: string): Promise<void> {
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
}
