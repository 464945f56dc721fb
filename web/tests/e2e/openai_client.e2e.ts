// End-to-end: the official `openai` npm client against the gateway of a real `gpuscale serve`
// (simulated GPUs, emulated replicas). What a user's code does, unchanged but for baseURL:
// list the models, stream a chat completion (the chunks must arrive over time, as the
// replica decodes, not all at once from a buffer), ask for a plain completion, and get the
// client's typed errors for an unknown model (404) and, on a second daemon started with
// --gateway-token, for a missing or wrong key (401).

import OpenAI, { AuthenticationError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica } from '../../src/api/types';
import { Daemon, EMULATED_ANSWER_TOKENS, emulator, waitFor } from './daemon';

const GATEWAY_TOKEN = 'e2e-gateway-token';

// maxRetries 0: the client retries 5xx and broken connections by itself, which would hide a
// gateway that fails now and then. The timeout bounds a hang well inside the test's own.
function client(daemon: Daemon, apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}): OpenAI {
  return new OpenAI({ baseURL: `${daemon.gatewayUrl}/v1`, apiKey, maxRetries: 0, timeout: 60_000, ...options });
}

// A request would wait for the first replica in the gateway's activator queue anyway; waiting
// here puts a slow start in the hook (with the daemon's output) instead of the first test.
async function waitForReadyReplica(daemon: Daemon, service: string): Promise<void> {
  const ready = await waitFor(async () => {
    const { status, body } = await daemon.api<{ replicas: Replica[] }>(`/v1/services/${service}/replicas`);
    return status === 200 && body.replicas.some((r) => r.state === 'ready');
  }, 60_000, 250);
  if (!ready) throw new Error(`no ready replica of ${service} after 60 s:\n${daemon.output}`);
}

async function startDaemon(daemon: Daemon): Promise<Daemon> {
  const problem = Daemon.check();
  if (problem) throw new Error(`cannot run the openai client e2e tests: ${problem}`);
  await daemon.start();
  if (!daemon.gatewayUrl) throw new Error(`gpuscale serve printed no gateway URL:\n${daemon.output}`);
  await waitForReadyReplica(daemon, 'demo');
  return daemon;
}

// The token daemon needs one service only: a replica fewer on a small machine.
function demoOnly(stateDir: string): string {
  return `gpu:
  backend: simulated
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
    max_replicas: 1
`;
}

