// A `gpuscale serve` process for end-to-end tests: simulated GPUs, emulated replicas
// (`gpuscale emulate`), a temp state dir, a 1 s control loop, the built dashboard as its
// web root, listening on 127.0.0.1 (port chosen by the kernel). It runs in its own process
// group; stop() ends the group (the daemon stops its replicas) and kills any replica still
// alive, then removes the temp dir, whatever happened in the test.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const GPUSCALE_BIN = process.env.GPUSCALE_BIN ?? join(REPO_ROOT, 'build/gpuscale');
export const WEB_ROOT = process.env.GPUSCALE_WEB_ROOT ?? join(REPO_ROOT, 'web/dist');
export const SCREENSHOT_DIR = process.env.GPUSCALE_SCREENSHOTS ?? join(REPO_ROOT, 'build/screenshots');

export const EMULATED_ANSWER_TOKENS = 12;

export function emulator(model: string): string {
  // Small batches make requests wait, so vllm:num_requests_waiting rises under bench load.
  // A 12-token answer: a request without max_tokens ends there with finish_reason "stop".
  return `[${JSON.stringify(GPUSCALE_BIN)}, emulate, --port, "{port}", --model, ${model}, ` +
    `--max-batch-size, "2", --startup-seconds, "0.5", --drain-seconds, "1", --output-tokens, "${EMULATED_ANSWER_TOKENS}"]`;
}

// `demo`: target policy on the waiting queue (scales out under load, holds replicas for the
// test's length); `ruled`: no policy block, so its rules come from the store (the form).
export function e2eConfig(stateDir: string): string {
  return `gpu:
  backend: simulated
  sample_interval_seconds: 1
api:
  listen: "127.0.0.1:0"
state_dir: ${JSON.stringify(stateDir)}
loop_interval_seconds: 1
services:
  - name: demo
    command: ${emulator('demo')}
    gpus_per_replica: 1
    startup_timeout_seconds: 30
    drain_timeout_seconds: 5
    min_replicas: 1
    max_replicas: 3
    policy:
      family: target
      target:
        metrics:
          - name: vllm:num_requests_waiting
            type: AverageValue
            average_value: 3
        behavior:
          scale_down:
            stabilization_window_seconds: 600
  - name: ruled
    command: ${emulator('ruled')}
    gpus_per_replica: 1
    startup_timeout_seconds: 30
    drain_timeout_seconds: 5
    min_replicas: 1
    max_replicas: 1
`;
}

export interface DaemonOptions {
  config?: (stateDir: string) => string;
  extraArgs?: string[];
  token?: string;
}

export class Daemon {
  url = ''; // where the dashboard is: the daemon itself serves web/dist (--web-root)
  apiUrl = '';
  gatewayUrl = ''; // the OpenAI-compatible gateway (clients add /v1); '' when it is off
  output = '';
  private child: ChildProcess | null = null;
  private readonly dir = mkdtempSync(join(tmpdir(), 'gpuscale-web-e2e-'));
  private readonly replicaPids = new Set<number>();

  constructor(private readonly options: DaemonOptions = {}) {}

  static check(): string | null {
    if (!existsSync(GPUSCALE_BIN)) return `no gpuscale binary at ${GPUSCALE_BIN} (set GPUSCALE_BIN)`;
    if (!existsSync(join(WEB_ROOT, 'index.html'))) return `no built dashboard at ${WEB_ROOT} (run npm run build)`;
    return null;
  }

  async start(timeoutMs = 30_000): Promise<void> {
    const configPath = join(this.dir, 'gpuscale.yaml');
    writeFileSync(configPath, (this.options.config ?? e2eConfig)(join(this.dir, 'state')));
    const args = ['serve', '--config', configPath, '--web-root', WEB_ROOT,
      '--gateway-listen', '127.0.0.1:0', ...(this.options.extraArgs ?? [])];
    if (this.options.token) args.push('--token', this.options.token);
    const child = spawn(GPUSCALE_BIN, args, { cwd: this.dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = /API (http:\/\/127\.0\.0\.1:\d+)/.exec(this.output);
      if (match?.[1]) {
        this.apiUrl = match[1];
        // The daemon prints the gateway line before the API line, so it is in by now.
        this.gatewayUrl = /gateway (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(this.output)?.[1] ?? '';
        if (await this.ready()) {
          this.url = this.apiUrl;
          return;
        }
      }
      if (child.exitCode !== null) throw new Error(`gpuscale serve exited ${child.exitCode}:\n${this.output}`);
      await sleep(200);
    }
    throw new Error(`gpuscale serve not ready after ${timeoutMs} ms:\n${this.output}`);
  }

  private async ready(): Promise<boolean> {
    try {
      return (await fetch(`${this.apiUrl}/readyz`)).ok;
    } catch {
      return false;
    }
  }

  // GET/POST to the API as the tests' source of truth; remembers replica pids for cleanup.
  async api<T>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (this.options.token) headers.Authorization = `Bearer ${this.options.token}`;
    const response = await fetch(`${this.apiUrl}${path}`, { ...init, headers });
    const text = await response.text();
    const body = (text ? JSON.parse(text) : null) as T;
    if (path.endsWith('/replicas') && response.ok) {
      for (const r of (body as { replicas: { pid: number }[] }).replicas) if (r.pid > 0) this.replicaPids.add(r.pid);
    }
    return { status: response.status, body };
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (child?.pid && child.exitCode === null) {
      killGroup(child.pid, 'SIGTERM');
      const exited = await waitFor(() => child.exitCode !== null || child.signalCode !== null, 15_000);
      if (!exited) killGroup(child.pid, 'SIGKILL');
    }
    for (const pid of this.replicaPids) if (isEmulator(pid)) killGroup(pid, 'SIGKILL', false);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// True while `pid` is still one of our emulated replicas (not a recycled pid).
function isEmulator(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('emulate');
  } catch {
    return false;
  }
}

function killGroup(pid: number, signal: NodeJS.Signals, group = true): void {
  try {
    process.kill(group ? -pid : pid, signal);
  } catch {
    // already gone
  }
  if (!group) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 200): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await sleep(stepMs);
  }
  return condition();
}
