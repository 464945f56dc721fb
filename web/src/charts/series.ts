// Data shaping for the time-series charts: API answers -> column data (one x array of Unix
// seconds, one y array per line, null for a missing reading), the layout uPlot draws.
// Pure functions; unit-tested.

import type { Gpu, GpuHistoryPoint, Service } from '../api/types';
import { memoryPercent, parseTime } from '../format';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  dash?: boolean; // drawn dashed (a target or threshold)
}

export interface ChartData {
  x: number[];
  series: ChartSeries[];
}

export type GpuMetric = 'utilization' | 'memory' | 'temperature' | 'power';

export interface GpuMetricSpec {
  title: string;
  unit: string; // axis and tooltip unit
  percent: boolean; // y axis fixed to 0..100
  value: (gpu: Gpu) => number | null;
}

export const GPU_METRICS: Record<GpuMetric, GpuMetricSpec> = {
  utilization: { title: 'Utilization', unit: '%', percent: true, value: (g) => g.utilization_percent },
  memory: {
    title: 'Memory used',
    unit: '%',
    percent: true,
    value: (g) => memoryPercent(g.memory_used_mb, g.memory_total_mb),
  },
  temperature: { title: 'Temperature', unit: '°C', percent: false, value: (g) => g.temperature_c },
  power: { title: 'Power draw', unit: 'W', percent: false, value: (g) => g.power_draw_w },
};

export const GPU_METRIC_ORDER: readonly GpuMetric[] = ['utilization', 'memory', 'temperature', 'power'];

// One line per GPU (by index, in index order) over the history's points, oldest first.
// A GPU absent from a point (or a null reading) is a gap in its line.
export function gpuHistorySeries(points: readonly GpuHistoryPoint[], metric: GpuMetric): ChartData {
  const spec = GPU_METRICS[metric];
  const sorted = points
    .map((p) => ({ t: parseTime(p.timestamp), gpus: p.gpus }))
    .filter((p) => Number.isFinite(p.t))
    .sort((a, b) => a.t - b.t);
  const labels = new Map<number, string>();
  for (const point of sorted) {
    for (const gpu of point.gpus) {
      if (!labels.has(gpu.index)) labels.set(gpu.index, `GPU ${gpu.index}`);
    }
  }
  const indexes = [...labels.keys()].sort((a, b) => a - b);
  const series = indexes.map((index) => ({
    label: labels.get(index) ?? `GPU ${index}`,
    values: sorted.map((p) => {
      const gpu = p.gpus.find((g) => g.index === index);
      return gpu ? spec.value(gpu) : null;
    }),
  }));
  return { x: sorted.map((p) => p.t), series };
}

// Number of drawn points (non-null values) over all lines.
export function countPoints(data: ChartData): number {
  let count = 0;
  for (const s of data.series) {
    for (const v of s.values) if (v !== null && Number.isFinite(v)) count += 1;
  }
  return count;
}

// One observation of a service's replica counts.
export interface ReplicaSample {
  t: number; // Unix seconds
  desired: number;
  ready: number;
  starting: number;
  pending: number;
  draining: number;
}

// `replicas` counts pending + starting + ready; starting is what remains.
export function sampleFromService(service: Service, t: number): ReplicaSample {
  return {
    t,
    desired: service.desired_replicas,
    ready: service.ready_replicas,
    pending: service.pending_replicas,
    starting: Math.max(0, service.replicas - service.ready_replicas - service.pending_replicas),
    draining: service.draining_replicas,
  };
}

// A bounded, time-ordered buffer of samples (the service charts poll; a page reload starts
// a new history because the API keeps none of these counts over time).
export class SampleBuffer<T extends { t: number }> {
  private samples: T[] = [];

  constructor(
    private readonly maxSamples: number,
    private readonly maxAgeSeconds: number,
  ) {}

  push(sample: T): void {
    const last = this.samples[this.samples.length - 1];
    if (last && sample.t < last.t) return; // out of order (a slow poll): drop
    if (last && sample.t === last.t) this.samples[this.samples.length - 1] = sample;
    else this.samples.push(sample);
    const oldest = sample.t - this.maxAgeSeconds;
    let drop = 0;
    while (drop < this.samples.length && (this.samples[drop]?.t ?? 0) < oldest) drop += 1;
    if (this.samples.length - drop > this.maxSamples) drop = this.samples.length - this.maxSamples;
    if (drop > 0) this.samples = this.samples.slice(drop);
  }

  get all(): readonly T[] {
    return this.samples;
  }
}

export function replicaChartData(samples: readonly ReplicaSample[]): ChartData {
  const column = (key: Exclude<keyof ReplicaSample, 't'>) => samples.map((s) => s[key]);
  return {
    x: samples.map((s) => s.t),
    series: [
      { label: 'desired', values: column('desired') },
      { label: 'ready', values: column('ready') },
      { label: 'starting', values: column('starting') },
      { label: 'pending', values: column('pending') },
    ],
  };
}
