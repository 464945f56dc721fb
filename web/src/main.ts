// Entry point: builds the page frame (navigation, live-stream indicator), the shared API
// client, token prompt and event stream, and mounts the view the URL hash names, replacing
// it on every hash change (no page reloads).

import './styles.css';
import { ApiClient } from './api/client';
import type { StreamStatus } from './api/event_stream';
import { TokenStore } from './api/token_store';
import { EventHub } from './event_hub';
import { NAV, navSection, parseRoute, type Route } from './router';
import { h, mount } from './ui/dom';
import { emptyState } from './ui/states';
import { TokenPrompt } from './ui/token_prompt';
import { eventsView } from './views/events_view';
import { experimentView } from './views/experiment_view';
import { gpusView } from './views/gpus_view';
import { serviceView } from './views/service_view';
import { servicesView } from './views/services_view';
import { simulationsView } from './views/simulations_view';
import { taskView } from './views/task_view';
import { tasksView } from './views/tasks_view';
import type { Dispose, ViewContext } from './views/view';

const STREAM_LABEL: Record<StreamStatus, string> = {
  connecting: 'connecting',
  open: 'live',
  reconnecting: 'reconnecting',
  unauthorized: 'token needed',
  stopped: 'offline',
};

function mountView(route: Route, root: HTMLElement, ctx: ViewContext): Dispose {
  switch (route.view) {
    case 'gpus':
      return gpusView(root, ctx);
    case 'services':
      return servicesView(root, ctx);
    case 'service':
      return serviceView(root, ctx, route.name);
    case 'events':
      return eventsView(root, ctx, { service: route.service, kind: route.kind });
    case 'tasks':
      return tasksView(root, ctx);
    case 'task':
      return taskView(root, ctx, route.id);
    case 'experiment':
      return experimentView(root, ctx, route.id);
    case 'simulations':
      return simulationsView(root, ctx);
    case 'not_found':
      mount(root, emptyState(`No page at ${route.path}.`, 'Pick a section above.'));
      return () => undefined;
  }
}

function start(app: HTMLElement): void {
  const tokens = new TokenPrompt(new TokenStore(window.sessionStorage));
  const ctx: ViewContext = {
    api: new ApiClient(tokens),
    events: new EventHub(tokens),
    now: () => Date.now() / 1000,
  };
  const links = NAV.map((n) => h('a', { href: n.hash, dataset: { view: n.view } }, n.label));
  const live = h('span', { class: 'stream-status', id: 'stream-status', title: 'live event stream' });
  const main = h('main', { id: 'view' });
  mount(app, h('header', { class: 'topbar' }, h('a', { class: 'brand', href: '#/gpus' }, 'gpuscale'),
    h('nav', null, links), live), main);
  ctx.events.watchStatus((status, detail) => {
    live.textContent = STREAM_LABEL[status];
    live.dataset.status = status;
    live.title = detail ? `live event stream: ${detail}` : 'live event stream';
  });

  let dispose: Dispose = () => undefined;
  const route = () => {
    dispose();
    const current = parseRoute(window.location.hash);
    const section = navSection(current);
    links.forEach((a) => a.classList.toggle('active', a.dataset.view === section));
    dispose = mountView(current, main, ctx);
  };
  window.addEventListener('hashchange', route);
  route();
  ctx.events.start();
}

const app = document.getElementById('app');
if (app) start(app);
