// The pretraining tab's layouts x GPUs table: the library's peak verdict for each (tp, cp, pp,
// micro-batch) at eight GPU counts, recomputed once typing pauses (scheduleGrid); a refused
// cell's message is asked of the library when pointed at; one Tab stop with arrow keys, and a
// cell loads into the form on Enter or a click. Also the band legend above it.
import { pretrainRequest } from './state.js';
import { state, setState, update } from './page-state.js';
import { memest, peakBands } from './wasm-bridge.js';
import { timings, probe } from './probe.js';
import { writeForm } from './form.js';
import { $, el, th } from './dom.js';
import { gib, percent, probability, words, bandText } from './format.js';

/** The layouts (tp, cp, pp, micro-batch) of the layouts x GPUs table; the form's own layout is
 *  added as a row when it is not one of them. */
const GRID_LAYOUTS = [];
for (const tp of [1, 2, 4, 8]) {
  for (const cp of [1, 2]) {
    for (const pp of [1, 2, 4, 8]) {
      for (const mbs of [1, 2]) GRID_LAYOUTS.push([tp, cp, pp, mbs]);
    }
  }
}

/** Milliseconds the table waits after the last input before it recomputes. */
const GRID_DEBOUNCE_MS = 250;

/** GPU counts of the table: the form's count with three halvings below and four doublings
 *  above (whole counts only), eight columns. */
function gridGpus(text) {
  const n = Number(text);
  const base = Number.isInteger(n) && n >= 1 && n <= 2 ** 24 ? n : 8;
  const cols = [];
  for (let k = -3; k <= 4; k++) {
    const g = base * 2 ** k;
    if (Number.isInteger(g) && g >= 1) cols.push(g);
  }
  while (cols.length < 8) cols.push(cols[cols.length - 1] * 2);
  return cols;
}

/** The legend of the layouts table: one swatch per band of the headline verdict, then OOM. */
export function renderBandLegend() {
  const swatches = [...Object.keys(peakBands), 'oom'].map((v) => el('span',
    { className: `band band-${v}`, dataset: { band: v } }, `${words(v)} ${bandText(peakBands, v)}`));
  $('band-legend').replaceChildren(...swatches.flatMap((node, i) => (i ? [', ', node] : [node])));
}

let gridTimer = 0;
/** The cell that holds the table's one Tab stop, by position: {row, col}. */
let gridActive = null;

export function scheduleGrid(req) {
  clearTimeout(gridTimer);
  if (!req) {
    probe.gridPending = false;
    $('layout-table').replaceChildren();
    $('grid-time').textContent = '';
    gridActive = null;
    return;
  }
  probe.gridPending = true;
  gridTimer = setTimeout(() => {
    probe.gridPending = false;
    if (state.tab === 'pretrain') renderGrid(req);
  }, GRID_DEBOUNCE_MS);
}

/** Stops a table recompute that is waiting for typing to pause (another tab is shown). */
export function cancelGrid() {
  clearTimeout(gridTimer);
  probe.gridPending = false;
}

const positiveInt = (v) => Number.isInteger(v) && v >= 1;

function renderGrid(req) {
  const cols = gridGpus(state.gpus);
  const current = [Number(state.tp), Number(state.cp), Number(state.pp), Number(state.mbs)];
  const layouts = [...GRID_LAYOUTS];
  const currentKnown = current.every(positiveInt) && current.every((v) => v <= 1e6);
  if (currentKnown && !layouts.some((l) => l.every((v, i) => v === current[i]))) layouts.push(current);
  const cells = [];
  for (const [tp, cp, pp, mbs] of layouts) {
    for (const g of cols) cells.push([g, tp, cp, pp, mbs]);
  }
  const t0 = performance.now();
  let out;
  try {
    out = memest.pretrainTable(req, cells, { messages: false });
  } catch {
    $('layout-table').replaceChildren(); // the base model/GPU is bad: the form shows why
    return;
  }
  timings.gridLibMs = performance.now() - t0;
  const hadFocus = $('layout-table').contains(document.activeElement);
  const formGpus = Number(state.gpus);
  const head = el('thead', {}, el('tr', {}, th('Layout (tp, cp, pp, mbs)', 'col'),
    ...cols.map((g) => {
      const h = th(`${g} GPUs`, 'col');
      if (g === formGpus) h.classList.add('current');
      return h;
    })));
  const body = document.createElement('tbody');
  let active = null;
  let currentCell = null;
  let rowIndex = 0;
  layouts.forEach(([tp, cp, pp, mbs], row) => {
    const results = out.slice(row * cols.length, (row + 1) * cols.length);
    const isCurrentRow = currentKnown && tp === current[0] && cp === current[1] && pp === current[2] && mbs === current[3];
    if (!results.some((c) => c.ok) && !isCurrentRow) return;
    const rowHead = th(`(${tp}, ${cp}, ${pp}, ${mbs})`, 'row');
    if (isCurrentRow) rowHead.classList.add('current');
    const tr = el('tr', {}, rowHead);
    results.forEach((c, col) => {
      const gpus = cols[col];
      const td = el('td', { tabIndex: -1, dataset: { layout: `${tp},${cp},${pp},${mbs},${gpus}`, row: String(rowIndex), col: String(col) } });
      if (c.ok) {
        td.className = `cell band-${c.peak_verdict}`;
        td.textContent = gib(c.peak_bytes);
        td.dataset.verdict = c.peak_verdict;
        td.dataset.paperVerdict = c.verdict;
        const cap = c.capacity_bytes;
        const share = cap > 0 ? ` (${percent(c.peak_bytes / cap)})` : '';
        const risk = typeof c.oom_probability === 'number' ? `, probability of OOM ${probability(c.oom_probability)}` : '';
        const text = `peak ${gib(c.peak_bytes)} GiB${share}: ${words(c.peak_verdict)}${risk} · the paper's estimate ` +
          `${gib(c.estimate_bytes)} GiB (${percent(c.usage_fraction)}, ${words(c.verdict)})`;
        td.title = text;
        td.setAttribute('aria-label', `tp ${tp}, cp ${cp}, pp ${pp}, micro-batch ${mbs}, ${gpus} GPUs: ${text}`);
      } else {
        td.className = 'refused';
        td.textContent = '✕';
        td.title = c.error ? c.error.message : `refused (${c.issue}); point at it for the library's message`;
        td.setAttribute('aria-label', `tp ${tp}, cp ${cp}, pp ${pp}, micro-batch ${mbs}, ${gpus} GPUs: refused`);
      }
      if (isCurrentRow && gpus === formGpus) {
        td.classList.add('current');
        td.setAttribute('aria-current', 'true');
        currentCell = td;
      }
      if (gridActive && gridActive.row === rowIndex && gridActive.col === col) active = td;
      tr.append(td);
    });
    body.append(tr);
    rowIndex += 1;
  });
  const table = $('layout-table');
  table.replaceChildren(head, body);
  const target = (hadFocus && active) || currentCell || active || body.querySelector('td');
  if (target) {
    target.tabIndex = 0;
    gridActive = { row: Number(target.dataset.row), col: Number(target.dataset.col) };
    if (hadFocus) target.focus({ preventScroll: true });
  }
  timings.gridMs = performance.now() - t0;
  timings.gridCells = cells.length;
  probe.gridRenders += 1;
  $('grid-time').textContent = `(${cells.length} cells in ${timings.gridMs.toFixed(0)} ms)`;
}

