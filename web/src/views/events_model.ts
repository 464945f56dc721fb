// Pure helpers of the Events view: filtering and merging the loaded history with live
// events (by id, newest first, bounded).

import type { GpuscaleEvent } from '../api/types';

export interface EventFilter {
  service: string; // "" = all
  kind: string; // "" = all
}

// Kinds the daemon and the local orchestrator emit (more may appear; the view adds the
// ones it sees).
export const KNOWN_KINDS: readonly string[] = [
  'decision',
  'manual_override',
  'rules_changed',
  'action_failed',
  'metrics_error',
  'metrics_recovered',
  'service_created',
  'service_updated',
  'service_deleted',
  'service_error',
  'service_skipped',
  'adoption_error',
  'replica_pending',
  'replica_started',
  'replica_ready',
  'replica_unhealthy',
  'replica_crashed',
  'replica_restart_scheduled',
  'replica_start_failed',
  'replica_startup_timeout',
  'replica_killed',
  'replica_stopped',
  'replica_stop_failed',
  'replica_adopted',
  'replica_cleaned_up',
  'replica_preempting',
  'replica_preempted',
];

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

export function kindOptions(seen: Iterable<string>): string[] {
  return [...new Set([...KNOWN_KINDS, ...seen])].filter((k) => k.length > 0).sort();
}
