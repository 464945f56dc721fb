// PlotFigure: the frame the simulation charts share with the others: a titled <figure
// class="chart"> whose uPlot follows the container's width, a note instead of axes when
// there is nothing to draw, data-points="N" (drawn points) for tests and users, and the
// uPlot instance as the element's `uplot` property (tests read its data and scales).

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from '../ui/dom';
import type { ChartElement } from './line_chart';

export class PlotFigure {
  readonly element: ChartElement;
  private readonly plotArea: HTMLElement;
  private readonly emptyNote: HTMLElement;
  private plot: uPlot | null = null;
  private readonly resizeObserver: ResizeObserver | null;

  constructor(title: string, emptyText: string, private readonly height: number) {
    this.plotArea = h('div', { class: 'chart-plot' });
    this.emptyNote = h('div', { class: 'chart-empty' }, emptyText);
    this.element = h('figure', { class: 'chart', dataset: { points: 0, chart: title } },
      h('figcaption', null, title), this.plotArea, this.emptyNote);
    this.element.uplot = null;
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null
      : new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: this.height }));
    this.resizeObserver?.observe(this.element);
  }

  // A new plot for every data set: these charts change only when a file is loaded.
  draw(points: number, options: (width: number, height: number) => uPlot.Options, data: uPlot.AlignedData): void {
    this.element.dataset.points = String(points);
    this.emptyNote.hidden = points > 0;
    this.plotArea.hidden = points === 0;
    this.destroyPlot();
    if (points === 0) return;
    this.plot = new uPlot(options(this.width(), this.height), data, this.plotArea);
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
  }

  private width(): number {
    return Math.max(240, Math.floor(this.element.clientWidth || 600) - 8);
  }
}

// A dashed line across the plot at a value of `scale` (horizontal for a y scale, vertical
// for x), drawn in a uPlot hook, in canvas pixels. Its label sits where points are least
// likely (policies crowd near 100 % attainment, above a target line, and to the right of a
// lower bound): under a horizontal line's right end, at the foot of a vertical one, on a
// white box so that a grid line behind it does not garble it.
export function drawMarker(u: uPlot, scale: string, value: number, label: string, color: string): void {
  const horizontal = scale !== 'x';
  const pos = u.valToPos(value, scale, true);
  const { left, top, width, height } = u.bbox;
  if (horizontal ? pos < top || pos > top + height : pos < left || pos > left + width) return;
  const ctx = u.ctx;
  const ratio = uPlot.pxRatio;
  ctx.save();
  ctx.strokeStyle = color;
  ctx.lineWidth = 1.5 * ratio;
  ctx.setLineDash([6 * ratio, 4 * ratio]);
  ctx.beginPath();
  if (horizontal) {
    ctx.moveTo(left, pos);
    ctx.lineTo(left + width, pos);
  } else {
    ctx.moveTo(pos, top);
    ctx.lineTo(pos, top + height);
  }
  ctx.stroke();
  const size = Math.round(11 * ratio);
  ctx.font = `${size}px system-ui, sans-serif`;
  const textWidth = ctx.measureText(label).width;
  const pad = 3 * ratio;
  const x = horizontal ? left + width - textWidth - 2 * pad : pos + pad;
  const y = horizontal ? pos + pad : top + height - size - 3 * pad;
  ctx.fillStyle = 'rgba(255, 255, 255, 0.85)';
  ctx.fillRect(x, y, textWidth + 2 * pad, size + 2 * pad);
  ctx.fillStyle = color;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(label, x + pad, y + pad);
  ctx.restore();
}
