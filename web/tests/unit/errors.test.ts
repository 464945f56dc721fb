import { describe, expect, it } from 'vitest';
import { ApiError, errorFromResponse, formFieldFor, unreachableError } from '../../src/api/errors';

const RULE_FIELDS = ['name', 'threshold', 'step_size', 'cooldown_seconds'];

describe('API errors', () => {
  it('reads the API error body', () => {
    const error = errorFromResponse(400, JSON.stringify({
      error: { code: 'invalid_argument', message: 'threshold: expected a number, got \'high\' (line 1)', field: 'threshold' },
    }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
    expect(error.code).toBe('invalid_argument');
    expect(error.field).toBe('threshold');
    expect(error.message).toContain('expected a number');
  });

  it('treats a null field as no field', () => {
    const error = errorFromResponse(404, '{"error":{"code":"not_found","message":"no service x","field":null}}');
    expect(error.field).toBeNull();
    expect(error.code).toBe('not_found');
  });

  it('falls back to the status and a body snippet when the body is not the API\'s', () => {
    expect(errorFromResponse(502, '<html>Bad gateway</html>').message).toBe('HTTP 502: <html>Bad gateway</html>');
    expect(errorFromResponse(500, '').message).toBe('HTTP 500 without an error body');
    expect(errorFromResponse(500, '{"error":"x"}').code).toBe('http_500');
  });

  it('says what to do when the daemon cannot be reached', () => {
    const error = unreachableError('http://127.0.0.1:8080', new TypeError('Failed to fetch'));
    expect(error.unreachable).toBe(true);
    expect(error.message).toContain('gpuscale serve');
    expect(error.message).toContain('Failed to fetch');
  });

  it.each([
    ['threshold', 'threshold'],
    ['rules[0].threshold', 'threshold'],
    ['request body.threshold', 'threshold'],
    ['rule.step_size', 'step_size'],
    ['metric', null],
    [null, null],
    ['', null],
  ])('maps API field %s to form field %s', (apiField, expected) => {
    expect(formFieldFor(apiField, RULE_FIELDS)).toBe(expected);
  });
});
