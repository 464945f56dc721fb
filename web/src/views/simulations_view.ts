// Simulations view: a `gpuscale simulate -o json` file (a --compare array, or one --config
// run) opened with the file input or dropped on the page, shown as the CLI's comparison
// table (runs and references, met / missed against the SLO target, the verdict), a scatter
// of SLO attainment against GPU-hours and the runs' replicas over time against the arrival
// rate. The file never reaches the daemon: it is read in the browser and kept in
// localStorage, so the page shows it again after a reload until "Clear". The live services'
// policies come from /v1/services, so a run's policy shows which services already use it.
// A file that is not a simulation result gets a message naming what is wrong, and the
// comparison shown before stays.

import type { Service } from '../api/types';
import { describeError } from '../api/errors';
import { ReplicaTimeline } from '../charts/sim_timeline_chart';
import { AttainmentScatter, pointColor } from '../charts/scatter_chart';
import { MISSING, formatUnixTime } from '../format';
import { routeHash } from '../router';
import { setCodeText } from '../ui/code_text';
import { h, mount } from '../ui/dom';
import { Poller } from '../ui/poller';
import { emptyState } from '../ui/states';
import {
  clearStored,
  fileTooLarge,
  formatAttainment,
  formatGpuHours,
  formatOverOracle,
  formatP99,
  formatTarget,
  parseSimulation,
  readStored,
  scatterData,
  servicesByPolicy,
  simRows,
  timelineData,
  traceSummary,
  verdict,
  writeStored,
  type SimComparison,
  type SimRow,
  type StoredSimulation,
} from './simulations_model';
import type { Dispose, ViewContext } from './view';

const SERVICES_MS = 10000;

const EXAMPLE = 'gpuscale simulate --compare examples/sim/conv/slo.yaml,examples/sim/conv/hpa.yaml ' +
  '--trace data/traces/AzureLLMInferenceTrace_conv.csv -o json > compare.json';

function attainmentCell(row: SimRow): HTMLElement {
  if (row.attainment === null) return h('td', { class: 'num muted' }, MISSING);
  return h('td', { class: 'num' }, formatAttainment(row.attainment),
    row.met === null ? null : h('span', { class: `status status-${row.met ? 'ok' : 'bad'} sim-met`,
      title: `SLO target ${formatTarget(row.target)}`, dataset: { met: String(row.met) } }, row.met ? 'met' : 'missed'));
}

function liveCell(row: SimRow, live: ReadonlyMap<string, string[]> | null): HTMLElement {
  const names = row.kind === 'run' ? live?.get(row.policy) ?? [] : [];
  return h('td', { class: 'sim-live' }, names.map((name) =>
    h('a', { class: 'badge', href: routeHash({ view: 'service', name }) }, name)));
}

function simRow(row: SimRow, live: ReadonlyMap<string, string[]> | null): HTMLElement {
  const num = (text: string) => h('td', { class: 'num' }, text);
  return h('tr', { class: row.kind === 'run' ? undefined : 'sim-reference', dataset: { kind: row.kind, name: row.name } },
    h('td', null, h('span', { class: 'swatch', style: `${row.kind === 'run' ? 'background' : 'border-color'}:${pointColor(row)}` }),
      row.name),
    h('td', { class: row.kind === 'run' ? undefined : 'muted' }, row.policy),
    attainmentCell(row),
    num(formatGpuHours(row.gpuHours)),
    num(formatOverOracle(row.overOracle)),
    num(formatP99(row.ttftP99)),
    num(formatP99(row.tpotP99)),
    num(row.peak === null ? MISSING : String(row.peak)),
    num(row.ups === null && row.downs === null ? MISSING : `${row.ups ?? MISSING} / ${row.downs ?? MISSING}`),
    h('td', { class: row.vsStatic === null ? 'muted sim-frontier' : 'sim-frontier' }, row.vsStatic ?? MISSING),
    liveCell(row, live));
}

function simTable(c: SimComparison, live: ReadonlyMap<string, string[]> | null): HTMLElement {
  const targets = new Set(c.runs.map((r) => r.slo_target));
  const target = targets.size === 1 ? h('span', { class: 'th-sub' }, `target ${formatTarget(c.runs[0]?.slo_target ?? null)}`) : null;
  return h('div', { class: 'table-wrap' }, h('table', { id: 'sim-table' },
    h('thead', null, h('tr', null,
      h('th', null, 'Run'), h('th', null, 'Policy'), h('th', null, 'SLO attainment', target),
      ['GPU-hours', '× oracle', 'TTFT p99', 'TPOT p99', 'Peak replicas', 'Ups / downs', 'vs static fleets', 'Live services']
        .map((t) => h('th', null, t)))),
    h('tbody', null, simRows(c).map((row) => simRow(row, live)))));
}

// The browser's localStorage, or (where it is blocked) a map that lasts as long as the page.
function browserStorage(): Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> {
  try {
    return window.localStorage;
  } catch {
    const memory = new Map<string, string>();
    return { getItem: (k) => memory.get(k) ?? null, setItem: (k, v) => void memory.set(k, v),
      removeItem: (k) => void memory.delete(k) };
  }
}

