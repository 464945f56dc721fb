// Pure helpers of the Events view: filtering and merging the loaded history with live
// events (by id, newest first, bounded).

import type { GpuscaleEvent } from '../api/types';

export interface EventFilter {
  service: string; // "" = all
  kind: string; // "" = all
}

export function matchesFilter(event: GpuscaleEvent, filter: EventFilter): boolean {
  return (!filter.service || event.service === filter.service) && (!filter.kind || event.kind === filter.kind);
}

// `current` (newest first) plus `incoming` (any order), without duplicates, newest first,
// at most `cap`.
export function mergeEvents(current: readonly GpuscaleEvent[], incoming: readonly GpuscaleEvent[],
  cap: number): GpuscaleEvent[] {
  const byId = new Map<number, GpuscaleEvent>();
  for (const e of current) byId.set(e.id, e);
  for (const e of incoming) byId.set(e.id, e);
  return [...byId.values()].sort((a, b) => b.id - a.id).slice(0, cap);
}

// What an event is about, for its link: a service, or the task (and experiment) that task_*
// and experiment_* events name in data.task_id / data.experiment_id; null for neither.
export type EventSubject =
  | { kind: 'service'; name: string }
  | { kind: 'task'; taskId: number; experimentId: number | null };

function dataId(event: GpuscaleEvent, key: string): number | null {
  const data = event.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const value = data[key];
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : null;
}

export function eventSubject(event: GpuscaleEvent): EventSubject | null {
  if (event.service) return { kind: 'service', name: event.service };
  const taskId = dataId(event, 'task_id');
  return taskId === null ? null : { kind: 'task', taskId, experimentId: dataId(event, 'experiment_id') };
}

// The kind filter's choices: the daemon's list (GET /v1/events/kinds) and any kind seen, once
// each, sorted.
export function kindOptions(known: Iterable<string>, seen: Iterable<string>): string[] {
  return [...new Set([...known, ...seen])].filter((k) => k.length > 0).sort();
}
