// What every view gets, and what it returns: a view renders into `root`, starts its own
// polling/subscriptions and returns a function that stops them (called on navigation).

import type { ApiClient } from '../api/client';
import type { EventHub } from '../event_hub';

export interface ViewContext {
  api: ApiClient;
  events: EventHub;
  now: () => number; // Unix seconds
}

export type Dispose = () => void;
