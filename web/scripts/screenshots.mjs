// Screenshots of every dashboard view (run by scripts/screenshots). It starts `gpuscale serve`
// with its embedded default (simulated GPUs, the `demo` service of emulated replicas), runs
// a small task sweep and a failing task so the task and experiment views have content, then
// puts `gpuscale bench` load on the gateway so the service's charts have data, and saves a
// full-page PNG of each view at a 1400 x 1000 viewport in Debian's Chromium (playwright-core,
// no browser download). The Simulations view gets a comparison `gpuscale simulate` writes
// for it: the six conv policy configs of examples/sim on the Azure conversation trace at 10x
// its rate (a second or two). Everything it starts is stopped at the end, also on failure.
//
//   node web/scripts/screenshots.mjs OUTDIR
//   env: GPUSCALE_BIN (default build/gpuscale), CHROMIUM_PATH (default /usr/bin/chromium),
//        SCREENSHOT_LOAD_SECONDS (bench duration before the service shots, default 60)

import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const BIN = process.env.GPUSCALE_BIN ?? join(ROOT, 'build/gpuscale');
const WEB_ROOT = join(ROOT, 'web/dist');
const OUT = resolve(process.argv[2] ?? join(ROOT, 'build/screenshots'));
const LOAD_SECONDS = Number(process.env.SCREENSHOT_LOAD_SECONDS ?? 60);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (text) => process.stderr.write(`screenshots: ${text}\n`);

const children = [];

function start(args, name) {
  const child = spawn(BIN, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.output = '';
  child.stdout.on('data', (d) => (child.output += d));
  child.stderr.on('data', (d) => (child.output += d));
  child.label = name;
  children.push(child);
  return child;
}

function stop(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal); // its process group: the daemon stops its replicas itself
  } catch {
    // gone
  }
}

