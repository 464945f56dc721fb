// TokenPrompt: the TokenProvider of the page. After a 401 it opens a modal dialog asking for
// the API bearer token, stores it in sessionStorage (TokenStore) and resolves every waiting
// request with it; Cancel resolves them with null. One dialog at a time.

import type { TokenProvider, TokenStore } from '../api/token_store';
import { h } from './dom';

export class TokenPrompt implements TokenProvider {
  private pending: Promise<string | null> | null = null;

  constructor(private readonly store: TokenStore) {}

  token(): string | null {
    return this.store.get();
  }

  requestToken(reason: string): Promise<string | null> {
    if (!this.pending) {
      this.pending = this.ask(reason).finally(() => {
        this.pending = null;
      });
    }
    return this.pending;
  }

  private ask(reason: string): Promise<string | null> {
    const hadToken = this.store.get() !== null;
    return new Promise((resolve) => {
      const input = h('input', {
        type: 'password',
        name: 'token',
        id: 'token-input',
        autocomplete: 'current-password',
        required: true,
      });
      const dialog = h(
        'dialog',
        { class: 'token-dialog', id: 'token-dialog' },
        h(
          'form',
          { method: 'dialog' },
          h('h2', null, 'API token required'),
          h('p', null, hadToken ? 'The daemon rejected the token: ' : 'The daemon asks for a token: ', reason),
          h('p', { class: 'hint' }, 'Use the value of api.token (or api.token_file) in the daemon config. ' +
            'It is kept for this browser tab only.'),
          h('label', { for: 'token-input' }, 'Bearer token'),
          input,
          h('div', { class: 'actions' },
            h('button', { type: 'submit', value: 'ok', class: 'primary' }, 'Use token'),
            h('button', { type: 'button', value: 'cancel', onclick: () => dialog.close('cancel') }, 'Cancel')),
        ),
      );
      dialog.addEventListener('close', () => {
        const value = input.value.trim();
        dialog.remove();
        if (dialog.returnValue === 'ok' && value) {
          this.store.set(value);
          resolve(value);
        } else {
          resolve(null);
        }
      });
      document.body.appendChild(dialog);
      dialog.showModal();
      input.focus();
    });
  }
}
