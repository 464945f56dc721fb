// What every view gets, and what it returns: a view renders into `root`, starts its own
// polling/subscriptions and returns a function that stops them (called on navigation).

import type { ApiClient } from '../api/client';
import type { EventHub } from '../event_hub';
import type { GatewayHistory } from './gateway_model';

export interface ViewContext {
  api: ApiClient;
  events: EventHub;
  gateway: GatewayHistory; // the gateway's recent figures per service, fed by the event stream
  now: () => number; // Unix seconds
}

export type Dispose = () => void;
