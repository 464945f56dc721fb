// TokenStore: the API bearer token for this browser tab, kept in sessionStorage (gone when
// the tab closes; never in localStorage or a cookie). The storage is injected for tests.

export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const KEY = 'gpuscale.token';

export class TokenStore {
  constructor(private readonly storage: KeyValueStorage | null) {}

  get(): string | null {
    const value = this.storage?.getItem(KEY) ?? null;
    return value && value.length > 0 ? value : null;
  }

  set(token: string): void {
    this.storage?.setItem(KEY, token.trim());
  }

  clear(): void {
    this.storage?.removeItem(KEY);
  }
}

// Supplies the token to requests and asks the user for one after a 401.
export interface TokenProvider {
  token(): string | null;
  // Resolves to the token the user entered, or null when they cancelled. Concurrent callers
  // share one prompt.
  requestToken(reason: string): Promise<string | null>;
}

export function authHeaders(token: string | null): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}
