// Hash routes of the dashboard ("#/gpus", "#/services/chat", "#/events?service=chat&kind=
// decision", "#/tasks/3", "#/experiments/7", "#/simulations"). Hash routing means the daemon serves one index.html and needs no SPA fallback.
// Pure functions: parseRoute(location.hash) and routeHash(route) are inverse.

export type Route =
  | { view: 'gpus' }
  | { view: 'services' }
  | { view: 'service'; name: string }
  | { view: 'events'; service: string; kind: string }
  | { view: 'tasks' }
  | { view: 'task'; id: number }
  | { view: 'experiment'; id: number }
  | { view: 'simulations' }
  | { view: 'not_found'; path: string };

export const NAV: ReadonlyArray<{ view: Route['view']; label: string; hash: string }> = [
  { view: 'gpus', label: 'GPUs', hash: '#/gpus' },
  { view: 'services', label: 'Services', hash: '#/services' },
  { view: 'events', label: 'Events', hash: '#/events' },
  { view: 'tasks', label: 'Tasks', hash: '#/tasks' },
  { view: 'simulations', label: 'Simulations', hash: '#/simulations' },
];

// A positive integer id ("7"), else null.
function parseId(text: string): number | null {
  return /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : null;
}

function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [pathPart = '', queryPart = ''] = raw.split('?', 2);
  const segments = pathPart.split('/').filter((s) => s.length > 0);
  const query = new URLSearchParams(queryPart);
  const [first, second, ...rest] = segments;
  if (first === undefined) return { view: 'gpus' };
  if (rest.length === 0) {
    if (first === 'gpus' && second === undefined) return { view: 'gpus' };
    if (first === 'services' && second === undefined) return { view: 'services' };
    if (first === 'services' && second !== undefined) {
      const name = safeDecode(second);
      if (name) return { view: 'service', name };
    }
    if (first === 'events' && second === undefined) {
      return { view: 'events', service: query.get('service') ?? '', kind: query.get('kind') ?? '' };
    }
    if (first === 'tasks' && second === undefined) return { view: 'tasks' };
    if (first === 'simulations' && second === undefined) return { view: 'simulations' };
    const id = second === undefined ? null : parseId(second);
    if (first === 'tasks' && id !== null) return { view: 'task', id };
    if (first === 'experiments' && id !== null) return { view: 'experiment', id };
  }
  return { view: 'not_found', path: `/${pathPart.replace(/^\/+/, '')}` };
}

export function routeHash(route: Route): string {
  switch (route.view) {
    case 'gpus':
    case 'services':
    case 'tasks':
    case 'simulations':
      return `#/${route.view}`;
    case 'service':
      return `#/services/${encodeURIComponent(route.name)}`;
    case 'task':
      return `#/tasks/${route.id}`;
    case 'experiment':
      return `#/experiments/${route.id}`;
    case 'events': {
      const query = new URLSearchParams();
      if (route.service) query.set('service', route.service);
      if (route.kind) query.set('kind', route.kind);
      const text = query.toString();
      return text ? `#/events?${text}` : '#/events';
    }
    case 'not_found':
      return `#${route.path}`;
  }
}

// Which top-level navigation entry a route belongs to (for highlighting).
export function navSection(route: Route): Route['view'] | null {
  if (route.view === 'service') return 'services';
  if (route.view === 'task' || route.view === 'experiment') return 'tasks';
  if (route.view === 'not_found') return null;
  return route.view;
}
