// Pure helpers of the service page's Gateway panel: the figures it shows (formatted, with
// units) and what to do when there are none.

import type { GatewayStats, JsonValue } from '../api/types';
import { MISSING, formatLatency, formatPercent, formatRate } from '../format';

// A request rate: formatRate, but with two decimals below 0.1 req/s, where one request in
// the 30 s window (0.03 req/s) would otherwise read as "0.0 req/s".
export function formatRequestRate(value: number | null | undefined): string {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0 && value < 0.1) {
    return `${value.toFixed(2)} req/s`;
  }
  return formatRate(value, 'req/s');
}

// A 0..1 share as a percentage ("2.5 %").
export function formatRatio(value: number | null | undefined): string {
  return typeof value === 'number' && Number.isFinite(value) ? formatPercent(value * 100, 1) : MISSING;
}

// A latency that is usually far below a millisecond (the gateway's own added time): in us
// below 1 ms, where formatLatency's "0.0 ms" would hide it; as formatLatency above.
export function formatShortLatency(seconds: number | null | undefined): string {
  if (typeof seconds === 'number' && Number.isFinite(seconds)) {
    const us = Math.round(seconds * 1e6);
    if (Math.abs(us) < 1000) return `${us} \u00b5s`;
  }
  return formatLatency(seconds);
}

function count(value: number | null | undefined): string {
  return typeof value === 'number' && Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : MISSING;
}

export interface GatewayFigure {
  key: string; // stable, for tests and styling (data-stat)
  label: string;
  value: string;
}

// The panel's figures in display order: load and latency first, then counts and SLO shares.
export function gatewayFigures(stats: GatewayStats): GatewayFigure[] {
  return [
    { key: 'rate', label: 'Request rate', value: formatRequestRate(stats.request_rate_per_second) },
    { key: 'ttft_p50', label: 'TTFT p50', value: formatLatency(stats.ttft_p50_seconds) },
    { key: 'ttft_p90', label: 'TTFT p90', value: formatLatency(stats.ttft_p90_seconds) },
    { key: 'tpot_p50', label: 'TPOT p50', value: formatLatency(stats.tpot_p50_seconds) },
    { key: 'e2e_p90', label: 'E2E p90', value: formatLatency(stats.e2e_p90_seconds) },
    { key: 'added_p99', label: 'Gateway added p99', value: formatShortLatency(stats.added_latency_p99_seconds) },
    { key: 'error_ratio', label: 'Error ratio', value: formatRatio(stats.error_ratio) },
    { key: 'in_flight', label: 'In flight', value: count(stats.in_flight) },
    { key: 'queued', label: 'Queued', value: count(stats.queued) },
    { key: 'requests_total', label: 'Requests total', value: count(stats.requests_total) },
    { key: 'errors_total', label: 'Errors total', value: count(stats.errors_total) },
    { key: 'ttft_slo', label: 'Over TTFT SLO', value: formatRatio(stats.ttft_violation_ratio) },
    { key: 'tpot_slo', label: 'Over TPOT SLO', value: formatRatio(stats.tpot_violation_ratio) },
  ];
}

// The model names the gateway routes to this service: spec.models, which defaults to the
// service's name (docs/gateway.md).
export function servedModels(name: string, spec: JsonValue): string[] {
  const models = typeof spec === 'object' && spec !== null && !Array.isArray(spec) ? spec.models : undefined;
  const names = Array.isArray(models) ? models.filter((m): m is string => typeof m === 'string' && m !== '') : [];
  return names.length > 0 ? names : [name];
}

// Why the panel has no figures, and what to do about it.
export function gatewayEmptyHint(name: string, spec: JsonValue): string {
  const models = servedModels(name, spec).map((m) => `"${m}"`).join(' or ');
  return `Send OpenAI API requests with model ${models} to the gateway's address printed by ` +
    '`gpuscale serve` (its …/v1 URL); the request rate and latencies appear here within a few ' +
    'seconds. A daemon started with the gateway off (gateway.listen: off) shows none.';
}
