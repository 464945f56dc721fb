// ApiClient: typed calls to gpuscale's REST API (docs/api.md). Every method resolves to the
// documented JSON shape or rejects with an ApiError (the API's error body, or "unreachable").
// A 401 asks the TokenProvider for a token (the token prompt) and retries with it; a user
// who cancels gets the 401 error.
//
// The client trusts the API for shapes (it is the single source of truth) but checks the
// envelope of list answers so that a wrong URL fails loudly instead of rendering nothing.

import { ApiError, errorFromResponse, unreachableError } from './errors';
import { authHeaders, type TokenProvider } from './token_store';
import type {
  EventQuery,
  Experiment,
  GpuHistory,
  GpuSnapshot,
  GpuscaleEvent,
  HistoryQuery,
  Lease,
  Replica,
  Rule,
  RuleInput,
  Service,
  ServiceHistory,
  Task,
  TaskSummary,
} from './types';

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

// A request body sent exactly as written (not re-serialized): the daemon keeps a submitted
// task's text as its `source_text`, and its error lines refer to that text.
export class RawBody {
  constructor(readonly text: string, readonly contentType = 'application/json') {}
}

// A list answer: a bare array or {"<key>": [...]}.
export function unwrapList<T>(body: unknown, key: string): T[] {
  if (Array.isArray(body)) return body as T[];
  if (typeof body === 'object' && body !== null && key in body) {
    const list = (body as Record<string, unknown>)[key];
    if (Array.isArray(list)) return list as T[];
  }
  throw new ApiError(200, 'bad_response', `expected a list under "${key}" in the API's answer`);
}

export function eventQueryString(query: EventQuery): string {
  const params = new URLSearchParams();
  if (query.since_id !== undefined) params.set('since_id', String(query.since_id));
  if (query.service) params.set('service', query.service);
  if (query.kind) params.set('kind', query.kind);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  const text = params.toString();
  return text ? `?${text}` : '';
}

