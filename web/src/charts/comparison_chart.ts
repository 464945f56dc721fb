// ComparisonChart: a task's experiments side by side (labelled #id), output token
// throughput (tok/s, left axis) and TTFT p90 (ms, right axis) as paired bars, so the
// throughput/latency trade-off of the sweep reads at a glance. uPlot, like the time-series
// charts; setData() redraws in place. data-points="N" counts drawn values for tests.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../ui/dom';
import { countPoints, type ChartData } from './series';

const COLORS = ['#2563eb', '#ea580c'];

function axisNumber(v: number): string {
  return Number.isInteger(v) ? v.toLocaleString('en-US') : String(Number(v.toPrecision(3)));
}

export class ComparisonChart {
  readonly element: HTMLElement;
  private readonly plotArea: HTMLElement;
  private readonly emptyNote: HTMLElement;
  private plot: uPlot | null = null;
  private count = -1;
  private ids: number[] = [];
  private readonly resizeObserver: ResizeObserver | null;

  constructor(title: string, private readonly height = 220) {
    this.plotArea = h('div', { class: 'chart-plot' });
    this.emptyNote = h('div', { class: 'chart-empty' }, 'No experiment has finished its benchmark yet.');
    this.element = h('figure', { class: 'chart', dataset: { points: 0, chart: title } },
      h('figcaption', null, title), this.plotArea, this.emptyNote);
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null
      : new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: this.height }));
    this.resizeObserver?.observe(this.element);
  }

  setData(data: ChartData & { ids: number[] }): void {
    this.ids = data.ids;
    const points = countPoints(data);
    this.element.dataset.points = String(points);
    this.emptyNote.hidden = points > 0;
    this.plotArea.hidden = points === 0;
    const columns: uPlot.AlignedData = [data.x, ...data.series.map((s) => s.values)];
    if (this.plot && this.count === data.x.length) {
      this.plot.setData(columns);
      return;
    }
    this.plot?.destroy();
    this.count = data.x.length;
    this.plot = points === 0 ? null : new uPlot(this.options(data), columns, this.plotArea);
  }

  destroy(): void {
    this.resizeObserver?.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }

  private label(position: number): string {
    const id = this.ids[position];
    return id === undefined ? '' : `#${id}`;
  }

  private width(): number {
    return Math.max(240, Math.floor(this.element.clientWidth || 600) - 8);
  }

  private options(data: ChartData): uPlot.Options {
    const bars = (align: -1 | 1) => uPlot.paths.bars?.({ size: [0.35, 48], align });
    const units = ['tok/s', 'ms'];
    return {
      width: this.width(),
      height: this.height,
      series: [
        // Values show under the cursor only: a bar chart has no "last" value.
        { label: 'experiment', value: (_u, v, _s, idx) => (idx === null || v === null ? '' : this.label(v)) },
        ...data.series.map((s, i) => ({
          label: s.label,
          scale: i === 0 ? 'tps' : 'ms',
          stroke: COLORS[i] ?? '#2563eb',
          fill: `${COLORS[i] ?? '#2563eb'}99`,
          width: 1,
          paths: bars(i === 0 ? -1 : 1),
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? '' : `${axisNumber(v)} ${units[i] ?? ''}`),
        })),
      ],
      scales: {
        x: { time: false, range: (_u, min, max) => [min - 0.6, max + 0.6] },
        tps: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] },
        ms: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] },
      },
      axes: [
        { splits: () => data.x, values: (_u, splits) => splits.map((v) => this.label(v)) },
        { scale: 'tps', size: 64, values: (_u, s) => s.map(axisNumber), label: 'tok/s' },
        { scale: 'ms', side: 1, size: 64, grid: { show: false }, values: (_u, s) => s.map(axisNumber), label: 'ms' },
      ],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    };
  }
}