/** Moves the table's Tab stop (roving tabindex) to `td` and focuses it. */
function gridMoveTo(td) {
  const table = $('layout-table');
  for (const other of table.querySelectorAll('td[tabindex="0"]')) other.tabIndex = -1;
  td.tabIndex = 0;
  gridActive = { row: Number(td.dataset.row), col: Number(td.dataset.col) };
  td.focus();
}

function gridCellAt(row, col) {
  return $('layout-table').querySelector(`td[data-row="${row}"][data-col="${col}"]`);
}

function gridKeydown(e) {
  const td = e.target.closest('td[data-row]');
  if (!td) return;
  const row = Number(td.dataset.row);
  const col = Number(td.dataset.col);
  const rows = $('layout-table').tBodies[0].rows.length;
  const cols = $('layout-table').tHead.rows[0].cells.length - 1;
  const moves = {
    ArrowRight: [row, Math.min(cols - 1, col + 1)], ArrowLeft: [row, Math.max(0, col - 1)],
    ArrowDown: [Math.min(rows - 1, row + 1), col], ArrowUp: [Math.max(0, row - 1), col],
    Home: e.ctrlKey ? [0, 0] : [row, 0], End: e.ctrlKey ? [rows - 1, cols - 1] : [row, cols - 1],
    PageDown: [Math.min(rows - 1, row + 8), col], PageUp: [Math.max(0, row - 8), col],
  };
  if (moves[e.key]) {
    e.preventDefault();
    const next = gridCellAt(...moves[e.key]);
    if (next) gridMoveTo(next);
  } else if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    loadGridCell(td);
  }
}

function loadGridCell(td) {
  if (!td.classList.contains('cell')) return;
  const [tp, cp, pp, mbs, gpus] = td.dataset.layout.split(',');
  setState({ ...state, tp, cp, pp, mbs, gpus });
  writeForm(state);
  update();
}

/** A refused cell's message, asked of the library for that one cell when pointed at or focused. */
function explainRefused(td) {
  if (!td.classList.contains('refused') || td.dataset.explained) return;
  const [tp, cp, pp, mbs, gpus] = td.dataset.layout.split(',').map(Number);
  try {
    const [c] = memest.pretrainTable(pretrainRequest(state), [[gpus, tp, cp, pp, mbs]]);
    if (!c.ok) {
      td.title = c.error.message;
      td.setAttribute('aria-label', `tp ${tp}, cp ${cp}, pp ${pp}, micro-batch ${mbs}, ${gpus} GPUs: refused: ${c.error.message}`);
    }
    td.dataset.explained = '1';
  } catch { /* the base request is bad: the form says why */ }
}

/** The table's events: one Tab stop (roving tabindex), arrow keys, Enter or a click loads a
 *  cell; a refused cell is explained when pointed at or focused. */
export function initLayoutGrid() {
  const grid = $('layout-table');
  grid.addEventListener('mouseover', (e) => {
    const td = e.target.closest('td.refused[data-layout]');
    if (td) explainRefused(td);
  });
  grid.addEventListener('focusin', (e) => {
    const td = e.target.closest('td[data-layout]');
    if (td) explainRefused(td);
  });
  grid.addEventListener('keydown', gridKeydown);
  grid.addEventListener('click', (e) => {
    const td = e.target.closest('td[data-layout]');
    if (!td) return;
    gridMoveTo(td);
    loadGridCell(td);
  });
}
