// GPUs view: one card per GPU (name, type and price, utilization, memory, temperature,
// power, availability score, lease holders, compute processes) refreshed every 2 s, and four charts
// (utilization %, memory %, temperature °C, power W; one line per GPU) over a selectable
// window of /v1/gpus/history, refreshed every 10 s. A process that is a service's replica
// links to that service, as does a replica's lease.

import type { ApiClient } from '../api/client';
import type { Gpu, GpuSnapshot, Lease, Replica } from '../api/types';
import { describeError } from '../api/errors';
import { LineChart } from '../charts/line_chart';
import { GPU_METRICS, GPU_METRIC_ORDER, gpuHistorySeries } from '../charts/series';
import {
  HISTORY_WINDOWS,
  formatClock,
  formatMemory,
  formatPercent,
  formatPower,
  formatScore,
  formatTemperature,
  memoryPercent,
} from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { emptyState, errorHint, errorState, loadingState } from '../ui/states';
import {
  EMPTY_REPLICA_INDEX,
  gpuPriceLabel,
  gpuTypeLabel,
  leaseHolders,
  leaseService,
  ownerLabel,
  processRows,
  replicaIndex,
  replicaLookup,
  type ProcessOwner,
  type ReplicaIndex,
} from './gpu_model';
import type { Dispose, ViewContext } from './view';

const SNAPSHOT_MS = 2000;
const HISTORY_MS = 10000;
let historyWindowSeconds = 300; // kept across visits to the view

function meter(percent: number | null): HTMLElement {
  const width = percent === null ? 0 : Math.max(0, Math.min(100, percent));
  return h('div', { class: 'meter' }, h('div', { class: 'meter-fill', style: `width:${width}%` }));
}

function stat(label: string, value: string, percent?: number | null): HTMLElement {
  return h('div', { class: 'stat' }, h('span', { class: 'stat-label' }, label),
    h('span', { class: 'stat-value' }, value), percent !== undefined ? meter(percent) : null);
}

function ownerLink(owner: ProcessOwner, text: string): HTMLElement | string {
  if (owner?.kind === 'replica') {
    return h('a', { href: routeHash({ view: 'service', name: owner.service }), title: `replica ${owner.replica}` }, text);
  }
  if (owner?.kind === 'experiment') return h('a', { href: routeHash({ view: 'experiment', id: owner.id }) }, text);
  return text;
}

function leaseBadge(owner: string, index: ReplicaIndex): HTMLElement {
  const service = leaseService(owner, index);
  const label = ownerLabel(owner);
  return h('span', { class: 'badge' }, service ? h('a', { href: routeHash({ view: 'service', name: service }) }, label) : label);
}

// PID, name and memory of each compute process; "no processes" for an idle GPU. Left out
// when the daemon reports no process list (one that predates it).
function processTable(gpu: Gpu, index: ReplicaIndex): HTMLElement | null {
  const rows = processRows(gpu, index);
  if (rows === null) return null;
  if (rows.length === 0) return h('div', { class: 'processes muted small', dataset: { processes: 0 } }, 'no processes');
  return h('table', { class: 'processes', dataset: { processes: rows.length } },
    h('thead', null, h('tr', null, h('th', null, 'PID'), h('th', null, 'Process'), h('th', null, 'Memory'))),
    h('tbody', null, rows.map((r) => h('tr', { dataset: { pid: r.pid, ...(r.owner?.kind === 'replica' ? { service: r.owner.service } : {}) } },
      h('td', { class: 'num' }, String(r.pid)),
      h('td', { class: 'process-name' }, ownerLink(r.owner, r.name)),
      h('td', { class: 'num' }, r.memory)))));
}

function gpuCard(gpu: Gpu, owners: readonly string[], index: ReplicaIndex): HTMLElement {
  const memPct = memoryPercent(gpu.memory_used_mb, gpu.memory_total_mb);
  return h('article', { class: 'card gpu-card', dataset: { gpuIndex: gpu.index } },
    h('header', null, h('h3', null, `GPU ${gpu.index}`), h('span', { class: 'muted gpu-name' }, gpu.name)),
    h('div', { class: 'stat-row' },
      stat('Type', gpuTypeLabel(gpu)),
      stat('Price', gpuPriceLabel(gpu))),
    stat('Utilization', formatPercent(gpu.utilization_percent), gpu.utilization_percent),
    stat('Memory', `${formatMemory(gpu.memory_used_mb, gpu.memory_total_mb)} (${formatPercent(memPct)})`, memPct),
    h('div', { class: 'stat-row' },
      stat('Temperature', formatTemperature(gpu.temperature_c)),
      stat('Power', formatPower(gpu.power_draw_w)),
      stat('Score', formatScore(gpu.score))),
    h('div', { class: 'lease' }, h('span', { class: 'stat-label' }, 'Lease'),
      owners.length === 0 ? h('span', { class: 'muted' }, 'free')
        : owners.map((o) => leaseBadge(o, index))),
    processTable(gpu, index),
    h('footer', { class: 'muted uuid' }, gpu.uuid));
}

