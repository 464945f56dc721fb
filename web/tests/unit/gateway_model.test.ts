import { describe, expect, it } from 'vitest';
import { MISSING } from '../../src/format';
import {
  formatRatio,
  formatRequestRate,
  formatShortLatency,
  gatewayEmptyHint,
  gatewayFigures,
  servedModels,
} from '../../src/views/gateway_model';
import { gatewayStats } from './fixtures';

function figureMap(stats = gatewayStats()): Record<string, string> {
  return Object.fromEntries(gatewayFigures(stats).map((f) => [f.key, f.value]));
}

describe('gateway figures', () => {
  it('formats every figure with its unit, latencies in ms below 1 s', () => {
    expect(figureMap()).toEqual({
      rate: '0.3 req/s',
      ttft_p50: '30.0 ms',
      ttft_p90: '38.0 ms', // 0.038000000000000006 from the API
      tpot_p50: '5.0 ms',
      e2e_p90: '270 ms',
      added_p99: '47 \u00b5s',
      error_ratio: '6.3 %',
      in_flight: '2',
      queued: '0',
      requests_total: '14',
      errors_total: '1',
      ttft_slo: '0.0 %',
      tpot_slo: MISSING,
    });
  });

  it('shows a missing window figure as a dash, and latencies of 1 s and more in s', () => {
    const values = figureMap(gatewayStats({
      request_rate_per_second: null, error_ratio: null, ttft_p50_seconds: 1.5, ttft_p90_seconds: null,
      tpot_p50_seconds: null, e2e_p90_seconds: 12.25, ttft_violation_ratio: null, requests_total: 123456,
    }));
    expect(values.rate).toBe(MISSING);
    expect(values.error_ratio).toBe(MISSING);
    expect(values.ttft_p50).toBe('1.50 s');
    expect(values.ttft_p90).toBe(MISSING);
    expect(values.tpot_p50).toBe(MISSING);
    expect(values.e2e_p90).toBe('12.25 s');
    expect(values.ttft_slo).toBe(MISSING);
    expect(values.requests_total).toBe('123,456');
  });

  it.each([
    [0.000047, '47 \u00b5s'],
    [0.0009996, '1.0 ms'],
    [0.0025, '2.5 ms'],
    [1.5, '1.50 s'],
    [null, MISSING],
  ])('formats the gateway\'s own added latency %s as %s', (seconds, text) => {
    expect(formatShortLatency(seconds)).toBe(text);
  });

  it('keeps the figures in display order with distinct keys', () => {
    const keys = gatewayFigures(gatewayStats()).map((f) => f.key);
    expect(keys.slice(0, 3)).toEqual(['rate', 'ttft_p50', 'ttft_p90']);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it.each([
    [0.0333, '0.03 req/s'], // one request in the 30 s window
    [0, '0.0 req/s'],
    [0.1, '0.1 req/s'],
    [250.4, '250 req/s'],
    [null, MISSING],
  ])('formatRequestRate(%s) = %s', (value, expected) => {
    expect(formatRequestRate(value)).toBe(expected);
  });

  it.each([
    [0, '0.0 %'],
    [0.025, '2.5 %'],
    [1, '100.0 %'],
    [null, MISSING],
    [Number.NaN, MISSING],
  ])('formatRatio(%s) = %s', (value, expected) => {
    expect(formatRatio(value)).toBe(expected);
  });
});

describe('gateway empty state', () => {
  it('names the models the gateway routes to the service, by default its name', () => {
    expect(servedModels('demo', { name: 'demo', models: ['llama-8b', 'meta/llama'] })).toEqual(['llama-8b', 'meta/llama']);
    expect(servedModels('demo', { name: 'demo' })).toEqual(['demo']);
    expect(servedModels('demo', { models: [] })).toEqual(['demo']);
    expect(servedModels('demo', null)).toEqual(['demo']);
    const hint = gatewayEmptyHint('demo', { name: 'demo' });
    expect(hint).toContain('model "demo"');
    expect(hint).toContain('printed by `gpuscale serve`');
    expect(hint).not.toMatch(/:\d{4}/); // no guessed port: the API does not expose the gateway's address
  });
});
