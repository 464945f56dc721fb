// EventHub: the page's one live connection to /v1/events/stream, shared by every view. Views
// subscribe to events (and to the connection status) and unsubscribe when they unmount;
// the hub keeps the stream open across view changes so that no event is missed. The
// gateway's periodic figures (gateway_stats, not stored events) have listeners of their own.

import { EventStreamClient, type StreamStatus } from './api/event_stream';
import type { TokenProvider } from './api/token_store';
import type { GatewayStats, GpuscaleEvent } from './api/types';

export type EventListener = (event: GpuscaleEvent) => void;
export type GatewayStatsListener = (services: Record<string, GatewayStats>) => void;
export type StatusListener = (status: StreamStatus, detail: string) => void;

export class EventHub {
  private readonly listeners = new Set<EventListener>();
  private readonly statusListeners = new Set<StatusListener>();
  private readonly gatewayListeners = new Set<GatewayStatsListener>();
  private readonly client: EventStreamClient;
  private status: StreamStatus = 'stopped';
  private detail = '';

  constructor(tokens: TokenProvider, url = '/v1/events/stream') {
    this.client = new EventStreamClient({
      url,
      tokens,
      onEvent: (event) => {
        for (const listener of [...this.listeners]) listener(event);
      },
      onGatewayStats: (services) => {
        for (const listener of [...this.gatewayListeners]) listener(services);
      },
      onStatus: (status, detail) => {
        this.status = status;
        this.detail = detail;
        for (const listener of [...this.statusListeners]) listener(status, detail);
      },
    });
  }

  start(): void {
    this.client.start();
  }

  stop(): void {
    this.client.stop();
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // The gateway's per-service figures, each time the stream sends them (every 5 s).
  subscribeGatewayStats(listener: GatewayStatsListener): () => void {
    this.gatewayListeners.add(listener);
    return () => this.gatewayListeners.delete(listener);
  }

  // Calls `listener` now with the current status, then on every change.
  watchStatus(listener: StatusListener): () => void {
    this.statusListeners.add(listener);
    listener(this.status, this.detail);
    return () => this.statusListeners.delete(listener);
  }
}