function renderCards(target: HTMLElement, snapshot: GpuSnapshot, leases: readonly Lease[], index: ReplicaIndex): void {
  if (snapshot.gpus.length === 0) {
    mount(target, emptyState('No GPUs found.', `The ${snapshot.backend} backend reports none. ` +
      'Check gpu.backend in the daemon config (`simulated` gives 4 × H100 80 GB) or run `gpuscale gpus`.'));
    return;
  }
  const holders = leaseHolders(snapshot.gpus, leases);
  mount(target, snapshot.gpus.map((gpu) => gpuCard(gpu, holders.get(gpu.index) ?? [], index)));
}

// Every service's replicas (a service deleted meanwhile counts as none).
async function fetchReplicaIndex(api: ApiClient): Promise<ReplicaIndex> {
  const services = await api.services();
  const replicas = await Promise.all(services.map(async (s): Promise<[string, Replica[]]> =>
    [s.name, await api.replicas(s.name).catch(() => [])]));
  return replicaIndex(replicas);
}

export function gpusView(root: HTMLElement, ctx: ViewContext): Dispose {
  const meta = h('span', { class: 'muted' });
  const banner = h('div', { class: 'banner', hidden: true, role: 'alert' });
  const cards = h('div', { class: 'gpu-grid', id: 'gpu-cards' }, loadingState('GPUs'));
  const charts = GPU_METRIC_ORDER.map((metric) => {
    const spec = GPU_METRICS[metric];
    return new LineChart({ title: spec.title, unit: spec.unit, percent: spec.percent });
  });
  const windowSelect = h('select', { id: 'history-window', 'aria-label': 'Chart window' },
    HISTORY_WINDOWS.map((w) => h('option', { value: w.seconds, selected: w.seconds === historyWindowSeconds }, w.label)));
  mount(root,
    h('div', { class: 'view-header' }, h('h1', null, 'GPUs'), meta), banner, cards,
    h('div', { class: 'section-header' }, h('h2', null, 'History'),
      h('label', null, 'Window ', windowSelect)),
    h('div', { class: 'chart-grid', id: 'gpu-charts' }, charts.map((c) => c.element)));

  let hadSnapshot = false;
  let index = EMPTY_REPLICA_INDEX;
  let lookedUp: string | null = null; // replicaLookup's key at the last lookup
  const snapshotPoller = new Poller(async () => {
    try {
      const [snapshot, leases] = await Promise.all([ctx.api.gpus(), ctx.api.leases()]);
      const lookup = replicaLookup(snapshot.gpus, leases, index);
      if (lookup.unknown && lookup.key !== lookedUp) {
        try {
          index = await fetchReplicaIndex(ctx.api);
          lookedUp = lookup.key;
        } catch {
          // Links only: the cards show without them, and the next poll asks again.
        }
      }
      renderCards(cards, snapshot, leases, index);
      hadSnapshot = true;
      meta.textContent = `${snapshot.backend} backend · updated ${formatClock(snapshot.timestamp)}`;
      banner.hidden = true;
    } catch (error) {
      if (!hadSnapshot) mount(cards, errorState('GPUs', error));
      banner.hidden = !hadSnapshot;
      setCodeText(banner, `Live update failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, SNAPSHOT_MS);
  const historyPoller = new Poller(async () => {
    try {
      const history = await ctx.api.gpuHistory(historyWindowSeconds);
      GPU_METRIC_ORDER.forEach((metric, i) => charts[i]?.setData(gpuHistorySeries(history.points, metric)));
    } catch (error) {
      banner.hidden = false;
      setCodeText(banner, `GPU history failed: ${describeError(error)} ${errorHint(error)}`);
    }
  }, HISTORY_MS);
  windowSelect.addEventListener('change', () => {
    historyWindowSeconds = Number(windowSelect.value);
    historyPoller.refresh();
  });
  return () => {
    snapshotPoller.stop();
    historyPoller.stop();
    charts.forEach((c) => c.destroy());
  };
}
