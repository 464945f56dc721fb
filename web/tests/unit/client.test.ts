import { describe, expect, it } from 'vitest';
import { ApiClient, eventQueryString, recentEvents, unwrapList, type FetchLike } from '../../src/api/client';
import { ApiError } from '../../src/api/errors';
import type { TokenProvider } from '../../src/api/token_store';
import { TokenStore, type KeyValueStorage } from '../../src/api/token_store';
import type { EventQuery, GpuscaleEvent } from '../../src/api/types';
import { event } from './fixtures';

interface Call { url: string; init: RequestInit | undefined }

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

function fakeFetch(answer: (call: Call) => Response): { fetch: FetchLike; calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (url, init) => {
      const call = { url, init };
      calls.push(call);
      return answer(call);
    },
  };
}

class MemoryStorage implements KeyValueStorage {
  private readonly map = new Map<string, string>();
  getItem(key: string): string | null { return this.map.get(key) ?? null; }
  setItem(key: string, value: string): void { this.map.set(key, value); }
  removeItem(key: string): void { this.map.delete(key); }
}

// A token prompt that answers with the queued tokens (null = the user cancels).
function scriptedTokens(answers: (string | null)[]): TokenProvider & { asked: string[] } {
  const store = new TokenStore(new MemoryStorage());
  const asked: string[] = [];
  return {
    asked,
    token: () => store.get(),
    requestToken: async (reason) => {
      asked.push(reason);
      const answer = answers.shift() ?? null;
      if (answer !== null) store.set(answer);
      return answer;
    },
  };
}

function header(init: RequestInit | undefined, name: string): string | undefined {
  return (init?.headers as Record<string, string> | undefined)?.[name];
}

const unauthorized = () => json(401, { error: { code: 'unauthenticated', message: 'missing bearer token', field: null } });

describe('ApiClient', () => {
  it('asks for a token after a 401 and retries with it', async () => {
    const tokens = scriptedTokens(['s3cret']);
    const { fetch, calls } = fakeFetch(({ init }) =>
      header(init, 'Authorization') === 'Bearer s3cret' ? json(200, { services: [] }) : unauthorized());
    const api = new ApiClient(tokens, fetch);
    await expect(api.services()).resolves.toEqual([]);
    expect(tokens.asked).toEqual(['missing bearer token']);
    expect(calls).toHaveLength(2);
    expect(tokens.token()).toBe('s3cret');
  });

  it('keeps asking while the token is wrong and gives up when the user cancels', async () => {
    const tokens = scriptedTokens(['wrong', null]);
    const { fetch, calls } = fakeFetch(unauthorized);
    const api = new ApiClient(tokens, fetch);
    const error = await api.gpus().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(401);
    expect(calls).toHaveLength(2);
    expect(tokens.asked).toHaveLength(2);
  });

  it('retries a late 401 with the token another prompt set meanwhile, without asking again', async () => {
    const asked: string[] = [];
    const tokens: TokenProvider & { current: string | null } = {
      current: 'wrong',
      token: () => tokens.current,
      requestToken: async (reason) => { asked.push(reason); return null; },
    };
    const { fetch, calls } = fakeFetch(({ init }) => {
      if (header(init, 'Authorization') === 'Bearer right') return json(200, { services: [] });
      tokens.current = 'right'; // the user answered another request's prompt while this one was out
      return unauthorized();
    });
    const api = new ApiClient(tokens, fetch);
    await expect(api.services()).resolves.toEqual([]);
    expect(calls.map((c) => header(c.init, 'Authorization'))).toEqual(['Bearer wrong', 'Bearer right']);
    expect(asked).toEqual([]);
  });

  it('sends JSON bodies and maps error fields', async () => {
    const { fetch, calls } = fakeFetch(() =>
      json(400, { error: { code: 'invalid_argument', message: 'threshold: expected a number', field: 'threshold' } }));
    const api = new ApiClient(scriptedTokens([]), fetch);
    const error = (await api.addRule('chat', { name: 'r', threshold: 'high' }).catch((e: unknown) => e)) as ApiError;
    expect(error.field).toBe('threshold');
    expect(calls[0]?.url).toBe('/v1/services/chat/rules');
    expect(calls[0]?.init?.method).toBe('POST');
    expect(JSON.parse(String(calls[0]?.init?.body))).toEqual({ name: 'r', threshold: 'high' });
    expect(header(calls[0]?.init, 'Content-Type')).toBe('application/json');
  });

  it('escapes names in paths and sends null to return replicas to the policy', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, {}));
    const api = new ApiClient(scriptedTokens([]), fetch);
    await api.setReplicas('a/b', null);
    expect(calls[0]?.url).toBe('/v1/services/a%2Fb/replicas');
    expect(calls[0]?.init?.body).toBe('{"replicas":null}');
  });

  it('reports an unreachable daemon', async () => {
    const api = new ApiClient(scriptedTokens([]), async () => { throw new TypeError('Failed to fetch'); });
    const error = (await api.gpus().catch((e: unknown) => e)) as ApiError;
    expect(error.unreachable).toBe(true);
  });

  it('turns a 404 from /v1/tasks into "no tasks API"', async () => {
    const { fetch } = fakeFetch(() => json(404, { error: { code: 'not_found', message: 'no route', field: null } }));
    await expect(new ApiClient(scriptedTokens([]), fetch).tasks()).resolves.toBeNull();
    const failing = fakeFetch(() => json(500, { error: { code: 'internal', message: 'boom', field: null } }));
    await expect(new ApiClient(scriptedTokens([]), failing.fetch).tasks()).rejects.toThrow('boom');
  });

  it('reads the event kinds, and none from a daemon without the endpoint', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, { kinds: ['decision', 'replica_ready'] }));
    await expect(new ApiClient(scriptedTokens([]), fetch).eventKinds()).resolves.toEqual(['decision', 'replica_ready']);
    expect(calls.map((c) => c.url)).toEqual(['/v1/events/kinds']);
    const old = fakeFetch(() => json(404, { error: { code: 'not_found', message: 'no route', field: null } }));
    await expect(new ApiClient(scriptedTokens([]), old.fetch).eventKinds()).resolves.toEqual([]);
    const failing = fakeFetch(() => json(500, { error: { code: 'internal', message: 'boom', field: null } }));
    await expect(new ApiClient(scriptedTokens([]), failing.fetch).eventKinds()).rejects.toThrow('boom');
  });

  it('unwraps the task list and asks for tasks and experiments by id', async () => {
    const { fetch, calls } = fakeFetch(({ url }) => url === '/v1/tasks' ? json(200, { tasks: [{ id: 2 }, { id: 1 }] })
      : json(200, { id: 7 }));
    const api = new ApiClient(scriptedTokens([]), fetch);
    expect((await api.tasks())?.map((t) => t.id)).toEqual([2, 1]);
    expect((await api.task(2)).id).toBe(7);
    expect((await api.experiment(7)).id).toBe(7);
    expect(calls.map((c) => c.url)).toEqual(['/v1/tasks', '/v1/tasks/2', '/v1/experiments/7']);
  });
});

