import { describe, expect, it, vi } from 'vitest';
import type { FetchLike } from '../../src/api/client';
import { EventStreamClient, parseGatewayStats, type StreamStatus } from '../../src/api/event_stream';
import type { TokenProvider } from '../../src/api/token_store';
import { EventHub } from '../../src/event_hub';
import type { GatewayStats, GpuscaleEvent } from '../../src/api/types';
import { event, gatewayStats } from './fixtures';

function sse(e: GpuscaleEvent): string {
  return `id: ${e.id}\nevent: ${e.kind}\ndata: ${JSON.stringify(e)}\n\n`;
}

// The daemon's periodic gateway figures: no id line (not a stored event).
function gatewaySse(services: Record<string, GatewayStats>): string {
  return `event: gateway_stats\ndata: ${JSON.stringify({ services })}\n\n`;
}

// A body that sends `chunks` and then ends, or stays open until aborted when `hold`.
function streamResponse(chunks: string[], signal: AbortSignal | null | undefined, hold = false): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      if (!hold) controller.close();
      signal?.addEventListener('abort', () => controller.error(new DOMException('aborted', 'AbortError')));
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

function tokens(answer: string | null): TokenProvider & { current: string | null } {
  const provider = {
    current: null as string | null,
    token: () => provider.current,
    requestToken: async () => {
      provider.current = answer;
      return answer;
    },
  };
  return provider;
}