// "?from=…&to=…&step=…" with whole seconds; omitted fields are left to the server.
export function historyQueryString(query: HistoryQuery): string {
  const params = new URLSearchParams();
  for (const key of ['from', 'to', 'step'] as const) {
    const value = query[key];
    if (value !== undefined && Number.isFinite(value)) params.set(key, String(Math.floor(value)));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

export class ApiClient {
  constructor(
    private readonly tokens: TokenProvider,
    private readonly fetchImpl: FetchLike = (input, init) => fetch(input, init),
    private readonly baseUrl = '',
  ) {}

  gpus(): Promise<GpuSnapshot> {
    return this.request<GpuSnapshot>('GET', '/v1/gpus');
  }

  gpuHistory(windowSeconds: number): Promise<GpuHistory> {
    return this.request<GpuHistory>('GET', `/v1/gpus/history?seconds=${windowSeconds}`);
  }

  async services(): Promise<Service[]> {
    return unwrapList<Service>(await this.request('GET', '/v1/services'), 'services');
  }

  service(name: string): Promise<Service> {
    return this.request<Service>('GET', `/v1/services/${encodeURIComponent(name)}`);
  }

  // GET /v1/services/{name}/history; a daemon without the endpoint answers 404 (as for an
  // unknown service).
  serviceHistory(service: string, query: HistoryQuery = {}): Promise<ServiceHistory> {
    return this.request<ServiceHistory>('GET',
      `/v1/services/${encodeURIComponent(service)}/history${historyQueryString(query)}`);
  }

  async rules(service: string): Promise<Rule[]> {
    const body = await this.request('GET', `/v1/services/${encodeURIComponent(service)}/rules`);
    return unwrapList<Rule>(body, 'rules');
  }

  addRule(service: string, rule: RuleInput): Promise<Rule> {
    return this.request<Rule>('POST', `/v1/services/${encodeURIComponent(service)}/rules`, rule);
  }

  async deleteRule(service: string, id: number): Promise<void> {
    await this.request('DELETE', `/v1/services/${encodeURIComponent(service)}/rules/${id}`);
  }

  // `replicas` null hands the count back to the policy.
  setReplicas(service: string, replicas: number | string | null): Promise<Service> {
    const path = `/v1/services/${encodeURIComponent(service)}/replicas`;
    return this.request<Service>('PUT', path, { replicas });
  }

  async replicas(service: string): Promise<Replica[]> {
    const body = await this.request('GET', `/v1/services/${encodeURIComponent(service)}/replicas`);
    return unwrapList<Replica>(body, 'replicas');
  }

  async leases(): Promise<Lease[]> {
    return unwrapList<Lease>(await this.request('GET', '/v1/leases'), 'leases');
  }

  async events(query: EventQuery): Promise<GpuscaleEvent[]> {
    const body = await this.request('GET', `/v1/events${eventQueryString(query)}`);
    return unwrapList<GpuscaleEvent>(body, 'events');
  }

  // GET /v1/events/kinds: every kind the daemon stores; [] from a daemon without the
  // endpoint (404), whose kinds the view then learns from the events it sees.
  async eventKinds(): Promise<string[]> {
    try {
      return unwrapList<string>(await this.request('GET', '/v1/events/kinds'), 'kinds');
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return [];
      throw error;
    }
  }

  // GET /v1/tasks (newest first); null when this daemon has no tasks API (404).
  async tasks(): Promise<TaskSummary[] | null> {
    try {
      return unwrapList<TaskSummary>(await this.request('GET', '/v1/tasks'), 'tasks');
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  // The full task: definition and every experiment (by index).
  task(id: number): Promise<Task> {
    return this.request<Task>('GET', `/v1/tasks/${id}`);
  }

  // POST /v1/tasks with the task file's text as typed (JSON); resolves to the new task.
  submitTask(definitionText: string): Promise<Task> {
    return this.request<Task>('POST', '/v1/tasks', new RawBody(definitionText));
  }

  // DELETE /v1/tasks/{id}: cancels it; resolves to the task (status "cancelled"). A task
  // that already ended rejects with 409 failed_precondition.
  cancelTask(id: number): Promise<Task> {
    return this.request<Task>('DELETE', `/v1/tasks/${id}`);
  }

  experiment(id: number): Promise<Experiment> {
    return this.request<Experiment>('GET', `/v1/experiments/${id}`);
  }

  // One request; retries after a 401 for as long as the user supplies new tokens. A 401 to
  // a token that another request's prompt has replaced meanwhile is retried with the new
  // one without asking again (else a request answered late, as the page's many concurrent
  // ones can be, would reopen the prompt right after the user entered the right token).
  async request<T = unknown>(method: Method, path: string, body?: unknown): Promise<T> {
    for (;;) {
      const sent = this.tokens.token();
      const response = await this.send(method, path, body, sent);
      const text = await response.text();
      if (response.ok) return (text ? JSON.parse(text) : null) as T;
      const error = errorFromResponse(response.status, text);
      if (response.status !== 401) throw error;
      const current = this.tokens.token();
      if (current !== null && current !== sent) continue;
      const token = await this.tokens.requestToken(error.message);
      if (token === null) throw error;
    }
  }

  private async send(method: Method, path: string, body: unknown, token: string | null): Promise<Response> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      ...authHeaders(token),
    };
    const init: RequestInit = { method, headers, cache: 'no-store' };
    if (body instanceof RawBody) {
      headers['Content-Type'] = body.contentType;
      init.body = body.text;
    } else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const url = `${this.baseUrl}${path}`;
    try {
      return await this.fetchImpl(url, init);
    } catch (cause) {
      throw unreachableError(this.baseUrl || 'this page\'s origin', cause);
    }
  }
}

// The newest `keep` events matching `query`: the API lists oldest first from since_id, so
// this pages forward (at most `maxPages` pages of `pageSize`) and keeps the tail.
export async function recentEvents(
  api: Pick<ApiClient, 'events'>,
  query: Omit<EventQuery, 'since_id' | 'limit'>,
  keep: number,
  pageSize = 1000,
  maxPages = 50,
): Promise<GpuscaleEvent[]> {
  let tail: GpuscaleEvent[] = [];
  let sinceId = 0;
  for (let page = 0; page < maxPages; page++) {
    const batch = await api.events({ ...query, since_id: sinceId, limit: pageSize });
    tail = tail.concat(batch).slice(-keep);
    const last = batch[batch.length - 1];
    if (batch.length < pageSize || last === undefined) break;
    sinceId = last.id;
  }
  return tail;
}
