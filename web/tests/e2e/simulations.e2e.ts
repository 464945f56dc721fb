// End-to-end: the Simulations view with files the real binary writes. The test runs
// `gpuscale simulate -o json` on the first 1,500 requests of the Azure conversation trace
// (well under a second): a --compare of the slo and hpa configs with the oracle (so with the
// oracle plan, the reactive reference and the static fleet), and one --config run with
// --no-oracle (a single object). It opens them through the file input and by a drop, and
// checks the table's rows and numbers against the JSON, the scatter's point count and the
// timeline's lines (read from their uPlot instances), that the comparison survives a reload
// and goes with Clear, that malformed files get their message while the comparison shown
// stays, and that the page fits 390 px. The daemon (the e2e config: demo, a target policy)
// serves the page and its live services.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newPage, screenshot } from './browser';
import { drawnCharts } from './charts';
import { Daemon, GPUSCALE_BIN, REPO_ROOT } from './daemon';

// The fields of a run object (`gpuscale simulate -o json`) the test reads.
interface CliRun {
  name: string;
  policy: string;
  slo_attainment: number;
  slo_target: number;
  gpu_hours: number;
  oracle_gpu_hours?: number;
  gpu_hours_over_oracle?: number;
  peak_replicas: number;
  scale_ups: number;
  scale_downs: number;
  oracle_plan?: { bucket_seconds: number; replicas: number[] };
  reactive_plan?: { spare_replicas: number; hold_seconds: number };
  static_fleet?: { replicas: number; gpu_hours: number; attainment: number; meets_target: boolean };
  timeline: { time_s: number[]; replicas: number[] };
}

let daemon: Daemon;
let browser: Browser;
let page: Page;
let pageErrors: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'gpuscale-web-sim-'));
let comparePath = '';
let compare: CliRun[] = [];
let singlePath = '';
let single: CliRun | null = null;

const CONFIGS = join(REPO_ROOT, 'examples/sim/conv');

// stdout of `gpuscale simulate ARGS` (its progress on stderr is in the error when it fails).
function simulate(args: string[]): string {
  return execFileSync(GPUSCALE_BIN, ['simulate', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000 });
}

// What the table shows for a share (rounded down, as src/views/simulations_model.ts says).
function percent(share: number): string {
  return `${(Math.floor(share * 10000 + 1e-9) / 100).toFixed(2)} %`;
}

interface TableRow {
  kind: string;
  name: string;
  cells: string[];
}

async function tableRows(): Promise<TableRow[]> {
  return page.$$eval('#sim-table tbody tr', (rows) => rows.map((r) => ({
    kind: (r as HTMLElement).dataset.kind ?? '',
    name: (r as HTMLElement).dataset.name ?? '',
    cells: [...r.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? ''),
  })));
}

async function openFile(path: string): Promise<void> {
  await page.setInputFiles('#sim-file', path);
}