describe('EventStreamClient', () => {
  it('delivers events, reconnects with Last-Event-ID and re-authenticates after a 401', async () => {
    const headers: Record<string, string>[] = [];
    const received: number[] = [];
    const statuses: StreamStatus[] = [];
    const auth = tokens('tok');
    let call = 0;
    const fetch: FetchLike = async (_url, init) => {
      headers.push({ ...(init?.headers as Record<string, string>) });
      call += 1;
      if (call === 1) return streamResponse([sse(event(1)).slice(0, 10), sse(event(1)).slice(10), sse(event(2))], init?.signal);
      if (call === 2) return new Response('{"error":{"code":"unauthenticated","message":"bad token","field":null}}', { status: 401 });
      return streamResponse([': keepalive\n\n', sse(event(3))], init?.signal, true);
    };
    const client = new EventStreamClient({
      url: '/v1/events/stream', tokens: auth, fetch, retryMs: 1,
      onEvent: (e) => received.push(e.id),
      onStatus: (s) => statuses.push(s),
    });
    client.start();
    await vi.waitFor(() => expect(received).toEqual([1, 2, 3]));
    client.stop();
    expect(headers[0]?.['Last-Event-ID']).toBeUndefined();
    expect(headers[1]?.['Last-Event-ID']).toBe('2');
    expect(headers[2]?.['Last-Event-ID']).toBe('2');
    expect(headers[2]?.Authorization).toBe('Bearer tok');
    expect(statuses).toContain('unauthorized');
    expect(statuses).toContain('reconnecting');
    expect(statuses[statuses.length - 1]).toBe('stopped');
  });

  it('reconnects with a token another prompt set while it was refused, without asking again', async () => {
    const auth = tokens(null);
    auth.current = 'wrong';
    const sent: (string | undefined)[] = [];
    const statuses: StreamStatus[] = [];
    const fetch: FetchLike = async (_url, init) => {
      const authorization = (init?.headers as Record<string, string>).Authorization;
      sent.push(authorization);
      if (authorization === 'Bearer right') return streamResponse([], init?.signal, true);
      auth.current = 'right'; // the user answered a request's prompt meanwhile
      return new Response('', { status: 401 });
    };
    const client = new EventStreamClient({
      url: '/s', tokens: auth, fetch, retryMs: 1, onEvent: () => undefined, onStatus: (s) => statuses.push(s),
    });
    client.start();
    await vi.waitFor(() => expect(statuses[statuses.length - 1]).toBe('open'));
    client.stop();
    expect(sent).toEqual(['Bearer wrong', 'Bearer right']);
    expect(statuses).not.toContain('unauthorized'); // tokens(null) would have stopped the stream
  });

  it('stops when the user cancels the token prompt', async () => {
    const statuses: StreamStatus[] = [];
    const fetch: FetchLike = async () => new Response('', { status: 401 });
    const client = new EventStreamClient({
      url: '/s', tokens: tokens(null), fetch, retryMs: 1, onEvent: () => undefined,
      onStatus: (s) => statuses.push(s),
    });
    client.start();
    await vi.waitFor(() => expect(statuses[statuses.length - 1]).toBe('stopped'));
  });

  it('retries with backoff while the daemon is unreachable and skips non-event data', async () => {
    let calls = 0;
    const received: number[] = [];
    const fetch: FetchLike = async (_url, init) => {
      calls += 1;
      if (calls < 3) throw new TypeError('connection refused');
      return streamResponse(['data: not json\n\n', sse(event(9))], init?.signal, true);
    };
    const client = new EventStreamClient({
      url: '/s', tokens: tokens(null), fetch, retryMs: 1, onEvent: (e) => received.push(e.id),
    });
    client.start();
    await vi.waitFor(() => expect(received).toEqual([9]));
    client.stop();
    expect(calls).toBe(3);
  });

  it('hands gateway_stats to onGatewayStats only, and an id-less message keeps Last-Event-ID', async () => {
    const headers: Record<string, string>[] = [];
    const received: number[] = [];
    const stats: Record<string, GatewayStats>[] = [];
    let call = 0;
    const fetch: FetchLike = async (_url, init) => {
      headers.push({ ...(init?.headers as Record<string, string>) });
      call += 1;
      // the daemon sends gateway_stats on a connection's first poll, before any event
      if (call === 1) return streamResponse([gatewaySse({ demo: gatewayStats() }), sse(event(4)),
        gatewaySse({ demo: gatewayStats({ requests_total: 20 }) })], init?.signal);
      if (call === 2) return streamResponse([gatewaySse({})], init?.signal);
      return streamResponse([sse(event(5))], init?.signal, true);
    };
    const client = new EventStreamClient({
      url: '/s', tokens: tokens(null), fetch, retryMs: 1,
      onEvent: (e) => received.push(e.id),
      onGatewayStats: (s) => stats.push(s),
    });
    client.start();
    await vi.waitFor(() => expect(received).toEqual([4, 5]));
    client.stop();
    expect(stats.map((s) => s.demo?.requests_total)).toEqual([14, 20, undefined]);
    expect(headers[0]?.['Last-Event-ID']).toBeUndefined();
    expect(headers[1]?.['Last-Event-ID']).toBe('4');
    expect(headers[2]?.['Last-Event-ID']).toBe('4'); // a connection with only id-less messages
    expect(client.lastEventId).toBe('5');
  });

  it('drops gateway_stats data of another shape', () => {
    expect(parseGatewayStats('not json')).toBeNull();
    expect(parseGatewayStats('{"id":3,"kind":"decision"}')).toBeNull();
    expect(parseGatewayStats('{"services":[]}')).toBeNull();
    expect(parseGatewayStats(JSON.stringify({ services: { demo: gatewayStats(), bad: { rate: 1 }, none: null } })))
      .toEqual({ demo: gatewayStats() });
  });

  it('treats a silent stream as dead and reconnects', async () => {
    let calls = 0;
    const fetch: FetchLike = async (_url, init) => {
      calls += 1;
      return streamResponse([], init?.signal, true);
    };
    const client = new EventStreamClient({
      url: '/s', tokens: tokens(null), fetch, retryMs: 1, idleTimeoutMs: 5, onEvent: () => undefined,
    });
    client.start();
    await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(2));
    client.stop();
  });
});

describe('EventHub', () => {
  it('gives gateway_stats to its own listeners, so that event views never see it', async () => {
    vi.stubGlobal('fetch', (async (_url, init) => streamResponse([gatewaySse({ demo: gatewayStats() }), sse(event(7))],
      init?.signal, true)) satisfies FetchLike);
    try {
      const hub = new EventHub(tokens(null), '/s');
      const events: string[] = [];
      const stats: string[] = [];
      const unsubscribe = hub.subscribe((e) => events.push(e.kind));
      hub.subscribeGatewayStats((s) => stats.push(...Object.keys(s)));
      hub.start();
      await vi.waitFor(() => expect(events).toEqual(['decision']));
      hub.stop();
      unsubscribe();
      expect(stats).toEqual(['demo']);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
