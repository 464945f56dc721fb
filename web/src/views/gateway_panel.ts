// Gateway panel of a service page: what the daemon's OpenAI gateway measured for this
// service at its last tick (request rate, TTFT / TPOT / e2e quantiles, error ratio, in
// flight, queued, totals, SLO shares). The same figures over time are in the history panel.
// Without figures (no gateway, or no request yet) it says how to send some.

import type { GatewayStats, JsonValue } from '../api/types';
import { h, mount } from '../ui/dom';
import { emptyState } from '../ui/states';
import { gatewayEmptyHint, gatewayFigures } from './gateway_model';

export class GatewayPanel {
  readonly element: HTMLElement;
  private readonly figures = h('div', { id: 'gateway-stats' });

  constructor(private readonly name: string) {
    this.element = h('section', { class: 'panel', id: 'gateway-panel' },
      h('h2', null, 'Gateway'), this.figures);
  }

  update(stats: GatewayStats | null, spec: JsonValue): void {
    this.element.dataset.state = stats ? 'live' : 'empty';
    if (!stats) {
      mount(this.figures, emptyState('No requests through the gateway yet.', gatewayEmptyHint(this.name, spec)));
      return;
    }
    mount(this.figures,
      h('div', { class: 'stat-grid' }, gatewayFigures(stats).map((f) =>
        h('div', { class: 'stat', dataset: { stat: f.key } },
          h('span', { class: 'stat-label' }, f.label), h('span', { class: 'stat-value' }, f.value)))),
      h('p', { class: 'muted hint' }, 'Measured at the gateway: rate over the last 30 s; latencies, error ratio ' +
        'and SLO shares over the last minute (— when no request finished in it; TPOT needs streamed responses). ' +
        'Quantiles are interpolated within histogram buckets.'));
  }
}
