// What the page's charts drew, read in the browser from each chart's uPlot instance (the
// `uplot` property of its <figure class="chart">, see src/charts/line_chart.ts): the lines'
// data and x range, the legend's texts, and the boxes of the time axis labels (uPlot draws
// them on the canvas, so their extent is measured with the axis font, as uPlot does).

import type { Page } from 'playwright-core';

export interface DrawnChart {
  title: string;
  key: string;
  labels: string[]; // line labels, without the x column
  x: number[];
  series: (number | null)[][];
  xMin: number;
  xMax: number;
  legend: string[]; // the legend's value cells, x column first
}

export interface LabelBox {
  text: string;
  left: number;
  right: number;
}

// The uPlot members read here (public API, plus the axis's drawn splits and values).
interface PlotLike {
  data: (number | null)[][];
  series: { label?: string }[];
  scales: { x: { min?: number; max?: number } };
  axes: { font: [string, number]; _splits?: number[]; _values?: (string | null)[] }[];
  valToPos(value: number, scale: string): number;
}

export async function drawnCharts(page: Page, selector: string): Promise<DrawnChart[]> {
  return page.$$eval(selector, (figures) => figures.flatMap((figure) => {
    const u = (figure as HTMLElement & { uplot?: PlotLike | null }).uplot;
    if (!u) return [];
    const el = figure as HTMLElement;
    return [{
      title: el.dataset.chart ?? '',
      key: el.dataset.key ?? '',
      labels: u.series.slice(1).map((s) => s.label ?? ''),
      x: [...(u.data[0] ?? [])] as number[],
      series: u.data.slice(1).map((column) => [...column]),
      xMin: u.scales.x.min ?? Number.NaN,
      xMax: u.scales.x.max ?? Number.NaN,
      legend: [...el.querySelectorAll('.u-legend .u-value')].map((c) => c.textContent ?? ''),
    }];
  }));
}

// Per chart under `selector`, the time axis labels' horizontal extents in CSS px, left to right.
export async function timeLabelBoxes(page: Page, selector: string): Promise<{ title: string; boxes: LabelBox[] }[]> {
  return page.$$eval(selector, (figures) => figures.flatMap((figure) => {
    const u = (figure as HTMLElement & { uplot?: PlotLike | null }).uplot;
    const axis = u?.axes[0];
    if (!u || !axis?._splits || !axis._values) return [];
    const context = document.createElement('canvas').getContext('2d');
    if (!context) return [];
    context.font = axis.font[0]; // scaled by the device pixel ratio, like the canvas
    const ratio = window.devicePixelRatio || 1;
    const values = axis._values;
    const boxes = axis._splits.flatMap((split, i) => {
      const text = values[i];
      if (text === null || text === undefined || text === '') return [];
      const width = Math.max(...String(text).split('\n').map((line) => context.measureText(line).width)) / ratio;
      const center = u.valToPos(split, 'x');
      return [{ text: String(text), left: center - width / 2, right: center + width / 2 }];
    }).sort((a, b) => a.left - b.left);
    return [{ title: (figure as HTMLElement).dataset.chart ?? '', boxes }];
  }));
}

// Pairs of neighbouring labels closer than `gapPx` (none when no two overlap).
export function overlaps(boxes: readonly LabelBox[], gapPx = 2): string[] {
  const found: string[] = [];
  for (let i = 1; i < boxes.length; i++) {
    const a = boxes[i - 1];
    const b = boxes[i];
    if (a && b && a.right + gapPx > b.left) found.push(`${JSON.stringify(a.text)} / ${JSON.stringify(b.text)}`);
  }
  return found;
}

// The time of the first reading of a column, or null.
export function firstReading(chart: DrawnChart, label: string): number | null {
  const column = chart.series[chart.labels.indexOf(label)] ?? [];
  const i = column.findIndex((v) => v !== null && v !== undefined);
  return i < 0 ? null : chart.x[i] ?? null;
}
