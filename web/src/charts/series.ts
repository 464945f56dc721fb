// Data shaping for the time-series charts: API answers -> column data (one x array of Unix
// seconds, one y array per line, null for a missing reading), the layout uPlot draws.
// Pure functions; unit-tested.

import type { Gpu, GpuHistoryPoint } from '../api/types';
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