async function waitFor(what, condition, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await condition();
    if (value) return value;
    await sleep(500);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function api(base, path, init) {
  const response = await fetch(`${base}${path}`, { ...init, headers: { 'Content-Type': 'application/json' } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

// A 1 x 2 sweep of emulated servers (1 s benchmarks), and a task whose server exits at once.
function sweep(name, command) {
  return {
    name,
    model: 'gpuscale/emulated-llama-3.1-8b',
    params_b: 1,
    parameters: { 'tensor-parallel-size': [1], 'max-num-seqs': [4, 16] },
    server: { command, startup_timeout_seconds: 30 },
    benchmark: { concurrency: 8, input_tokens: 64, output_tokens: 16, duration_seconds: 2 },
    gpu_wait_timeout_seconds: 60,
    objective: { maximize: 'throughput' },
  };
}

async function submitTasks(base) {
  const ok = await api(base, '/v1/tasks', { method: 'POST', body: JSON.stringify(sweep('screenshot-sweep',
    [BIN, 'emulate', '--port', '{port}', '--model', '{model}', '--max-batch-size', '{max-num-seqs}',
      '--startup-seconds', '0.3', '--drain-seconds', '0.5'])) });
  const bad = await api(base, '/v1/tasks', { method: 'POST', body: JSON.stringify({
    ...sweep('screenshot-failing', [BIN, 'emulate', '--port', '{port}', '--no-such-flag']),
    parameters: { 'tensor-parallel-size': [1] } }) });
  if (ok.status !== 201 || bad.status !== 201) throw new Error(`task submit: ${JSON.stringify([ok.body, bad.body])}`);
  const ended = (t) => ['succeeded', 'failed', 'cancelled'].includes(t.status);
  const tasks = await waitFor('the tasks to end', async () => {
    const [a, b] = await Promise.all([api(base, `/v1/tasks/${ok.body.id}`), api(base, `/v1/tasks/${bad.body.id}`)]);
    return ended(a.body) && ended(b.body) ? [a.body, b.body] : null;
  }, 120_000);
  return { sweep: tasks[0], failing: tasks[1] };
}

// `gpuscale simulate --compare … -o json` of the conv policies, written to `path`.
function simulationFile(path) {
  const configs = ['slo', 'hpa', 'kpa', 'keda', 'ratio', 'rules'].map((p) => join(ROOT, 'examples/sim/conv', `${p}.yaml`));
  const json = execFileSync(BIN, ['simulate', '--compare', configs.join(','), '--trace',
    join(ROOT, 'data/traces/AzureLLMInferenceTrace_conv.csv'), '--rate-scale', '10', '-o', 'json',
    '--svg', join(path, '..', 'compare.svg')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  writeFileSync(path, json);
  return path;
}

async function shoot(page, base, hash, name, ready) {
  await page.goto(`${base}/${hash}`);
  await page.waitForSelector(ready, { timeout: 20_000 });
  await sleep(1500); // a poll or two: charts and live figures settle
  const path = join(OUT, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  log(`wrote ${path}`);
}

async function main() {
  mkdirSync(OUT, { recursive: true });
  const state = mkdtempSync(join(tmpdir(), 'gpuscale-screenshots-'));
  let browser = null;
  try {
    const daemon = start(['serve', '--listen', '127.0.0.1:0', '--gateway-listen', '127.0.0.1:0',
      '--state-dir', state, '--web-root', WEB_ROOT, '--loop-interval', '1'], 'serve');
    const base = await waitFor('gpuscale serve', async () => {
      if (daemon.exitCode !== null) throw new Error(`gpuscale serve exited:\n${daemon.output}`);
      return /API (http:\/\/127\.0\.0\.1:\d+)/.exec(daemon.output)?.[1];
    }, 30_000);
    const gateway = /gateway (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(daemon.output)?.[1];
    log(`daemon at ${base}, gateway ${gateway}`);
    const { sweep: task, failing } = await submitTasks(base);
    log(`tasks ${task.id} (${task.status}) and ${failing.id} (${failing.status}) ended`);

    const { body: services } = await api(base, '/v1/services');
    const service = services.services[0];
    const model = service?.spec?.models?.[0] ?? service?.name;
    const bench = start(['bench', '--url', gateway, '--model', model, '--concurrency', '48', '--duration',
      String(LOAD_SECONDS), '--output-tokens', '64', '--no-progress'], 'bench');
    log(`bench: ${LOAD_SECONDS} s at concurrency 48 on model ${model}`);
    await sleep(Math.max(5, LOAD_SECONDS - 10) * 1000);

    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true, args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await shoot(page, base, `#/services/${service.name}`, `service-${service.name}`, '#history-panel:not([data-state="loading"])');
    await shoot(page, base, '#/gpus', 'gpus', '#gpu-charts .chart[data-points]:not([data-points="0"])');
    await shoot(page, base, '#/services', 'services', '#services-table');
    await shoot(page, base, '#/events', 'events', '#events-table');
    await shoot(page, base, '#/tasks', 'tasks', '#tasks-table');
    await shoot(page, base, `#/tasks/${task.id}`, 'task', '#experiments-table');
    const best = task.best_experiment_id ?? task.experiments[0]?.id;
    await shoot(page, base, `#/experiments/${best}`, 'experiment', '#bench-summary');
    await shoot(page, base, `#/experiments/${failing.experiments[0]?.id}`, 'experiment-failed', '#experiment-failure');
    stop(bench);
    const comparison = simulationFile(join(state, 'compare.json'));
    await page.goto(`${base}/#/simulations`);
    await page.setInputFiles('#sim-file', comparison);
    await shoot(page, base, '#/simulations', 'simulations', '#sim-timeline[data-points]:not([data-points="0"])');
  } finally {
    await browser?.close().catch(() => undefined);
    for (const child of children.reverse()) stop(child);
    await sleep(3000);
    for (const child of children) stop(child, 'SIGKILL');
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((error) => {
  log(String(error?.stack ?? error));
  process.exitCode = 1;
});
