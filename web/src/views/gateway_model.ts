// Pure helpers of the service page's Gateway panel: the figures it shows (formatted, with
// units) and the short history of request rate and TTFT behind its charts. The API keeps no
// such history, so the page samples what it receives (gateway_stats stream messages every
// 5 s, and the service poll while the page is open) for the last 10 minutes; a reload
// starts over.

import type { GatewayStats, JsonValue } from '../api/types';
import { SampleBuffer, type ChartData } from '../charts/series';
import { MISSING, formatLatency, formatPercent, formatRate } from '../format';

export const GATEWAY_HISTORY_SECONDS = 600;
const MAX_SAMPLES = 1000; // 10 min of 2 s polls plus 5 s stream messages is about 420

export interface GatewaySample {
  t: number; // Unix seconds, when the page received the figures
  rate: number | null; // req/s over the last 30 s
  ttftP50: number | null; // seconds
  ttftP90: number | null;
}

export function gatewaySample(stats: GatewayStats, t: number): GatewaySample {
  return {
    t,
    rate: finite(stats.request_rate_per_second),
    ttftP50: finite(stats.ttft_p50_seconds),
    ttftP90: finite(stats.ttft_p90_seconds),
  };
}

function finite(value: number | null | undefined): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

// Per service, the samples of the last GATEWAY_HISTORY_SECONDS. One instance for the page
// (main.ts feeds it every gateway_stats message), so a service's history is there when its
// page opens.
export class GatewayHistory {
  private readonly buffers = new Map<string, SampleBuffer<GatewaySample>>();

  // A null `stats` (no figures yet) adds nothing.
  record(service: string, stats: GatewayStats | null, t: number): void {
    if (!stats) return;
    let buffer = this.buffers.get(service);
    if (!buffer) {
      buffer = new SampleBuffer<GatewaySample>(MAX_SAMPLES, GATEWAY_HISTORY_SECONDS);
      this.buffers.set(service, buffer);
    }
    buffer.push(gatewaySample(stats, t));
  }

  recordAll(services: Readonly<Record<string, GatewayStats>>, t: number): void {
    for (const [name, stats] of Object.entries(services)) this.record(name, stats, t);
  }

  // Oldest first; only those within the window before `now` (the buffer trims on push, and
  // a service can go quiet).
  samples(service: string, now: number): GatewaySample[] {
    const all = this.buffers.get(service)?.all ?? [];
    return all.filter((s) => s.t >= now - GATEWAY_HISTORY_SECONDS);
  }
}

export function rateChartData(samples: readonly GatewaySample[]): ChartData {
  return { x: samples.map((s) => s.t), series: [{ label: 'requests', values: samples.map((s) => s.rate) }] };
}

// TTFT in ms, the chart's unit (the axis then reads "30 ms" rather than "0.03 s").
export function ttftChartData(samples: readonly GatewaySample[]): ChartData {
  const ms = (v: number | null) => (v === null ? null : v * 1000);
  return {
    x: samples.map((s) => s.t),
    series: [
      { label: 'p50', values: samples.map((s) => ms(s.ttftP50)) },
      { label: 'p90', values: samples.map((s) => ms(s.ttftP90)) },
    ],
  };
}

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
