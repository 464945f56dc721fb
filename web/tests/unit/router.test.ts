import { describe, expect, it } from 'vitest';
import { navSection, parseRoute, routeHash, type Route } from '../../src/router';

describe('router', () => {
  it.each<[string, Route]>([
    ['', { view: 'gpus' }],
    ['#', { view: 'gpus' }],
    ['#/', { view: 'gpus' }],
    ['#/gpus', { view: 'gpus' }],
    ['#/services', { view: 'services' }],
    ['#/services/', { view: 'services' }],
    ['#/services/chat', { view: 'service', name: 'chat' }],
    ['#/services/a%20b', { view: 'service', name: 'a b' }],
    ['#/events', { view: 'events', service: '', kind: '' }],
    ['#/events?service=chat&kind=decision', { view: 'events', service: 'chat', kind: 'decision' }],
    ['#/tasks', { view: 'tasks' }],
    ['#/tasks/3', { view: 'task', id: 3 }],
    ['#/experiments/17', { view: 'experiment', id: 17 }],
    ['#/simulations', { view: 'simulations' }],
    ['#/simulations/', { view: 'simulations' }],
    ['#/simulations/x', { view: 'not_found', path: '/simulations/x' }],
    ['#/tasks/0', { view: 'not_found', path: '/tasks/0' }],
    ['#/tasks/x1', { view: 'not_found', path: '/tasks/x1' }],
    ['#/experiments/-2', { view: 'not_found', path: '/experiments/-2' }],
    ['#/nope', { view: 'not_found', path: '/nope' }],
    ['#/services/chat/extra', { view: 'not_found', path: '/services/chat/extra' }],
    ['#/services/%E0%A4%A', { view: 'not_found', path: '/services/%E0%A4%A' }],
  ])('parses %s', (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
  });

  it.each<Route>([
    { view: 'gpus' },
    { view: 'services' },
    { view: 'service', name: 'chat-2' },
    { view: 'service', name: 'a/b?c' },
    { view: 'events', service: '', kind: '' },
    { view: 'events', service: 'chat', kind: 'replica_ready' },
    { view: 'tasks' },
    { view: 'task', id: 12 },
    { view: 'experiment', id: 7 },
    { view: 'simulations' },
  ])('round-trips %j', (route) => {
    expect(parseRoute(routeHash(route))).toEqual(route);
  });

  it('highlights the services section on a service page', () => {
    expect(navSection({ view: 'service', name: 'x' })).toBe('services');
    expect(navSection({ view: 'not_found', path: '/x' })).toBeNull();
    expect(navSection({ view: 'events', service: '', kind: '' })).toBe('events');
    expect(navSection({ view: 'task', id: 1 })).toBe('tasks');
    expect(navSection({ view: 'experiment', id: 1 })).toBe('tasks');
    expect(navSection({ view: 'simulations' })).toBe('simulations');
  });
});