describe('openai client against the gateway', () => {
  let daemon: Daemon;
  let openai: OpenAI;

  beforeAll(async () => {
    daemon = await startDaemon(new Daemon());
    // No gateway token here: the client insists on some key, which the gateway passes on.
    openai = client(daemon, 'unused');
  });

  afterAll(async () => {
    await daemon?.stop();
  });

  it('lists every service model', async () => {
    const models = (await openai.models.list()).data;
    expect(models.map((m) => m.id)).toEqual(expect.arrayContaining(['demo', 'ruled']));
    expect(models.find((m) => m.id === 'demo')).toMatchObject({ object: 'model', owned_by: 'demo' });
  });

  it('streams a chat completion chunk by chunk', async () => {
    const stream = await openai.chat.completions.create({
      model: 'demo',
      messages: [{ role: 'user', content: 'Say something about autoscaling.' }],
      max_tokens: 8,
      stream: true,
    });
    const arrivals: number[] = [];
    let text = '';
    let finishReason: string | null = null;
    for await (const chunk of stream) {
      arrivals.push(performance.now());
      expect(chunk.object).toBe('chat.completion.chunk');
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        finishReason = choice.finish_reason ?? finishReason;
      }
    }
    expect(arrivals.length).toBeGreaterThan(1);
    expect(text.trim()).not.toBe('');
    expect(['length', 'stop']).toContain(finishReason);
    // The emulator sends a token every decode step (5 ms and up), so 8 tokens take 35 ms or
    // more; a gateway that buffered the response would hand them over within a millisecond
    // or two. 10 ms leaves room for a scheduler that catches up on a busy machine.
    const spreadMs = (arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0);
    expect(spreadMs).toBeGreaterThan(10);
  });

  it('answers a plain completion with text and usage', async () => {
    const completion = await openai.completions.create({ model: 'demo', prompt: 'hello', max_tokens: 4 });
    expect(completion.object).toBe('text_completion');
    expect(completion.choices[0]?.text.trim()).not.toBe('');
    const usage = completion.usage;
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBeLessThanOrEqual(4);
    expect(usage?.total_tokens).toBe((usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0));
  });

  it('answers every prompt of a list, n choices each', async () => {
    const completion = await openai.completions.create({ model: 'demo', prompt: ['one two', 'three'], n: 2, max_tokens: 3 });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    for (const choice of completion.choices) {
      expect(choice.text.trim().split(/\s+/)).toHaveLength(3);
      expect(choice.finish_reason).toBe('length');
    }
    // Each prompt counted once, every choice's output counted.
    expect(completion.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 12 });
  });

  it('streams n chat choices, each with its role, tokens and end', async () => {
    const stream = await openai.chat.completions.create({
      model: 'demo',
      messages: [{ role: 'user', content: 'two answers please' }],
      n: 2,
      max_tokens: 5,
      stream: true,
    });
    const text = ['', ''];
    const roles = [0, 0];
    const ends: (string | null)[] = [null, null];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        if (choice.delta.role === 'assistant') roles[choice.index] = (roles[choice.index] ?? 0) + 1;
        text[choice.index] += choice.delta.content ?? '';
        if (choice.finish_reason) ends[choice.index] = choice.finish_reason;
      }
    }
    expect(roles).toEqual([1, 1]);
    expect(text.map((t) => t.trim().split(/\s+/).length)).toEqual([5, 5]);
    expect(ends).toEqual(['length', 'length']);
  });

  it('ends an answer without max_tokens at the model\'s own end ("stop"), not at 16', async () => {
    const completion = await openai.chat.completions.create({
      model: 'demo',
      messages: [{ role: 'user', content: 'take your time' }],
    });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.completion_tokens).toBe(EMULATED_ANSWER_TOKENS);
  });

  it('turns an unknown model into the client NotFoundError', async () => {
    // The client builds its error from OpenAI's shape: {"error": {message, type, param, code}}.
    const error: unknown = await openai.chat.completions
      .create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, code: 'model_not_found', param: 'model', type: 'invalid_request_error' });
    expect((error as NotFoundError).message).toContain('no-such-model');
  });
});

describe('openai client against a gateway with a token', () => {
  let daemon: Daemon;

  beforeAll(async () => {
    daemon = await startDaemon(new Daemon({ config: demoOnly, extraArgs: ['--gateway-token', GATEWAY_TOKEN] }));
  });

  afterAll(async () => {
    await daemon?.stop();
  });

  it('answers 401 without the key and serves the client that has it', async () => {
    const request = { model: 'demo', prompt: 'hello', max_tokens: 2 };
    // The client always sends its apiKey; a null default header is how to send none at all.
    const keyless = client(daemon, 'unused', { defaultHeaders: { Authorization: null } });
    for (const stranger of [keyless, client(daemon, 'not-the-token')]) {
      const error: unknown = await stranger.completions.create(request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error).toMatchObject({ status: 401, code: 'invalid_api_key' });
      // /v1/models is behind the token too: the names of the served models are not public.
      await expect(stranger.models.list()).rejects.toBeInstanceOf(AuthenticationError);
    }
    const member = client(daemon, GATEWAY_TOKEN);
    const completion = await member.completions.create(request);
    expect(completion.choices[0]?.text.trim()).not.toBe('');
    expect((await member.models.list()).data.map((m) => m.id)).toEqual(['demo']);
  });
});
