// Loading, empty and error panels that tell the user what to do next. Every view shows one
// of these instead of a blank area.

import { ApiError, describeError } from '../api/errors';
import { withCode } from './code_text';
import { h } from './dom';

export function loadingState(what: string): HTMLElement {
  return h('div', { class: 'state state-loading', role: 'status' }, `Loading ${what}…`);
}

export function emptyState(title: string, hint: string): HTMLElement {
  return h('div', { class: 'state state-empty' }, h('strong', null, title), h('p', null, withCode(hint)));
}

// What the user can do about `error`.
export function errorHint(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Reload the page; if it persists, check the browser console.';
  if (error.unreachable) {
    return 'Start the daemon (`gpuscale serve --config gpuscale.yaml`) or check the address; ' +
      'this page retries on its own.';
  }
  switch (error.status) {
    case 401:
      return 'This daemon requires an API token (api.token in its config). Reload and enter it.';
    case 404:
      return 'It may have been deleted: go back to the list.';
    case 503:
      return 'The daemon is starting or its GPU backend is unavailable; it retries on its own.';
    default:
      return 'See the daemon log (stderr of `gpuscale serve`) for details.';
  }
}

export function errorState(what: string, error: unknown): HTMLElement {
  return h(
    'div',
    { class: 'state state-error', role: 'alert' },
    h('strong', null, `Could not load ${what}: `),
    withCode(describeError(error)),
    h('p', null, withCode(errorHint(error))),
  );
}
