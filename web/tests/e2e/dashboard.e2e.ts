// End-to-end: the dashboard served by a real `gpuscale serve` (simulated GPUs, emulated
// replicas), driven in Chromium. The tests run in order against one daemon and one page;
// each saves a full-page screenshot under build/screenshots/.

import { spawn, type ChildProcess } from 'node:child_process';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuSnapshot, Replica, Rule, Service } from '../../src/api/types';
import { formatMib } from '../../src/format';
import { launchBrowser, newPage, screenshot } from './browser';
import { drawnCharts, firstReading, overlaps, timeLabelBoxes } from './charts';
import { Daemon, GPUSCALE_BIN, sleep } from './daemon';

let daemon: Daemon;
let browser: Browser;
let page: Page;
let pageErrors: string[] = [];
let bench: ChildProcess | null = null;
let daemonStartedAt = 0; // Unix seconds

async function go(hash: string): Promise<void> {
  await page.evaluate((h) => {
    window.location.hash = h;
  }, hash);
}

// One completion through the daemon's gateway (the `demo` service serves model `demo`).
async function completion(): Promise<number> {
  const response = await fetch(`${daemon.gatewayUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'demo', prompt: 'hi', max_tokens: 4 }),
  });
  await response.text();
  return response.status;
}

// The service page's charts need the daemon's history endpoint; say so plainly when the
// binary predates it (GPUSCALE_BIN) rather than failing on an empty chart.
async function requireHistory(): Promise<void> {
  const { status } = await daemon.api('/v1/services/demo/history');
  expect(status, `GET /v1/services/demo/history answered ${status}: ${GPUSCALE_BIN} has no history endpoint`)
    .toBe(200);
}

async function statText(key: string): Promise<string> {
  return (await page.textContent(`#gateway-stats [data-stat="${key}"] .stat-value`)) ?? '';
}

async function fillRule(values: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(values)) {
    const field = page.locator(`#rule-form [name="${name}"]`);
    if ((await field.evaluate((e) => e.tagName)) === 'SELECT') await field.selectOption(value);
    else await field.fill(value);
  }
  await page.click('#rule-form button[type=submit]');
}

beforeAll(async () => {
  const problem = Daemon.check();
  if (problem) throw new Error(`cannot run the dashboard e2e tests: ${problem}`);
  daemon = new Daemon();
  await daemon.start();
  daemonStartedAt = Date.now() / 1000;
  browser = await launchBrowser();
  ({ page, errors: pageErrors } = await newPage(browser));
  await page.goto(`${daemon.url}/`);
});

