// LineChart: a titled uPlot time-series chart (x = Unix seconds) with units on the y axis
// and in the legend. setData() redraws in place (new uPlot only when the set of lines
// changes) so that live updates do not flicker; the chart follows its container's width.
// The element carries data-points="N" (drawn points) so that tests and users can tell an
// empty chart from a flat one; a chart without points shows its note instead of axes. The
// uPlot instance is the element's `uplot` property (tests read its data and scales).
//
// The legend shows each line's value under the cursor and, without a cursor, its last
// reading; a line with no reading shows no value (never a dash beside a line with data).

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../ui/dom';
import { countPoints, type ChartData } from './series';
import { formatLegendValue, lastValue } from './legend';
import { TIME_AXIS_SPACE_PX, timeAxisLabels, timeLegendLabel } from './time_axis';

export const PALETTE = ['#2563eb', '#16a34a', '#ea580c', '#9333ea', '#dc2626', '#0891b2', '#ca8a04', '#db2777'];

export interface LineChartOptions {
  title: string;
  unit: string; // "%", "°C", "W", "replicas"
  percent?: boolean; // y axis 0..100
  integers?: boolean; // stepped lines and integer ticks (counts)
  height?: number; // px, default 180
  emptyText?: string;
  colors?: string[];
  minSpanSeconds?: number; // the x axis covers at least this much time (ending at the last point), default 60
  syncKey?: string; // charts with the same key move one cursor together
}

export type ChartElement = HTMLElement & { uplot?: uPlot | null };

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
  readonly element: ChartElement;
  private readonly plotArea: HTMLElement;
  private readonly emptyNote: HTMLElement;
  private plot: uPlot | null = null;
  private labels = '';
  private range: [number, number] | null = null;
  private readonly resizeObserver: ResizeObserver | null;

  constructor(private readonly options: LineChartOptions) {
    this.plotArea = h('div', { class: 'chart-plot' });
    this.emptyNote = h('div', { class: 'chart-empty' }, options.emptyText ?? 'No data points in this window yet.');
    this.element = h('figure', { class: 'chart', dataset: { points: 0, chart: options.title } },
      h('figcaption', null, `${options.title} (${options.unit})`), this.plotArea, this.emptyNote);
    this.element.uplot = null;
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null
      : new ResizeObserver(() => this.resize());
    this.resizeObserver?.observe(this.element);
  }

  // `range` fixes the x axis to [from, to] (charts that share a time axis); else it follows
  // the data.
  setData(data: ChartData, range: [number, number] | null = null): void {
    const points = countPoints(data);
    this.element.dataset.points = String(points);
    this.emptyNote.hidden = points > 0;
    this.plotArea.hidden = points === 0;
    this.range = range;
    if (points === 0) {
      this.destroyPlot(); // no axes without data: uPlot would span an empty time scale over years
      return;
    }
    const columns: uPlot.AlignedData = [data.x, ...data.series.map((s) => s.values)];
    const labels = data.series.map((s) => `${s.label}${s.dash ? ':dash' : ''}`).join('\u0000');
    if (this.plot && labels === this.labels) {
      this.plot.setData(columns);
      return;
    }
    this.destroyPlot();
    this.labels = labels;
    this.plot = new uPlot(this.plotOptions(data), columns, this.plotArea);
    this.element.uplot = this.plot;
  }

  destroy(): void {
    this.resizeObserver?.disconnect();
    this.destroyPlot();
  }

  private destroyPlot(): void {
    this.plot?.destroy();
    this.plot = null;
    this.element.uplot = null;
    this.labels = '';
  }

  private width(): number {
    return Math.max(240, Math.floor(this.element.clientWidth || 600) - 8);
  }

  private resize(): void {
    this.plot?.setSize({ width: this.width(), height: this.options.height ?? 180 });
  }

  // A fixed range wins. Else the data's, at least the minimum span ending at the last point:
  // uPlot widens a lone point's time axis to 86400 / ms (1000 days in Unix seconds), and a
  // span of a second or two would be labelled in sub-second ticks.
  private xScale(u: uPlot, min: number, max: number): uPlot.Range.MinMax {
    if (this.range) return this.range;
    const span = this.options.minSpanSeconds ?? 60;
    const xs = u.data[0];
    const only = xs.length === 1 ? xs[0] : undefined;
    if (only !== undefined && Number.isFinite(only)) return xRange(only, only, span);
    return xRange(min, max, span);
  }

  private seriesOptions(data: ChartData): uPlot.Series[] {
    const { unit, integers = false } = this.options;
    const colors = this.options.colors ?? PALETTE;
    return data.series.map((s, i) => ({
      label: s.label,
      stroke: colors[i % colors.length] ?? '#2563eb',
      width: 2,
      spanGaps: false,
      ...(s.dash ? { dash: [6, 4] } : {}),
      points: { show: showPoints },
      ...(integers ? { paths: uPlot.paths.stepped?.({ align: 1 }) } : {}),
      // Under the cursor: the value there (none in a gap); else the line's last reading.
      value: (u: uPlot, v: number | null, sidx: number, idx: number | null) =>
        formatLegendValue(idx === null ? lastValue(u.data[sidx] ?? []) : v, unit, integers),
    }));
  }

  private plotOptions(data: ChartData): uPlot.Options {
    const { unit, percent = false, integers = false } = this.options;
    return {
      width: this.width(),
      height: this.options.height ?? 180,
      series: [
        { value: (_u, v, _s, idx) => (idx === null || v === null ? 'latest' : timeLegendLabel(v)) },
        ...this.seriesOptions(data),
      ],
      scales: {
        x: { time: true, range: (u, min, max) => this.xScale(u, min, max) },
        y: percent ? { range: [0, 100] } : { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
      axes: [
        { space: TIME_AXIS_SPACE_PX, values: (_u, splits, _axis, _space, incr) => timeAxisLabels(splits, incr) },
        {
          // One width for every chart, so that stacked charts' plots line up on their shared
          // time axis; it fits "1000 ms" and "100 %".
          size: 72,
          space: 24, // px between y ticks: two or three even on a 120 px chart
          // Short units (%, °C, W, s, ms) on the ticks; long ones are in the caption only.
          values: (_u, splits) => splits.map((v) => (integers && !Number.isInteger(v) ? ''
            : axisValue(v, unit.length <= 2 ? unit : ''))),
        },
      ],
      legend: { live: true },
      cursor: {
        drag: { x: false, y: false },
        ...(this.options.syncKey ? { sync: { key: this.options.syncKey } } : {}),
      },
    };
  }
}