describe('task actions in ApiClient', () => {
  it('posts a task definition exactly as typed, as JSON', async () => {
    const { fetch, calls } = fakeFetch(() => json(201, { id: 9, status: 'queued' }));
    const api = new ApiClient(scriptedTokens([]), fetch);
    const text = '{\n  "name": "s",   "model": "m"\n}\n';
    expect((await api.submitTask(text)).id).toBe(9);
    expect(calls[0]?.url).toBe('/v1/tasks');
    expect(calls[0]?.init?.method).toBe('POST');
    expect(calls[0]?.init?.body).toBe(text); // not re-serialized: the API keeps it as source_text
    expect(header(calls[0]?.init, 'Content-Type')).toBe('application/json');
  });

  it('sends the token on task actions and re-sends the definition after a 401', async () => {
    const tokens = scriptedTokens(['s3cret']);
    const { fetch, calls } = fakeFetch(({ init }) =>
      header(init, 'Authorization') === 'Bearer s3cret' ? json(201, { id: 4 }) : unauthorized());
    const api = new ApiClient(tokens, fetch);
    await expect(api.submitTask('{"name": "a"}')).resolves.toMatchObject({ id: 4 });
    expect(calls).toHaveLength(2);
    expect(calls[1]?.init?.body).toBe('{"name": "a"}');
    await api.cancelTask(4);
    expect(header(calls[2]?.init, 'Authorization')).toBe('Bearer s3cret');
  });

  it('cancels with DELETE /v1/tasks/{id} and maps a 409 to the API\'s message', async () => {
    const { fetch, calls } = fakeFetch(({ url }) => url === '/v1/tasks/3' ? json(200, { id: 3, status: 'cancelled' })
      : json(409, { error: { code: 'failed_precondition', message: 'task 5 already ended (succeeded)', field: 'id' } }));
    const api = new ApiClient(scriptedTokens([]), fetch);
    expect((await api.cancelTask(3)).status).toBe('cancelled');
    expect(calls[0]?.init?.method).toBe('DELETE');
    expect(calls[0]?.init?.body).toBeUndefined();
    const error = (await api.cancelTask(5).catch((e: unknown) => e)) as ApiError;
    expect(error.status).toBe(409);
    expect(error.message).toBe('task 5 already ended (succeeded)');
  });
});

describe('list answers and event queries', () => {
  it('unwraps lists and rejects other shapes', () => {
    expect(unwrapList<number>({ rules: [1, 2] }, 'rules')).toEqual([1, 2]);
    expect(unwrapList<number>([3], 'rules')).toEqual([3]);
    expect(() => unwrapList({ other: [] }, 'rules')).toThrow('"rules"');
    expect(() => unwrapList(null, 'rules')).toThrow(ApiError);
  });

  it('builds event query strings', () => {
    expect(eventQueryString({})).toBe('');
    expect(eventQueryString({ since_id: 0, service: 'chat', kind: 'decision', limit: 50 }))
      .toBe('?since_id=0&service=chat&kind=decision&limit=50');
  });

  it('pages forward through stored events and keeps the newest', async () => {
    const all = Array.from({ length: 25 }, (_, i) => event(i + 1));
    const queries: EventQuery[] = [];
    const api = {
      events: async (q: EventQuery): Promise<GpuscaleEvent[]> => {
        queries.push(q);
        return all.filter((e) => e.id > (q.since_id ?? 0)).slice(0, q.limit);
      },
    };
    const recent = await recentEvents(api, { service: 'chat' }, 7, 10);
    expect(recent.map((e) => e.id)).toEqual([19, 20, 21, 22, 23, 24, 25]);
    expect(queries.map((q) => q.since_id)).toEqual([0, 10, 20]);
    expect(queries[0]?.service).toBe('chat');
  });
});
