// EventStreamClient: the live event feed (GET /v1/events/stream, server-sent events) read with
// fetch() so that it can carry the bearer token (EventSource cannot send headers). It parses
// the stream with SseParser, hands each event to onEvent, and reconnects with exponential
// backoff, resuming with Last-Event-ID so that no event is lost or repeated. A stream silent
// for longer than idleTimeoutMs (the server sends a keepalive every ~15 s) is treated as dead.
// A 401 asks the TokenProvider for a token; cancelling stops the stream.
//
// Besides the stored events the stream carries `event: gateway_stats` messages (the gateway's
// per-service figures, every 5 s). They have no `id:` line, so they leave the resume point
// where it is, and they go to onGatewayStats, never to onEvent: no view mistakes them for an
// event.
//
// Single-threaded (browser event loop); start() once, stop() any time.

import { errorFromResponse, describeError } from './errors';
import type { FetchLike } from './client';
import { SseParser } from './sse_parser';
import { authHeaders, type TokenProvider } from './token_store';
import type { GatewayStats, GpuscaleEvent } from './types';

export type StreamStatus = 'connecting' | 'open' | 'reconnecting' | 'unauthorized' | 'stopped';

export interface EventStreamOptions {
  url: string; // e.g. "/v1/events/stream"
  tokens: TokenProvider;
  onEvent: (event: GpuscaleEvent) => void;
  onGatewayStats?: (services: Record<string, GatewayStats>) => void;
  onStatus?: (status: StreamStatus, detail: string) => void;
  fetch?: FetchLike;
  retryMs?: number; // first reconnect delay (default 1000)
  maxRetryMs?: number; // backoff cap (default 15000)
  idleTimeoutMs?: number; // default 45000
}

function isEvent(value: unknown): value is GpuscaleEvent {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.id === 'number' && typeof record.kind === 'string';
}

export const GATEWAY_STATS_EVENT = 'gateway_stats';

function isGatewayStats(value: unknown): value is GatewayStats {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.requests_total === 'number';
}

// The services of a gateway_stats message's data; entries of another shape are dropped, and
// null means the data was no such message at all.
export function parseGatewayStats(data: string): Record<string, GatewayStats> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const services = (parsed as Record<string, unknown>).services;
  if (typeof services !== 'object' || services === null || Array.isArray(services)) return null;
  const out: Record<string, GatewayStats> = {};
  for (const [name, stats] of Object.entries(services)) if (isGatewayStats(stats)) out[name] = stats;
  return out;
}

export class EventStreamClient {
  private stopped = true;
  private abort: AbortController | null = null;
  private wake: (() => void) | null = null;
  private lastId = '';
  private readonly fetchImpl: FetchLike;

  constructor(private readonly options: EventStreamOptions) {
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
  }

  get lastEventId(): string {
    return this.lastId;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
    this.setStatus('stopped', '');
  }

  private setStatus(status: StreamStatus, detail: string): void {
    this.options.onStatus?.(status, detail);
  }

  private async run(): Promise<void> {
    const base = this.options.retryMs ?? 1000;
    let delay = base;
    while (!this.stopped) {
      const outcome = await this.connectOnce();
      if (this.stopped) return;
      if (outcome.kind === 'unauthorized') {
        // a token another prompt replaced while this connection was refused: just retry
        const current = this.options.tokens.token();
        if (current !== null && current !== outcome.sent) continue;
        this.setStatus('unauthorized', outcome.detail);
        const token = await this.options.tokens.requestToken(outcome.detail);
        if (token === null) {
          this.stop();
          return;
        }
        continue;
      }
      if (outcome.kind === 'opened') delay = base;
      this.setStatus('reconnecting', outcome.detail);
      await this.sleep(delay);
      delay = Math.min(delay * 2, this.options.maxRetryMs ?? 15000);
    }
  }

  // One connection: resolves when it ends, with why.
  private async connectOnce(): Promise<{ kind: 'opened' | 'failed' | 'unauthorized'; detail: string; sent?: string | null }> {
    this.abort = new AbortController();
    const sent = this.options.tokens.token();
    const headers: Record<string, string> = {
      Accept: 'text/event-stream',
      ...authHeaders(sent),
    };
    if (this.lastId) headers['Last-Event-ID'] = this.lastId;
    this.setStatus('connecting', '');
    let response: Response;
    try {
      response = await this.fetchImpl(this.options.url, {
        headers,
        signal: this.abort.signal,
        cache: 'no-store',
      });
    } catch (error) {
      return { kind: 'failed', detail: `cannot reach the daemon (${describeError(error)})` };
    }
    if (response.status === 401) {
      const error = errorFromResponse(401, await response.text());
      return { kind: 'unauthorized', detail: error.message, sent };
    }
    if (!response.ok || !response.body) {
      const error = errorFromResponse(response.status, await response.text());
      return { kind: 'failed', detail: error.message };
    }
    this.setStatus('open', '');
    try {
      await this.read(response.body);
      return { kind: 'opened', detail: 'the stream ended' };
    } catch (error) {
      return { kind: 'opened', detail: `the stream broke (${describeError(error)})` };
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    const idleMs = this.options.idleTimeoutMs ?? 45000;
    let watchdog = setTimeout(() => this.abort?.abort(), idleMs);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        clearTimeout(watchdog);
        if (done || this.stopped) return;
        watchdog = setTimeout(() => this.abort?.abort(), idleMs);
        for (const message of parser.push(decoder.decode(value, { stream: true }))) {
          // message.id is the last id the parser saw, so an id-less message repeats it; it
          // is "" only before this connection's first id, which must not erase the resume point.
          if (message.id) this.lastId = message.id;
          if (message.event === GATEWAY_STATS_EVENT) this.deliverGatewayStats(message.data);
          else this.deliver(message.data);
        }
      }
    } finally {
      clearTimeout(watchdog);
      reader.releaseLock();
    }
  }

  private deliver(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return; // not an event object: nothing to show
    }
    if (isEvent(parsed)) this.options.onEvent(parsed);
  }

  private deliverGatewayStats(data: string): void {
    const services = parseGatewayStats(data);
    if (services) this.options.onGatewayStats?.(services);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
