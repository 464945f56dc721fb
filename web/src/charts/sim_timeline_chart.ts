// ReplicaTimeline: replicas holding GPUs over a simulation, one line per run (in its run's
// colour, as in the scatter), the trace's arrival rate on a second axis (req/s, a grey
// area underneath) and the oracle's plan as a dashed step line, as the CLI's SVG draws
// them. x is seconds from the trace's start, labelled "5 min", "1 h 30 min". The element
// carries data-runs="N" (run lines) besides data-points.

import uPlot from 'uplot';
import type { TimelineData } from '../views/simulations_model';
import { ELAPSED_AXIS_SPACE_PX, ELAPSED_INCRS, formatElapsed } from './elapsed_axis';
import { countPoints } from './series';
import { formatLegendValue, lastValue } from './legend';
import { PlotFigure } from './plot_figure';
import { runColor } from './scatter_chart';

const ARRIVAL_COLOR = '#94a3b8';
const ORACLE_COLOR = '#111827';

// Under the cursor the value there, else the line's last reading, as the other charts do.
function legendValue(unit: string) {
  return (u: uPlot, v: number | null, sidx: number, idx: number | null): string =>
    formatLegendValue(idx === null ? lastValue(u.data[sidx] ?? []) : v, unit, false);
}

function axisNumber(v: number): string {
  return String(Number(v.toPrecision(3)));
}

export class ReplicaTimeline {
  private readonly figure: PlotFigure;

  constructor(title = 'Replicas over time') {
    this.figure = new PlotFigure(title, 'No run in this file has a timeline.', 280);
  }

  get element(): HTMLElement {
    return this.figure.element;
  }

  setData(data: TimelineData | null): void {
    const x = data?.x ?? [];
    const lines = data ? [
      ...(data.arrival ? [{ label: 'arrival rate', values: data.arrival }] : []),
      ...data.runs,
      ...(data.oracle ? [{ label: 'oracle plan', values: data.oracle }] : []),
    ] : [];
    this.element.dataset.runs = String(data?.runs.length ?? 0);
    const points = countPoints({ x, series: lines });
    this.figure.draw(points, (width, height) => this.options(data, width, height),
      [x, ...lines.map((l) => l.values)]);
  }

  destroy(): void {
    this.figure.destroy();
  }

  private options(data: TimelineData | null, width: number, height: number): uPlot.Options {
    const replicas = (label: string, color: string, extra: Partial<uPlot.Series> = {}): uPlot.Series => ({
      label, stroke: color, width: 2, scale: 'replicas', spanGaps: true, points: { show: false },
      value: legendValue('replicas'), ...extra,
    });
    const series: uPlot.Series[] = [
      // Without a cursor the lines show their last readings, as in the other charts.
      { label: 'time', value: (_u, v, _s, idx) => (idx === null || v === null ? 'end' : formatElapsed(v)) },
    ];
    if (data?.arrival) {
      series.push({ label: 'arrival rate', stroke: ARRIVAL_COLOR, fill: `${ARRIVAL_COLOR}33`, width: 1, scale: 'rate',
        spanGaps: true, points: { show: false }, value: legendValue('req/s') });
    }
    for (const run of data?.runs ?? []) series.push(replicas(run.label, runColor(run.run ?? 0)));
    if (data?.oracle) {
      series.push(replicas('oracle plan', ORACLE_COLOR, { dash: [6, 4], width: 1.5,
        paths: uPlot.paths.stepped?.({ align: 1 }) }));
    }
    return {
      width,
      height,
      series,
      scales: {
        x: { time: false },
        replicas: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
        rate: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
      },
      axes: [
        { space: ELAPSED_AXIS_SPACE_PX, incrs: ELAPSED_INCRS, values: (_u, splits) => splits.map(formatElapsed) },
        { scale: 'replicas', label: 'replicas', size: 56,
          values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')) },
        { scale: 'rate', label: 'req/s', side: 1, size: 56, grid: { show: false },
          values: (_u, splits) => splits.map(axisNumber) },
      ],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    };
  }
}
