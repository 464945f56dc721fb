// AttainmentScatter: a simulation comparison as SLO attainment (%, y) against GPU-hours (x):
// a filled point per run (in its run's colour, as in the timeline chart) and a hollow one
// per reference (static fleet, reactive reference), the SLO target as a dashed horizontal
// line and the oracle's lower bound as a dashed vertical one, as the CLI's SVG draws them.
// Cheaper and higher is better: up and to the left. uPlot, one series per point, so the
// legend names each point and shows its two figures.

import type uPlot from 'uplot';
import type { ScatterData, ScatterPoint } from '../views/simulations_model';
import { formatAttainment, formatGpuHours, formatTarget } from '../views/simulations_model';
import { PALETTE } from './line_chart';
import { PlotFigure, drawMarker } from './plot_figure';

export const REFERENCE_COLORS: Record<string, string> = { static_fleet: '#475569', reactive: '#0f766e' };
const TARGET_COLOR = '#dc2626';
const ORACLE_COLOR = '#111827';

export function runColor(run: number): string {
  return PALETTE[run % PALETTE.length] ?? '#2563eb';
}

export function pointColor(p: Pick<ScatterPoint, 'kind' | 'run'>): string {
  return p.run !== null ? runColor(p.run) : REFERENCE_COLORS[p.kind] ?? '#6b7280';
}

// [lo, hi] around `values` with a margin, so points at the edges are drawn whole.
function padded(values: readonly number[], minPad: number, ceiling = Infinity): [number, number] {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const pad = Math.max(minPad, (hi - lo) * 0.08);
  return [Math.max(0, lo - pad), Math.min(ceiling, hi + pad)];
}

export class AttainmentScatter {
  private readonly figure: PlotFigure;

  constructor(title = 'SLO attainment against GPU-hours') {
    this.figure = new PlotFigure(title, 'No run to draw.', 300);
  }

  get element(): HTMLElement {
    return this.figure.element;
  }

  setData(data: ScatterData): void {
    // uPlot wants ascending x: points by GPU-hours, each series non-null in its own row.
    const points = [...data.points].sort((a, b) => a.gpuHours - b.gpuHours);
    const columns: uPlot.AlignedData = [points.map((p) => p.gpuHours),
      ...points.map((_, i) => points.map((__, j) => (i === j ? points[i]?.attainment ?? null : null)))];
    this.element.dataset.targets = data.targets.join(',');
    this.element.dataset.oracles = data.oracles.join(',');
    this.figure.draw(points.length, (width, height) => this.options(points, data, width, height), columns);
  }

  destroy(): void {
    this.figure.destroy();
  }

  private options(points: ScatterPoint[], data: ScatterData, width: number, height: number): uPlot.Options {
    const xs = [...points.map((p) => p.gpuHours), ...data.oracles];
    const ys = [...points.map((p) => p.attainment), ...data.targets];
    const [x0, x1] = padded(xs, Math.max(...xs) * 0.05 || 0.01);
    const [y0] = padded(ys, 0.5, 100);
    return {
      width,
      height,
      series: [
        { label: 'GPU-hours', value: (_u, v) => (v === null ? '' : formatGpuHours(v)) },
        ...points.map((p) => {
          const color = pointColor(p);
          return {
            label: p.label,
            stroke: color,
            paths: () => null, // points only
            points: { show: true, size: p.kind === 'run' ? 11 : 12, width: 2, stroke: color,
              fill: p.kind === 'run' ? color : '#ffffff' },
            // The point's own figures, with or without a cursor: each series has one point.
            value: () => `${formatGpuHours(p.gpuHours)} GPU-h · ${formatAttainment(p.attainment / 100)}`,
          } satisfies uPlot.Series;
        }),
      ],
      scales: {
        x: { time: false, range: () => [x0, x1] },
        y: { range: () => [y0, 100 + Math.max(0.05, (100 - y0) * 0.04)] },
      },
      axes: [
        { label: 'GPU-hours', values: (_u, splits) => splits.map((v) => String(Number(v.toPrecision(4)))) },
        { label: 'SLO attainment', size: 72, values: (_u, splits) => splits.map((v) => (v > 100 ? '' : `${Number(v.toPrecision(4))} %`)) },
      ],
      hooks: {
        // Under the points (drawAxes runs before the series): a point is never hidden by a
        // line or its label.
        drawAxes: [(u) => {
          for (const t of data.targets) drawMarker(u, 'y', t, `SLO target ${formatTarget(t / 100)}`, TARGET_COLOR);
          for (const o of data.oracles) drawMarker(u, 'x', o, 'oracle (lower bound)', ORACLE_COLOR);
        }],
      },
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    };
  }
}