function stopBench(): void {
  if (bench?.pid && bench.exitCode === null) {
    try {
      process.kill(-bench.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

afterAll(async () => {
  stopBench();
  await browser?.close().catch(() => undefined);
  await daemon?.stop();
});

describe('dashboard against gpuscale serve', () => {
  it('lists the same GPUs as /v1/gpus', async () => {
    const { body } = await daemon.api<GpuSnapshot>('/v1/gpus');
    expect(body.gpus.length).toBeGreaterThan(0);
    await page.waitForSelector('.gpu-card');
    await page.waitForFunction((n) => document.querySelectorAll('.gpu-card').length === n, body.gpus.length);
    const cards = await page.$$eval('.gpu-card', (els) => els.map((e) => ({
      index: Number((e as HTMLElement).dataset.gpuIndex),
      name: e.querySelector('.gpu-name')?.textContent ?? '',
      uuid: e.querySelector('.uuid')?.textContent ?? '',
      text: e.textContent ?? '',
    })));
    expect(cards.map((c) => c.index)).toEqual(body.gpus.map((g) => g.index));
    expect(cards.map((c) => c.name)).toEqual(body.gpus.map((g) => g.name));
    expect(cards.map((c) => c.uuid)).toEqual(body.gpus.map((g) => g.uuid));
    cards.forEach((card, i) => {
      const api = body.gpus[i];
      expect(card.text).toMatch(/Utilization(\d+ %|—)/);
      expect(card.text).toContain(`/ ${formatMib(api?.memory_total_mb)}`);
      expect(card.text).toMatch(/Temperature(\d+ °C|—)/);
      expect(card.text).toMatch(/Power(\d+ W|—)/);
      expect(card.text).toContain(`Type${api?.type ?? '—'}`);
      expect(card.text).toMatch(/Price(\d+\.\d\d \/ GPU-h|—)/);
    });
  });

  it('lists each replica\'s process on the card of the GPU it leased, linked to its service', async () => {
    // Both services start one replica; their pids come from the API, as the page's links do.
    const replicas: { service: string; replica: Replica }[] = [];
    await expect.poll(async () => {
      replicas.length = 0;
      for (const service of ['demo', 'ruled']) {
        const { body } = await daemon.api<{ replicas: Replica[] }>(`/v1/services/${service}/replicas`);
        const running = body.replicas.find((r) => r.pid > 0 && r.gpus.length > 0);
        if (running) replicas.push({ service, replica: running });
      }
      return replicas.length;
    }, { timeout: 30_000 }).toBe(2);
    for (const { service, replica } of replicas) {
      const gpu = replica.gpus[0];
      const row = `.gpu-card[data-gpu-index="${gpu}"] table.processes tr[data-pid="${replica.pid}"]`;
      await page.waitForSelector(row, { timeout: 15_000 });
      const { body } = await daemon.api<GpuSnapshot>('/v1/gpus');
      const api = body.gpus.find((g) => g.index === gpu)?.processes?.find((p) => p.pid === replica.pid);
      expect(api, `GPU ${gpu} in /v1/gpus lists pid ${replica.pid}`).toBeDefined();
      const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent ?? ''));
      expect(cells[0]).toBe(String(replica.pid));
      expect(cells[1]).toBe(api?.name); // "SERVICE replica ID" on simulated GPUs
      expect(cells[1]).toContain(replica.id);
      expect(cells[2]).toMatch(/^(\d+ MiB|\d+\.\d GiB|—)$/);
      expect(await page.getAttribute(`${row} a`, 'href')).toBe(`#/services/${service}`);
      expect(await page.getAttribute(`${row}`, 'data-service')).toBe(service);
    }
    // The GPUs nobody leased say so.
    const leased = new Set(replicas.map((r) => r.replica.gpus[0]));
    const { body } = await daemon.api<GpuSnapshot>('/v1/gpus');
    for (const gpu of body.gpus.filter((g) => !leased.has(g.index) && (g.processes ?? []).length === 0)) {
      expect(await page.textContent(`.gpu-card[data-gpu-index="${gpu.index}"] .processes`)).toBe('no processes');
    }
  });

  it('draws the GPU history charts with data points', async () => {
    await page.waitForFunction(() => {
      const charts = [...document.querySelectorAll<HTMLElement>('#gpu-charts .chart')];
      return charts.length === 4 && charts.every((c) => Number(c.dataset.points) > 0);
    }, undefined, { timeout: 30_000 });
    expect(await page.locator('#gpu-charts .chart canvas').count()).toBeGreaterThanOrEqual(4);
    // one line per GPU: the legend lists them
    const { body } = await daemon.api<GpuSnapshot>('/v1/gpus');
    const legend = await page.locator('#gpu-charts .chart').first().locator('.u-legend .u-series').count();
    expect(legend).toBe(body.gpus.length + 1); // + the time column
    await screenshot(page, 'gpus');
  });

  it('lists services', async () => {
    await go('#/services');
    await page.waitForSelector('#services-table tr[data-service="demo"]');
    await page.waitForSelector('#services-table tr[data-service="ruled"]');
    await screenshot(page, 'services');
  });

  it('adds a rule through the form', async () => {
    await go('#/services/ruled');
    await page.waitForSelector('#rule-form');
    await fillRule({ name: 'e2e-queue-high', source: 'inference_framework', metric: 'vllm:num_requests_waiting',
      aggregation: 'average', comparator: 'GREATER_THAN', threshold: '8', step_size: '1', cooldown_seconds: '30' });
    await page.waitForSelector('#rules-table td:text-is("e2e-queue-high")');
    const { body } = await daemon.api<{ rules: Rule[] }>('/v1/services/ruled/rules');
    const stored = body.rules.find((r) => r.name === 'e2e-queue-high');
    expect(stored).toMatchObject({ metric: 'vllm:num_requests_waiting', comparator: 'GREATER_THAN', threshold: 8,
      step_size: 1, cooldown_seconds: 30, enabled: true });
  });

  it('shows the API\'s message beside a bad threshold', async () => {
    await fillRule({ name: 'e2e-bad', threshold: 'high' });
    const slot = page.locator('#rule-form [data-error-for="threshold"]');
    await expect.poll(async () => (await slot.textContent()) ?? '', { timeout: 10_000 }).not.toBe('');
    const direct = await daemon.api<{ error: { message: string; field: string } }>('/v1/services/ruled/rules', {
      method: 'POST',
      body: JSON.stringify({ name: 'e2e-bad', source: 'inference_framework', metric: 'vllm:num_requests_waiting',
        aggregation: 'average', comparator: 'GREATER_THAN', threshold: 'high', step_size: 1, cooldown_seconds: 30,
        enabled: true }),
    });
    expect(direct.status).toBe(400);
    expect(await slot.textContent()).toBe(direct.body.error.message);
    expect(await page.getAttribute('#rule-form [name="threshold"]', 'aria-invalid')).toBe('true');
    const { body } = await daemon.api<{ rules: Rule[] }>('/v1/services/ruled/rules');
    expect(body.rules.some((r) => r.name === 'e2e-bad')).toBe(false);
    await screenshot(page, 'service-rules');
  });

  it('shows a scale-out caused by bench load live, without a reload', async () => {
    await go('#/services/demo');
    await page.waitForSelector('#replicas-table tr[data-state="ready"]', { timeout: 30_000 });
    await page.evaluate(() => {
      (window as unknown as { e2eMarker: number }).e2eMarker = 42; // lost on any reload
    });
    const before = await page.locator('#replicas-table tbody tr').count();
    const decisionsBefore = await page.locator('#decision-log .decision').count();
    const { body } = await daemon.api<{ replicas: Replica[] }>('/v1/services/demo/replicas');
    const ready = body.replicas.find((r) => r.state === 'ready');
    expect(ready).toBeDefined();
    bench = spawn(GPUSCALE_BIN, ['bench', '--url', `http://127.0.0.1:${ready?.port}`, '--concurrency', '32',
      '--duration', '20', '--no-progress'], { detached: true, stdio: 'ignore' });
    await page.waitForFunction((n) => document.querySelectorAll('#replicas-table tbody tr').length > n, before,
      { timeout: 45_000 });
    await page.waitForFunction(() => document.querySelectorAll('#replicas-table tr[data-state="ready"]').length > 1,
      undefined, { timeout: 30_000 });
    await page.waitForFunction((n) => document.querySelectorAll('#decision-log .decision').length > n,
      decisionsBefore, { timeout: 15_000 });
    expect(await page.locator('#decision-log .decision').first().textContent()).toMatch(/desired 1 -> [23]/);
    const service = await daemon.api<Service>('/v1/services/demo');
    expect(service.body.desired_replicas).toBeGreaterThan(1);
    expect(await page.evaluate(() => (window as unknown as { e2eMarker?: number }).e2eMarker)).toBe(42);
    // the history chart follows (it is refreshed every 5 s from the daemon's record)
    await requireHistory();
    await expect.poll(async () => {
      const [replicas] = await drawnCharts(page, '#history-replicas .chart');
      return Math.max(...(replicas?.series[0] ?? []).map((v) => v ?? 0));
    }, { timeout: 20_000 }).toBeGreaterThan(1);
    await screenshot(page, 'service-demo');
  });

  it('shows the gateway\'s request rate and latency on the service page', async () => {
    await requireHistory();
    expect(daemon.gatewayUrl).not.toBe('');
    // The bench has made its point; its queue on the first replica (which the gateway does
    // not see: it was sent around it) would hold our requests for seconds.
    stopBench();
    await page.waitForSelector('#gateway-panel[data-state="empty"]'); // only bench traffic, sent around it
    expect(await page.textContent('#gateway-panel')).toContain('No requests through the gateway yet');
    // A request every 200 ms until the page shows a TTFT: the daemon's windowed figures are
    // deltas between ticks, so the requests before its first sample of the service count in
    // the totals but not in the rate or quantiles.
    const statuses: number[] = [];
    let sending = true;
    const sender = (async () => {
      while (sending) {
        statuses.push(await completion());
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      await page.waitForSelector('#gateway-panel[data-state="live"]', { timeout: 15_000 });
      await page.waitForFunction(() => {
        const value = (key: string) => document.querySelector(`#gateway-stats [data-stat="${key}"] .stat-value`)?.textContent;
        const points = (key: string) => Number(document.querySelector<HTMLElement>(
          `#history-traffic .chart[data-key="${key}"]`)?.dataset.points ?? 0);
        return /^\d[\d.]* m?s$/.test(value('ttft_p50') ?? '') && points('ttft') > 0 && points('e2e') > 0 &&
          points('rate') > 0;
      }, undefined, { timeout: 30_000 });
    } finally {
      sending = false;
      await sender;
    }
    // TTFT, TPOT and e2e latency each in a chart of its own (a 2 s e2e flattened the others)
    expect(await page.$$eval('#history-traffic .chart', (charts) =>
      charts.map((c) => [(c as HTMLElement).dataset.key, (c as HTMLElement).dataset.chart]))).toEqual([
      ['rate', 'Request rate'], ['ttft', 'Time to first token'], ['tpot', 'Time per output token'],
      ['e2e', 'End-to-end latency'], ['errors', 'Error ratio'], ['in_flight', 'In flight']]);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(Number((await statText('requests_total')).replace(/,/g, ''))).toBeGreaterThan(0);
    expect(await statText('rate')).toMatch(/^\d[\d.,]* req\/s$/);
    expect(await statText('ttft_p90')).toMatch(/^\d[\d.]* m?s$/);
    expect(await statText('added_p99')).toMatch(/^\d[\d.]* (\u00b5s|ms)$/);
    expect(await statText('error_ratio')).toMatch(/ %$/);
    // the API's figures are refreshed each tick (1 s), so the last request may be missing yet
    await expect.poll(async () => (await daemon.api<Service>('/v1/services/demo')).body.gateway?.requests_total ?? 0,
      { timeout: 5_000 }).toBeGreaterThanOrEqual(statuses.length);
    await screenshot(page, 'service-demo-gateway');
  });

  it('charts metric, target and replicas recorded before the page loaded, on one time axis', async () => {
    await requireHistory();
    // The daemon has recorded the service every tick since the suite started; once it has
    // run for 40 s, a page opened now shows that history, not just what it sampled itself.
    await sleep(Math.max(0, daemonStartedAt + 40 - Date.now() / 1000) * 1000);
    const fresh = await newPage(browser, 1280, 900);
    try {
      const loadedAt = Date.now() / 1000;
      await fresh.page.goto(`${daemon.url}/#/services/demo`);
      await fresh.page.waitForSelector('#history-panel[data-state="charts"]', { timeout: 20_000 });
      const [metric, ...more] = await drawnCharts(fresh.page, '#history-metrics .chart');
      expect(more).toEqual([]); // demo's target policy reads one metric
      expect(metric?.title).toContain('vllm:num_requests_waiting');
      expect(metric?.labels).toEqual(['value', 'target']);
      const targets = metric?.series[1]?.filter((v) => v !== null) ?? [];
      expect(targets.length).toBeGreaterThan(0);
      expect(new Set(targets)).toEqual(new Set([3])); // average_value: 3 in the e2e config
      const [replicas] = await drawnCharts(fresh.page, '#history-replicas .chart');
      expect(replicas?.labels).toEqual(['desired', 'ready', 'current']);
      for (const [chart, label] of [[metric, 'value'], [replicas, 'desired'], [replicas, 'ready']] as const) {
        expect(chart ? firstReading(chart, label) : null, `${label}'s first reading`).toBeLessThan(loadedAt - 20);
      }
      expect(Math.max(...(replicas?.series[0] ?? []).map((v) => v ?? 0))).toBeGreaterThan(1); // the scale-out
      // every chart on the same time axis, reaching back before the page loaded
      const all = await drawnCharts(fresh.page, '#history-panel .chart');
      expect(all.length).toBeGreaterThanOrEqual(3);
      expect(new Set(all.map((c) => `${c.xMin}-${c.xMax}`)).size).toBe(1);
      expect(all[0]?.xMin).toBeLessThan(loadedAt - 20);
      // the history API agrees on when the service was first recorded
      const api = await daemon.api<{ t: number[]; desired: (number | null)[] }>('/v1/services/demo/history');
      expect(api.status).toBe(200);
      const apiFirst = api.body.t[api.body.desired.findIndex((v) => v !== null)] ?? Number.NaN;
      expect(apiFirst).toBeLessThan(loadedAt - 20);
      // no legend shows a dash: without a cursor a line shows its last reading, or nothing
      for (const chart of all) expect(chart.legend.filter((v) => v === '—' || v === '--'), chart.title).toEqual([]);
      // rules: the target policy reads none, so the page offers no rules form and says why
      expect(await fresh.page.locator('#rule-form').count()).toBe(0);
      expect(await fresh.page.textContent('#rules-not-used')).toContain('reads no scaling rules');
      await screenshot(fresh.page, 'service-demo-history');
      // a longer window: the same charts, now spanning the hour
      await fresh.page.selectOption('#history-window', '3600');
      await expect.poll(async () => {
        const [first] = await drawnCharts(fresh.page, '#history-replicas .chart');
        return first ? first.xMax - first.xMin : 0;
      }, { timeout: 10_000 }).toBeGreaterThanOrEqual(3599);
      expect(fresh.errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    } finally {
      await fresh.page.close();
    }
  });

  it('draws time axis labels that do not overlap at 1280 px', async () => {
    await requireHistory();
    const wide = await newPage(browser, 1280, 900);
    try {
      for (const [hash, selector] of [['#/services/demo', '#history-panel .chart'], ['#/gpus', '#gpu-charts .chart']] as const) {
        await wide.page.goto(`${daemon.url}/${hash}`);
        await wide.page.waitForFunction((s) => [...document.querySelectorAll(s)]
          .some((c) => (c as HTMLElement & { uplot?: unknown }).uplot), selector, { timeout: 30_000 });
        await wide.page.waitForTimeout(500); // a redraw after the first layout
        const charts = await timeLabelBoxes(wide.page, selector);
        expect(charts.length, hash).toBeGreaterThan(0);
        for (const chart of charts) {
          expect(chart.boxes.length, `${hash} ${chart.title}`).toBeGreaterThanOrEqual(2);
          expect(overlaps(chart.boxes), `${hash} ${chart.title}`).toEqual([]);
        }
      }
    } finally {
      await wide.page.close();
    }
  });

  it('streams events live and filters them by kind', async () => {
    await go('#/events');
    await page.waitForSelector('#events-table tr[data-kind]');
    await page.waitForSelector('#events-stream-status[data-status="open"]');
    // the stream's gateway_stats messages (every 5 s by now) are no events: no row, no kind
    expect(await page.locator('#events-table tr[data-kind="gateway_stats"]').count()).toBe(0);
    expect(await page.locator('#events-kind option[value="gateway_stats"]').count()).toBe(0);
    await screenshot(page, 'events');
    await page.selectOption('#events-kind', 'decision');
    await page.waitForFunction(() => window.location.hash === '#/events?kind=decision');
    await page.waitForSelector('#events-table tr[data-kind]');
    const kinds = await page.$$eval('#events-table tr[data-kind]', (rows) => rows.map((r) => (r as HTMLElement).dataset.kind));
    expect(new Set(kinds)).toEqual(new Set(['decision']));
  });

  it('shows the tasks view: empty here, or that the daemon lacks the tasks API', async () => {
    await go('#/tasks');
    const status = (await fetch(`${daemon.url}/v1/tasks`)).status;
    if (status === 404) {
      await page.waitForSelector('#tasks-unavailable');
      expect(await page.textContent('#tasks-unavailable')).toContain('not available');
    } else {
      await page.waitForSelector('.state-empty');
      expect(await page.textContent('.state-empty')).toContain('No tasks yet');
    }
    await screenshot(page, 'tasks-empty'); // tasks.e2e.ts saves the populated views
  });

  it('fits a phone-width screen', async () => {
    const phone = await newPage(browser, 390, 844);
    try {
      for (const [hash, name] of [['#/gpus', 'gpus-phone'], ['#/services/demo', 'service-demo-phone']] as const) {
        await phone.page.goto(`${daemon.url}/${hash}`);
        await phone.page.waitForSelector(hash === '#/gpus' ? '.gpu-card' : '#replicas-table');
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
