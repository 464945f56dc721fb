// Gateway panel of a service page: what the daemon's OpenAI gateway measured for this
// service (request rate, TTFT / TPOT / e2e quantiles, error ratio, in flight, queued,
// totals, SLO shares) and two small live charts, request rate and TTFT, over the last
// 10 minutes the page has seen. Without figures (no gateway, or no request yet) it says how
// to send some.

import type { GatewayStats, JsonValue } from '../api/types';
import { LineChart } from '../charts/line_chart';
import { h, mount } from '../ui/dom';
import { emptyState } from '../ui/states';
import { gatewayEmptyHint, gatewayFigures, rateChartData, ttftChartData, type GatewaySample } from './gateway_model';

export class GatewayPanel {
  readonly element: HTMLElement;
  private readonly figures = h('div', { id: 'gateway-stats' });
  private readonly rateChart = new LineChart({ title: 'Request rate', unit: 'req/s', height: 140, minSpanSeconds: 120,
    emptyText: 'No rate yet: it covers the last 30 s.' });
  private readonly ttftChart = new LineChart({ title: 'Time to first token', unit: 'ms', height: 140,
    minSpanSeconds: 120, colors: ['#16a34a', '#ea580c'], emptyText: 'No TTFT yet: it covers the last minute.' });
  private readonly charts = h('div', { class: 'chart-grid', id: 'gateway-charts' },
    this.rateChart.element, this.ttftChart.element);

  constructor(private readonly name: string) {
    this.element = h('section', { class: 'panel', id: 'gateway-panel' },
      h('h2', null, 'Gateway'), this.figures, this.charts);
  }

  update(stats: GatewayStats | null, spec: JsonValue, history: readonly GatewaySample[]): void {
    this.element.dataset.state = stats ? 'live' : 'empty';
    if (!stats) {
      mount(this.figures, emptyState('No requests through the gateway yet.', gatewayEmptyHint(this.name, spec)));
      this.charts.hidden = true;
      return;
    }
    mount(this.figures,
      h('div', { class: 'stat-grid' }, gatewayFigures(stats).map((f) =>
        h('div', { class: 'stat', dataset: { stat: f.key } },
          h('span', { class: 'stat-label' }, f.label), h('span', { class: 'stat-value' }, f.value)))),
      h('p', { class: 'muted hint' }, 'Measured at the gateway: rate over the last 30 s; latencies, error ratio ' +
        'and SLO shares over the last minute (— when no request finished in it; TPOT needs streamed responses). ' +
        'Quantiles are interpolated within histogram buckets.'));
    this.charts.hidden = false;
    this.rateChart.setData(rateChartData(history));
    this.ttftChart.setData(ttftChartData(history));
  }

  destroy(): void {
    this.rateChart.destroy();
    this.ttftChart.destroy();
  }
}
