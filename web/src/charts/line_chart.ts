// LineChart: a titled uPlot time-series chart (x = Unix seconds) with units on the y axis
// and in the legend. setData() redraws in place (new uPlot only when the set of lines
// changes) so that live updates do not flicker; the chart follows its container's width.
// The element carries data-points="N" (drawn points) so that tests and users can tell an
// empty chart from a flat one; an empty chart says so.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../ui/dom';
import { countPoints, type ChartData } from './series';

export const PALETTE = ['#2563eb', '#16a34a', '#ea580c', '#9333ea', '#dc2626', '#0891b2', '#ca8a04', '#db2777'];

export interface LineChartOptions {
  title: string;
  unit: string; // "%", "°C", "W", "replicas"
  percent?: boolean; // y axis 0..100
  integers?: boolean; // stepped lines and integer ticks (counts)
  height?: number; // px, default 180
  emptyText?: string;
  colors?: string[];
  minSpanSeconds?: number; // the x axis covers at least this much time (ending at the last point)
}

function formatValue(value: number | null | undefined, unit: string, integers: boolean): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const text = integers ? String(Math.round(value)) : value.toFixed(1);
  return `${text} ${unit}`;
}

function xRange(min: number, max: number, minSpan: number): uPlot.Range.MinMax {
  if (max - min >= minSpan) return [min, max];
  return [max - minSpan, max];
}

function axisValue(value: number, unit: string): string {
  const text = Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(3)));
  return unit ? `${text} ${unit}` : text;
}

// uPlot draws a line's points only where they are sparser than points.space (twice their
// size), so a line just started (two samples a second apart) would show nothing at all;
// while a line has at most 3 points they are drawn.
function showPoints(u: uPlot, seriesIdx: number, idx0: number, idx1: number): boolean {
  const count = idx1 - idx0 + 1;
  if (count <= 3) return true;
  const xs = u.data[0];
  const span = Math.abs(u.valToPos(xs[idx1] ?? 0, 'x') - u.valToPos(xs[idx0] ?? 0, 'x'));
  return count - 1 <= span / (u.series[seriesIdx]?.points?.space ?? 10);
}

export class LineChart {
  readonly element: HTMLElement;
  private readonly plotArea: HTMLElement;
  private readonly emptyNote: HTMLElement;
  private plot: uPlot | null = null;
  private labels = '';
  private readonly resizeObserver: ResizeObserver | null;

  constructor(private readonly options: LineChartOptions) {
    this.plotArea = h('div', { class: 'chart-plot' });
    this.emptyNote = h('div', { class: 'chart-empty' }, options.emptyText ?? 'No data points in this window yet.');
    this.element = h('figure', { class: 'chart', dataset: { points: 0, chart: options.title } },
      h('figcaption', null, `${options.title} (${options.unit})`), this.plotArea, this.emptyNote);
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null
      : new ResizeObserver(() => this.resize());
    this.resizeObserver?.observe(this.element);
  }

  setData(data: ChartData): void {
    const points = countPoints(data);
    this.element.dataset.points = String(points);
    this.emptyNote.hidden = points > 0;
    const columns: uPlot.AlignedData = [data.x, ...data.series.map((s) => s.values)];
    const labels = data.series.map((s) => s.label).join('\u0000');
    if (this.plot && labels === this.labels) {
      this.plot.setData(columns);
      return;
    }
    this.plot?.destroy();
    this.labels = labels;
    this.plot = new uPlot(this.plotOptions(data), columns, this.plotArea);
  }

  destroy(): void {
    this.resizeObserver?.disconnect();
    this.plot?.destroy();
    this.plot = null;
  }

  private width(): number {
    return Math.max(240, Math.floor(this.element.clientWidth || 600) - 8);
  }

  private resize(): void {
    this.plot?.setSize({ width: this.width(), height: this.options.height ?? 180 });
  }

  // uPlot widens a lone point's time axis to 86400 / ms (1000 days in Unix seconds), which
  // shows a fresh live chart as years of empty axis; a lone point gets a minute (or the
  // minimum span) ending at it instead.
  private xScale(u: uPlot, min: number, max: number): uPlot.Range.MinMax {
    const span = this.options.minSpanSeconds ?? 0;
    const xs = u.data[0];
    const only = xs.length === 1 ? xs[0] : undefined;
    if (only !== undefined && Number.isFinite(only)) return xRange(only, only, Math.max(span, 60));
    return xRange(min, max, span);
  }

  private plotOptions(data: ChartData): uPlot.Options {
    const { unit, percent = false, integers = false } = this.options;
    const colors = this.options.colors ?? PALETTE;
    const series: uPlot.Series[] = [
      {},
      ...data.series.map((s, i) => ({
        label: s.label,
        stroke: colors[i % colors.length] ?? '#2563eb',
        width: 2,
        spanGaps: false,
        points: { show: showPoints },
        ...(integers ? { paths: uPlot.paths.stepped?.({ align: 1 }) } : {}),
        value: (_u: uPlot, v: number | null) => formatValue(v, unit, integers),
      })),
    ];
    return {
      width: this.width(),
      height: this.options.height ?? 180,
      series,
      scales: {
        x: { time: true, range: (u, min, max) => this.xScale(u, min, max) },
        y: percent ? { range: [0, 100] } : { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
      axes: [
        {},
        {
          size: 64,
          // Short units (%, °C, W, s) on the ticks; long ones are in the caption only.
          values: (_u, splits) => splits.map((v) => (integers && !Number.isInteger(v) ? ''
            : axisValue(v, unit.length <= 2 ? unit : ''))),
        },
      ],
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
    };
  }
}