export function simulationsView(root: HTMLElement, ctx: ViewContext): Dispose {
  const storage = browserStorage();
  const source = h('span', { class: 'muted', id: 'sim-source' });
  const input = h('input', { type: 'file', id: 'sim-file', accept: '.json,application/json' });
  const clear = h('button', { type: 'button', id: 'sim-clear', disabled: true }, 'Clear');
  const error = h('div', { class: 'form-error', id: 'sim-error', role: 'alert', hidden: true });
  const note = h('p', { class: 'muted small', id: 'sim-note', hidden: true });
  const opener = h('section', { class: 'panel sim-open', id: 'sim-open' },
    h('p', null, 'Open the JSON that ', h('code', null, 'gpuscale simulate … -o json'), ' writes (a ', h('code', null, '--compare'),
      ' of several policy configs on one trace, or one ', h('code', null, '--config'), ' run) to see the policies side by side. ',
      'The file stays in this browser.'),
    h('div', { class: 'actions' }, h('label', { class: 'field' }, h('span', null, 'Simulation JSON'), input), clear,
      h('span', { class: 'hint' }, 'or drop the file on this page')),
    error, note);
  const result = h('div', { id: 'sim-result' });
  mount(root, h('div', { class: 'view-header' }, h('h1', null, 'Simulations'), source), opener, result);

  const summary = h('p', { class: 'muted', id: 'sim-trace' });
  const verdictLine = h('p', { class: 'note', id: 'sim-verdict' });
  const table = h('div');
  const liveNote = h('p', { class: 'muted small', id: 'sim-live-note' });
  const scatter = new AttainmentScatter();
  const timeline = new ReplicaTimeline();
  const missing = h('p', { class: 'muted small', hidden: true });
  scatter.element.id = 'sim-scatter';
  timeline.element.id = 'sim-timeline';
  let shown: { stored: StoredSimulation; comparison: SimComparison } | null = null;
  let live: Map<string, string[]> | null = null;

  const renderTable = () => {
    if (shown) mount(table, simTable(shown.comparison, live));
  };

  const render = () => {
    clear.disabled = shown === null;
    if (!shown) {
      source.textContent = '';
      mount(result, emptyState('No simulation loaded.', `Run for example \`${EXAMPLE}\` and open compare.json here. ` +
        'docs/simulation.md says what each figure means.'));
      return;
    }
    const { stored, comparison } = shown;
    source.textContent = `${stored.name} · loaded ${formatUnixTime(stored.loadedAt)}`;
    summary.textContent = [comparison.single ? 'One run' : `${comparison.runs.length} runs`, traceSummary(comparison)]
      .filter((s) => s).join(' on ');
    verdictLine.textContent = verdict(comparison);
    const lines = timelineData(comparison);
    missing.hidden = !lines || lines.missing.length === 0;
    missing.textContent = lines && lines.missing.length > 0
      ? `No timeline in ${lines.missing.join(', ')} (written by an older gpuscale): not drawn.` : '';
    mount(result,
      h('section', { class: 'panel' }, h('h2', null, 'Comparison'), summary, verdictLine, table, liveNote),
      h('div', { class: 'chart-grid', id: 'sim-charts' }, scatter.element, timeline.element), missing);
    renderTable();
    scatter.setData(scatterData(comparison));
    timeline.setData(lines);
  };

  const showError = (text: string | null) => {
    error.hidden = text === null;
    setCodeText(error, text ?? '');
  };

  // Checks `text` and shows it; a bad file leaves what was shown (and stored) as it was.
  const load = (stored: StoredSimulation, fromStorage: boolean): void => {
    const parsed = parseSimulation(stored.text);
    if (!parsed.ok) {
      if (fromStorage) clearStored(storage);
      showError(`${stored.name}: ${parsed.message}` + (shown ? ` Still showing ${shown.stored.name}.` : ''));
      return;
    }
    showError(null);
    shown = { stored, comparison: parsed.comparison };
    const problem = fromStorage ? null : writeStored(storage, stored);
    note.hidden = problem === null;
    note.textContent = problem ?? '';
    render();
  };

  const open = async (file: File | undefined) => {
    if (!file) return;
    const tooLarge = fileTooLarge(file.size);
    if (tooLarge) {
      showError(`${file.name}: not opened: ${tooLarge}`);
      return;
    }
    try {
      load({ name: file.name, text: await file.text(), loadedAt: ctx.now() }, false);
    } catch (e) {
      showError(`${file.name}: could not be read: ${describeError(e)}`);
    }
  };

  input.addEventListener('change', () => {
    void open(input.files?.[0]);
    input.value = ''; // the same file again fires `change` again
  });
  clear.addEventListener('click', () => {
    clearStored(storage);
    shown = null;
    showError(null);
    note.hidden = true;
    render();
  });
  // Drops anywhere on the view; the browser would otherwise navigate to the file.
  const dragOver = (e: DragEvent) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    opener.classList.add('dragging');
  };
  const dragLeave = (e: DragEvent) => {
    if (e.relatedTarget === null || !root.contains(e.relatedTarget as Node)) opener.classList.remove('dragging');
  };
  const drop = (e: DragEvent) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    opener.classList.remove('dragging');
    void open(e.dataTransfer.files[0]);
  };
  root.addEventListener('dragover', dragOver);
  root.addEventListener('dragleave', dragLeave);
  root.addEventListener('drop', drop);

  const stored = readStored(storage);
  if (stored) load(stored, true);
  else render();

  const poller = new Poller(async () => {
    try {
      const services: Service[] = await ctx.api.services();
      live = servicesByPolicy(services);
      liveNote.textContent = services.length === 0 ? 'The daemon runs no services.'
        : `Live services: ${services.map((s) => `${s.name} (${s.policy_family})`).join(', ')}.`;
    } catch (e) {
      live = null;
      liveNote.textContent = `Live services unavailable: ${describeError(e)}`;
    }
    renderTable();
  }, SERVICES_MS);

  return () => {
    poller.stop();
    root.removeEventListener('dragover', dragOver);
    root.removeEventListener('dragleave', dragLeave);
    root.removeEventListener('drop', drop);
    scatter.destroy();
    timeline.destroy();
  };
}