beforeAll(async () => {
  const problem = Daemon.check();
  if (problem) throw new Error(`cannot run the simulations e2e tests: ${problem}`);
  const trace = readFileSync(join(REPO_ROOT, 'data/traces/AzureLLMInferenceTrace_conv.csv'), 'utf8').split('\n');
  const tracePath = join(dir, 'conv-1500.csv');
  writeFileSync(tracePath, `${trace.slice(0, 1501).join('\n')}\n`);
  comparePath = join(dir, 'compare.json');
  writeFileSync(comparePath, simulate(['--compare', `${CONFIGS}/slo.yaml,${CONFIGS}/hpa.yaml`, '--trace', tracePath, '-o', 'json',
    '--svg', join(dir, 'compare.svg')]));
  compare = JSON.parse(readFileSync(comparePath, 'utf8')) as CliRun[];
  singlePath = join(dir, 'slo-no-oracle.json');
  writeFileSync(singlePath, simulate(['--config', `${CONFIGS}/slo.yaml`, '--trace', tracePath, '--no-oracle', '-o', 'json']));
  single = JSON.parse(readFileSync(singlePath, 'utf8')) as CliRun;
  daemon = new Daemon();
  await daemon.start();
  browser = await launchBrowser();
  ({ page, errors: pageErrors } = await newPage(browser, 1280, 900));
  await page.goto(`${daemon.url}/#/simulations`);
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await daemon?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('simulations view', () => {
  it('is in the navigation and says what to open', async () => {
    await page.waitForSelector('#sim-file');
    expect(await page.getAttribute('nav a[data-view="simulations"]', 'href')).toBe('#/simulations');
    expect(await page.getAttribute('nav a[data-view="simulations"]', 'class')).toContain('active');
    expect(await page.textContent('#sim-result')).toContain('No simulation loaded.');
    expect(await page.isDisabled('#sim-clear')).toBe(true);
  });

  it('shows a --compare with the oracle: runs, references, their numbers and both charts', async () => {
    expect(compare.map((r) => r.name)).toEqual(['slo', 'hpa']);
    const [first] = compare;
    expect(first?.oracle_plan, 'the compare has an oracle plan').toBeTruthy();
    await openFile(comparePath);
    await page.waitForSelector('#sim-table');
    expect(await page.textContent('#sim-source')).toContain('compare.json');
    const rows = await tableRows();
    const reactive = first?.reactive_plan;
    const fleet = first?.static_fleet;
    expect(rows.map((r) => [r.kind, r.name])).toEqual([
      ['run', 'slo'], ['run', 'hpa'],
      ...(reactive ? [['reactive', `reactive (+${reactive.spare_replicas} spare, hold ${reactive.hold_seconds} s)`]] : []),
      ...(fleet ? [['static_fleet', `static fleet (${fleet.replicas})`]] : []),
      ['oracle', 'oracle (lower bound)'],
    ]);
    // Run, Policy, Attainment, GPU-hours, × oracle, TTFT p99, TPOT p99, Peak, Ups / downs, Live
    compare.forEach((run, i) => {
      const cells = rows[i]?.cells ?? [];
      expect(cells[1]).toBe(run.policy);
      expect(cells[2]).toBe(`${percent(run.slo_attainment)}${run.slo_attainment >= run.slo_target ? 'met' : 'missed'}`);
      expect(cells[3]).toBe(run.gpu_hours.toFixed(3));
      expect(cells[4]).toBe(`${run.gpu_hours_over_oracle?.toFixed(2)}×`);
      expect(cells[5]).toMatch(/^\d[\d.]* m?s$/);
      expect(cells[7]).toBe(String(run.peak_replicas));
      expect(cells[8]).toBe(`${run.scale_ups} / ${run.scale_downs}`);
    });
    const oracleRow = rows.find((r) => r.kind === 'oracle');
    expect(oracleRow?.cells[3]).toBe(first?.oracle_gpu_hours?.toFixed(3));
    expect(oracleRow?.cells[4]).toBe('1.00×');
    if (fleet) {
      const fleetRow = rows.find((r) => r.kind === 'static_fleet');
      expect(fleetRow?.cells[2]).toBe(`${percent(fleet.attainment)}${fleet.meets_target ? 'met' : 'missed'}`);
      expect(fleetRow?.cells[3]).toBe(fleet.gpu_hours.toFixed(3));
    }
    const target = (first?.slo_target ?? 0) * 100;
    expect(await page.textContent('#sim-table thead')).toContain(`target ${Number(target.toFixed(2))} %`);
    expect(await page.textContent('#sim-verdict')).toMatch(/^(Cheapest run meeting|No run meets) the SLO target/);
    expect(await page.textContent('#sim-trace')).toContain('2 runs on azure_csv, 1,500 requests');

    // the scatter: a point per run and per reference with an attainment; target and oracle lines
    const points = compare.length + (reactive ? 1 : 0) + (fleet ? 1 : 0);
    await page.waitForSelector(`#sim-scatter[data-points="${points}"]`);
    expect(await page.getAttribute('#sim-scatter', 'data-targets')).toBe(String(target));
    expect(Number(await page.getAttribute('#sim-scatter', 'data-oracles'))).toBeCloseTo(first?.oracle_gpu_hours ?? -1, 9);
    const [scatter] = await drawnCharts(page, '#sim-scatter');
    expect(scatter?.labels.length).toBe(points);
    expect(new Set(scatter?.labels)).toEqual(new Set(rows.filter((r) => r.kind !== 'oracle').map((r) => r.name)));

    // the timeline: the arrival rate, one line per run, the oracle plan
    expect(await page.getAttribute('#sim-timeline', 'data-runs')).toBe('2');
    const [timeline] = await drawnCharts(page, '#sim-timeline');
    expect(timeline?.labels).toEqual(['arrival rate', 'slo', 'hpa', 'oracle plan']);
    const sloLine = (timeline?.series[1] ?? []).filter((v) => v !== null);
    expect(sloLine).toEqual(first?.timeline.replicas);
    expect(timeline?.x).toEqual(expect.arrayContaining(first?.timeline.time_s ?? [NaN]));
    await screenshot(page, 'simulations');
  });

  it('marks the runs whose policy a live service uses', async () => {
    // demo (e2e config) runs the target policy, as hpa.yaml does
    await page.waitForSelector('#sim-table tr[data-name="hpa"] td.sim-live a');
    expect(await page.getAttribute('#sim-table tr[data-name="hpa"] td.sim-live a', 'href')).toBe('#/services/demo');
    expect(await page.textContent('#sim-table tr[data-name="slo"] td.sim-live')).toBe('');
    expect(await page.textContent('#sim-live-note')).toContain('demo (target)');
  });

  it('keeps the comparison across a reload', async () => {
    await page.reload();
    await page.waitForSelector('#sim-table');
    expect((await tableRows()).filter((r) => r.kind === 'run').map((r) => r.name)).toEqual(['slo', 'hpa']);
    expect(await page.isDisabled('#sim-clear')).toBe(false);
  });

  // [what, file name, the file from the compare's text, the message]
  it.each<[string, string, (text: string) => string, RegExp]>([
    ['a cut-off file', 'cut.json', (text) => text.slice(0, 200), /^cut\.json: Not JSON: line \d+, column \d+ \(character \d+\): /],
    ['the CLI\'s table', 'table.txt', () => 'policy   attain   gpu_h\nslo      1.0000   0.233\n',
      /^table\.txt: Not JSON: line 1, column 1 \(character 1\): .*prints a table unless given -o json/],
    ['a run without its timeline\'s times', 'missing.json', (text) => {
      const runs = JSON.parse(text) as { timeline: Partial<CliRun['timeline']> }[];
      delete runs[1]?.timeline.time_s;
      return JSON.stringify(runs);
    }, /^missing\.json: Not a simulation result: \[1\]\.timeline\.time_s is missing/],
  ])('says what is wrong with %s and keeps what it showed', async (_what, name, make, message) => {
    await page.setInputFiles('#sim-file', { name, mimeType: 'application/json',
      buffer: Buffer.from(make(readFileSync(comparePath, 'utf8'))) });
    await page.waitForFunction((n) => document.querySelector('#sim-error')?.textContent?.startsWith(n), name);
    const text = (await page.textContent('#sim-error')) ?? '';
    expect(text).toMatch(message);
    expect(text).toContain('Still showing compare.json.');
    expect(await page.locator('#sim-table tbody tr[data-kind="run"]').count()).toBe(2);
  });

  it('shows a single --no-oracle run dropped on the page', async () => {
    const text = readFileSync(singlePath, 'utf8');
    const transfer = await page.evaluateHandle((json) => {
      const data = new DataTransfer();
      data.items.add(new File([json], 'slo-no-oracle.json', { type: 'application/json' }));
      return data;
    }, text);
    await page.dispatchEvent('#view', 'dragover', { dataTransfer: transfer });
    await page.dispatchEvent('#view', 'drop', { dataTransfer: transfer });
    await page.waitForFunction(() => document.querySelector('#sim-source')?.textContent?.includes('slo-no-oracle.json'));
    expect(await page.isHidden('#sim-error')).toBe(true);
    const rows = await tableRows();
    expect(rows.map((r) => r.kind)).toEqual(['run', ...(single?.static_fleet ? ['static_fleet'] : [])]);
    expect(rows[0]?.cells[3]).toBe(single?.gpu_hours.toFixed(3));
    expect(rows[0]?.cells[4]).toBe('—'); // no oracle
    expect(await page.textContent('#sim-trace')).toMatch(/^One run on azure_csv/);
    await page.waitForSelector(`#sim-scatter[data-points="${rows.length}"]`);
    expect(await page.getAttribute('#sim-scatter', 'data-oracles')).toBe('');
    const [timeline] = await drawnCharts(page, '#sim-timeline');
    expect(timeline?.labels).toEqual(['arrival rate', 'slo']);
  });

  it('fits a phone-width screen', async () => {
    const phone = await newPage(browser, 390, 844);
    try {
      await phone.page.goto(`${daemon.url}/#/simulations`); // a new context: its own localStorage
      await phone.page.setInputFiles('#sim-file', comparePath);
      await phone.page.waitForSelector('#sim-table');
      await phone.page.waitForSelector('#sim-timeline[data-points]:not([data-points="0"])');
      const overflow = await phone.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      await screenshot(phone.page, 'simulations-phone');
      expect(phone.errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
    } finally {
      await phone.page.close();
    }
  });

  it('forgets the file with Clear', async () => {
    await page.click('#sim-clear');
    await page.waitForSelector('#sim-result .state-empty');
    expect(await page.evaluate(() => window.localStorage.getItem('gpuscale.simulation'))).toBeNull();
    await page.reload();
    await page.waitForSelector('#sim-result .state-empty');
    expect(await page.locator('#sim-table').count()).toBe(0);
  });

  it('raised no uncaught page errors', () => {
    expect(pageErrors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
  });
});
