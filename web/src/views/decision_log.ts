// Decision log of a service page: the controller's decisions (events of kind "decision"),
// newest first, each with its reason and details; live events are prepended as they come.

import type { ApiClient } from '../api/client';
import { recentEvents } from '../api/client';
import type { GpuscaleEvent, JsonValue } from '../api/types';
import { formatClock } from '../format';
import { h, mount } from '../ui/dom';
import { emptyState, errorState, loadingState } from '../ui/states';

const KEEP = 100;

function detailLines(data: JsonValue): string[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const details = data.details;
  return Array.isArray(details) ? details.filter((d): d is string => typeof d === 'string') : [];
}

function entry(event: GpuscaleEvent): HTMLElement {
  const details = detailLines(event.data);
  return h('li', { class: 'decision', dataset: { eventId: event.id } },
    h('time', { datetime: event.at }, formatClock(event.at, true)),
    h('div', null, event.message,
      details.length > 0 ? h('ul', { class: 'details' }, details.map((d) => h('li', null, d))) : null));
}

export class DecisionLog {
  readonly element: HTMLElement;
  private readonly list = h('ol', { class: 'decision-log', id: 'decision-log' });
  private readonly body = h('div', null, loadingState('decisions'));
  private events: GpuscaleEvent[] = []; // oldest first

  constructor(private readonly api: ApiClient, private readonly service: string) {
    this.element = h('section', { class: 'panel' }, h('h2', null, 'Decision log'), this.body);
  }

  get decisions(): readonly GpuscaleEvent[] {
    return this.events;
  }

  async load(): Promise<void> {
    try {
      this.events = await recentEvents(this.api, { service: this.service, kind: 'decision' }, KEEP);
      this.render();
    } catch (error) {
      mount(this.body, errorState('the decision log', error));
    }
  }

  add(event: GpuscaleEvent): void {
    if (this.events.some((e) => e.id === event.id)) return;
    this.events = [...this.events, event].slice(-KEEP);
    this.render();
  }

  private render(): void {
    if (this.events.length === 0) {
      mount(this.body, emptyState('No decisions recorded yet.',
        'The daemon records a decision when the desired replica count changes; it ticks every loop_interval_seconds.'));
      return;
    }
    mount(this.list, [...this.events].reverse().map(entry));
    mount(this.body, this.list);
  }
}
