// ApiError: one failed API call as the dashboard shows it, built from the API's error body
// {"error": {"code", "message", "field"}} or from a transport failure (daemon unreachable).
// formFieldFor() maps the API's field path (e.g. "threshold", "rules[0].threshold",
// "request body.threshold") to the form input that should show the message.

import type { ApiErrorBody } from './types';

export class ApiError extends Error {
  readonly status: number; // HTTP status; 0 = no answer (network error)
  readonly code: string; // "invalid_argument", "not_found", ..., "unreachable"
  readonly field: string | null;

  constructor(status: number, code: string, message: string, field: string | null = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field;
  }

  get unreachable(): boolean {
    return this.status === 0;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isApiErrorBody(value: unknown): value is ApiErrorBody {
  if (!isRecord(value) || !isRecord(value.error)) return false;
  const { code, message, field } = value.error;
  return (
    typeof code === 'string' &&
    typeof message === 'string' &&
    (field === null || field === undefined || typeof field === 'string')
  );
}

// The error an answer with a non-2xx `status` stands for. `bodyText` is the raw body: the
// API's error object when it sent one, else anything (a proxy's HTML page, nothing at all).
export function errorFromResponse(status: number, bodyText: string): ApiError {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = null;
  }
  if (isApiErrorBody(parsed)) {
    const { code, message, field } = parsed.error;
    return new ApiError(status, code, message, field ?? null);
  }
  const snippet = bodyText.trim().slice(0, 200);
  const message = snippet
    ? `HTTP ${status}: ${snippet}`
    : `HTTP ${status} without an error body`;
  return new ApiError(status, `http_${status}`, message);
}

export function unreachableError(url: string, cause: unknown): ApiError {
  const detail = cause instanceof Error ? ` (${cause.message})` : '';
  return new ApiError(
    0,
    'unreachable',
    `Cannot reach the gpuscale daemon at ${url}${detail}. Is \`gpuscale serve\` running? ` +
      'The page retries on its own.',
  );
}

// The form field (one of `fields`) an API error path names, or null when it names none of
// them: the last path segment, without list indexes, is compared.
export function formFieldFor(apiField: string | null, fields: readonly string[]): string | null {
  if (!apiField) return null;
  if (fields.includes(apiField)) return apiField;
  const segments = apiField.split(/[.\s]/).filter((s) => s.length > 0);
  const last = (segments[segments.length - 1] ?? '').replace(/\[\d+\]$/, '');
  return fields.includes(last) ? last : null;
}

// A one-line description for banners: "not_found: service \"x\" does not exist".
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}
