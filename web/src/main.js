// The memest calculator page. Every number shown comes from libmemest (WebAssembly) through
// ../wasm/memest.mjs; this file only moves values between the form, the library and the DOM.
import { createMemest, GiB } from '@memest';
import {
  Chart, BarController, BarElement, LineController, LineElement, PointElement,
  CategoryScale, LinearScale, Legend, Tooltip,
} from 'chart.js';
import annotationPlugin from 'chartjs-plugin-annotation';
import {
  DEFAULTS, stateFromHash, hashFromState, pretrainRequest, finetuneRequest, searchRequest,
  inputForField,
} from './state.js';

Chart.register(BarController, BarElement, LineController, LineElement, PointElement,
  CategoryScale, LinearScale, Legend, Tooltip, annotationPlugin);

const $ = (id) => document.getElementById(id);
const gib = (bytes) => (bytes / GiB).toFixed(2);
const fmtGiB = (bytes) => `${gib(bytes)} GiB`;

/** Layouts (rows) and GPU counts (columns) of the paper-style table: 64 x 8 = 512 cells. */
const GRID_GPUS = [8, 16, 32, 64, 128, 256, 512, 1024];
const GRID_LAYOUTS = [];
for (const tp of [1, 2, 4, 8]) {
  for (const cp of [1, 2]) {
    for (const pp of [1, 2, 4, 8]) {
      for (const mbs of [1, 2]) GRID_LAYOUTS.push([tp, cp, pp, mbs]);
    }
  }
}

// ---- form <-> state ------------------------------------------------------------------------

const FORM = {
  m: 'model-preset', cfg: 'model-config', g: 'gpu-preset', mem: 'gpu-memory', gpus: 'gpus',
  tp: 'tp', cp: 'cp', pp: 'pp', vpp: 'vpp', zero: 'zero', sp: 'sp', seq: 'seq', mbs: 'mbs',
  gbs: 'gbs', rc: 'recompute', fa: 'flash', top: 'search-top',
};

let state = stateFromHash(location.hash);

function writeForm(s) {
  for (const [key, id] of Object.entries(FORM)) {
    const el = $(id);
    if (el.type === 'checkbox') el.checked = s[key] === '1';
    else el.value = s[key];
  }
  syncCustomFields(s);
}

function readForm() {
  const s = { ...state };
  for (const [key, id] of Object.entries(FORM)) {
    const el = $(id);
    s[key] = el.type === 'checkbox' ? (el.checked ? '1' : '0') : el.value;
  }
  return s;
}

function syncCustomFields(s) {
  $('config-field').hidden = s.m !== 'custom';
  $('gpu-memory').readOnly = s.g !== 'custom';
  $('gpu-memory-field').classList.toggle('derived', s.g !== 'custom');
}

// ---- errors, inline ------------------------------------------------------------------------

const ERROR_SLOTS = ['model', 'gpu', 'gpus', 'tp', 'cp', 'pp', 'vpp', 'zero', 'sp', 'seq', 'mbs',
  'gbs', 'recompute', 'flash', 'general'];
const SLOT_INPUTS = { model: ['model-preset', 'model-config'], gpu: ['gpu-preset', 'gpu-memory'] };

function clearErrors() {
  for (const slot of ERROR_SLOTS) $(`err-${slot}`).textContent = '';
  for (const el of document.querySelectorAll('[aria-invalid="true"]')) el.removeAttribute('aria-invalid');
}

function showError(error) {
  const slot = inputForField(error.field);
  $(`err-${slot}`).textContent = error.message;
  const ids = SLOT_INPUTS[slot] ?? (slot === 'general' ? [] : [slot]);
  for (const id of ids) {
    if (id === 'model-config' && state.m !== 'custom') continue;
    $(id).setAttribute('aria-invalid', 'true');
  }
}

// ---- the library ---------------------------------------------------------------------------

/** @type {import('../../wasm/memest.mjs').Memest} */
let memest;
/** The library's verdict bands ({fits: 0.8, tight: 1.0}: upper bounds as fractions of capacity). */
let bands = {};
let gpuPresets = [];
let lastPretrain = null;
let lastFinetune = null;
let lastSearch = null;
const timings = { firstResultMs: null, gridMs: null, gridCells: 0, pretrainMs: null };
/** For tests and the benchmark: timings, and a count of completed updates. */
window.__memest = { timings, updates: 0 };

// ---- chart ---------------------------------------------------------------------------------

let chart = null;
const PARTS = [
  ['weights_bytes', 'Weights', '--c-weights'],
  ['gradients_bytes', 'Gradients', '--c-grads'],
  ['optimizer_bytes', 'Optimizer', '--c-optim'],
  ['activations_bytes', 'Activations', '--c-acts'],
];
/** Stacked parts of a stage: the four of the 4D paper, then the overhead model's net total
 *  (CUDA context, communication buffers, bf16 logits, corrections, fragmentation), so the top of
 *  the bar is the stage's peak_bytes. */
function stageParts(stages) {
  const parts = [...PARTS];
  if (stages.some((s) => typeof s.overhead_bytes === 'number')) {
    parts.push(['overhead_bytes', 'Overheads (context, buffers, fragmentation)', '--c-over']);
  }
  return parts;
}

function stageValue(stage, key) {
  const v = stage[key];
  if (typeof v === 'number') return v;
  if (v && typeof v === 'object') {
    return Object.values(v).reduce((a, x) => a + (typeof x === 'number' ? x : 0), 0);
  }
  return 0;
}

const percent = (fraction) => `${Math.round(fraction * 1000) / 10} %`;

/** A verdict as the page shows it, with its band from the library: "fits (≤ 80 %)", "OOM (> 100 %)". */
function verdictLabel(verdict) {
  if (bands[verdict] != null) return `${verdict} (≤ ${percent(bands[verdict])})`;
  if (verdict === 'oom') {
    const top = Math.max(...Object.values(bands));
    return Number.isFinite(top) ? `OOM (> ${percent(top)})` : 'OOM';
  }
  return verdict;
}

/** The legend of the layouts table: one swatch per band the library defines, then OOM. */
function renderBandLegend() {
  const legend = $('band-legend');
  const swatches = [...Object.keys(bands), 'oom'].map((v) => {
    const span = document.createElement('span');
    span.className = `band band-${v}`;
    span.dataset.band = v;
    span.textContent = v === 'oom' ? 'OOM' : `${v} ≤ ${percent(bands[v])}`;
    return span;
  });
  legend.replaceChildren(...swatches.flatMap((el, i) => (i ? [' ', el] : [el])));
}

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function renderChart(r) {
  const labels = r.stages.map((s) => `Stage ${s.stage}${s.stage === r.peak_stage ? ' (peak)' : ''}`);
  const parts = stageParts(r.stages);
  const datasets = parts.map(([key, label, colour]) => ({
    label, data: r.stages.map((s) => stageValue(s, key) / GiB), backgroundColor: css(colour),
    stack: 'memory', borderWidth: 0,
  }));
  const capacity = r.capacity_bytes / GiB;
  const annotations = capacity > 0 ? {
    capacity: {
      type: 'line', yMin: capacity, yMax: capacity, borderColor: css('--c-oom'), borderWidth: 2,
      label: { display: true, content: `capacity ${capacity.toFixed(2)} GiB`, position: 'end',
               backgroundColor: css('--c-oom'), color: '#fff', font: { size: 11 } },
    },
    ...(bands.fits > 0 ? { band: {
      type: 'line', yMin: capacity * bands.fits, yMax: capacity * bands.fits, borderColor: css('--c-tight'),
      borderWidth: 1.5, borderDash: [6, 4],
      label: { display: true, content: percent(bands.fits), position: 'start', backgroundColor: css('--c-tight'),
               color: '#000', font: { size: 11 } },
    } } : {}),
    estimate: {
      type: 'line', yMin: r.estimate_bytes / GiB, yMax: r.estimate_bytes / GiB,
      borderColor: css('--fg-muted'), borderWidth: 1, borderDash: [2, 3],
      label: { display: true, content: `estimate ${gib(r.estimate_bytes)} GiB`, position: 'center',
               backgroundColor: css('--bg-elev'), color: css('--fg'), font: { size: 11 } },
    },
  } : {};
  const maxY = Math.max(capacity * 1.08, (r.peak_bytes / GiB) * 1.08);
  const options = {
    responsive: true, maintainAspectRatio: false, animation: false,
    scales: {
      x: { stacked: true, ticks: { color: css('--fg') }, grid: { color: css('--grid') } },
      y: { stacked: true, beginAtZero: true, suggestedMax: maxY,
           title: { display: true, text: 'GiB per GPU', color: css('--fg') },
           ticks: { color: css('--fg') }, grid: { color: css('--grid') } },
    },
    plugins: {
      legend: { labels: { color: css('--fg') } },
      tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${c.parsed.y.toFixed(2)} GiB` } },
      annotation: { annotations },
    },
  };
  if (!chart) {
    chart = new Chart($('stage-chart'), { type: 'bar', data: { labels, datasets }, options });
  } else {
    chart.data.labels = labels;
    chart.data.datasets = datasets;
    chart.options = options;
    chart.update('none');
  }
  const desc = r.stages.map((s) => `stage ${s.stage} ${gib(s.total_bytes)} GiB`).join(', ');
  $('stage-chart').setAttribute('aria-label',
    `Per-GPU memory by pipeline stage: ${desc}; capacity ${capacity.toFixed(2)} GiB`);
}

// ---- pretrain results ----------------------------------------------------------------------

function renderPretrain(r) {
  $('estimate').textContent = fmtGiB(r.estimate_bytes);
  $('peak').textContent = `${fmtGiB(r.peak_bytes)} (stage ${r.peak_stage})`;
  $('capacity').textContent = r.capacity_bytes > 0
    ? `${fmtGiB(r.capacity_bytes)} · ${(r.usage_fraction * 100).toFixed(1)} %` : 'unknown';
  const v = $('verdict');
  v.textContent = verdictLabel(r.verdict);
  v.dataset.verdict = r.verdict;
  const m = r.model;
  $('model-line').textContent = `${m.name} · ${(m.num_parameters / 1e9).toFixed(2)} B parameters · ` +
    `${r.gpu.name} · dp ${r.layout.dp} · ${r.training.activation_model} activation model` +
    (r.training.num_microbatches ? ` · ${r.training.num_microbatches} micro-batches` : '');
  const tbody = $('stages-table').tBodies[0];
  tbody.replaceChildren(...r.stages.map((s) => {
    const tr = document.createElement('tr');
    const cells = [s.stage, s.layers, s.microbatches_in_flight.toFixed(2), gib(s.weights_bytes),
      gib(s.gradients_bytes), gib(s.optimizer_bytes), gib(s.activations_bytes), gib(s.total_bytes)];
    cells.forEach((c, i) => {
      const td = document.createElement(i === 0 ? 'th' : 'td');
      if (i === 0) td.scope = 'row';
      td.textContent = String(c);
      if (i === 7) td.className = 'total';
      tr.append(td);
    });
    tr.dataset.stage = String(s.stage);
    return tr;
  }));
  renderChart(r);
}

function renderGrid(req) {
  const cells = [];
  for (const [tp, cp, pp, mbs] of GRID_LAYOUTS) {
    for (const g of GRID_GPUS) cells.push([g, tp, cp, pp, mbs]);
  }
  const t0 = performance.now();
  let out;
  try {
    out = memest.pretrainTable(req, cells, { messages: false });
  } catch {
    return; // the base model/GPU is bad: the form shows why
  }
  timings.gridLibMs = performance.now() - t0;
  const table = $('layout-table');
  const head = document.createElement('thead');
  const hr = document.createElement('tr');
  hr.append(th('Layout (tp, cp, pp, mbs)', 'col'), ...GRID_GPUS.map((g) => th(`${g} GPUs`, 'col')));
  head.append(hr);
  const body = document.createElement('tbody');
  GRID_LAYOUTS.forEach(([tp, cp, pp, mbs], row) => {
    const results = out.slice(row * GRID_GPUS.length, (row + 1) * GRID_GPUS.length);
    if (!results.some((c) => c.ok)) return;
    const tr = document.createElement('tr');
    tr.append(th(`(${tp}, ${cp}, ${pp}, ${mbs})`, 'row'));
    results.forEach((c, col) => {
      const td = document.createElement('td');
      const gpus = GRID_GPUS[col];
      if (c.ok) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = `cell band-${c.verdict}`;
        b.textContent = gib(c.estimate_bytes);
        b.dataset.layout = `${tp},${cp},${pp},${mbs},${gpus}`;
        b.dataset.verdict = c.verdict;
        b.setAttribute('aria-label', `tp ${tp}, cp ${cp}, pp ${pp}, micro-batch ${mbs}, ${gpus} GPUs: ` +
          `${gib(c.estimate_bytes)} GiB, ${c.verdict}`);
        b.title = `peak ${gib(c.peak_bytes)} GiB · ${(c.usage_fraction * 100).toFixed(1)} % · ${c.verdict}`;
        td.append(b);
      } else {
        td.className = 'refused';
        td.textContent = '✕';
        td.dataset.layout = `${tp},${cp},${pp},${mbs},${gpus}`;
        if (c.error) td.title = c.error.message;
        else td.title = `refused (${c.issue}); hover for the library's message`;
      }
      tr.append(td);
    });
    body.append(tr);
  });
  table.replaceChildren(head, body);
  timings.gridMs = performance.now() - t0;
  timings.gridCells = cells.length;
  $('grid-time').textContent = `(${cells.length} cells in ${timings.gridMs.toFixed(0)} ms)`;
}

function th(text, scope) {
  const el = document.createElement('th');
  el.scope = scope;
  el.textContent = text;
  return el;
}

// ---- sortable tables (fine-tuning, search) -------------------------------------------------

/**
 * Renders rows into a table whose headers sort it (click or Enter/Space on the header button).
 * @param {HTMLTableElement} table
 * @param {Array<{key: string, label: string, num?: boolean, fmt?: (v: any, row: any) => string}>} cols
 * @param {any[]} rows
 * @param {(row: any) => string} [rowClass]
 */
function sortableTable(table, cols, rows, rowClass, action) {
  const sort = table._sort ?? { key: null, dir: 1 };
  table._sort = sort;
  const sorted = [...rows];
  if (sort.key) {
    const col = cols.find((c) => c.key === sort.key);
    sorted.sort((a, b) => {
      const x = a[sort.key];
      const y = b[sort.key];
      const cmp = col?.num ? (Number(x) || 0) - (Number(y) || 0) : String(x).localeCompare(String(y));
      return cmp * sort.dir;
    });
  }
  const head = document.createElement('thead');
  const hr = document.createElement('tr');
  for (const c of cols) {
    const h = document.createElement('th');
    h.scope = 'col';
    h.setAttribute('aria-sort', sort.key === c.key ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none');
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'sort';
    b.textContent = c.label + (sort.key === c.key ? (sort.dir > 0 ? ' ▲' : ' ▼') : '');
    b.addEventListener('click', () => {
      if (sort.key === c.key) sort.dir = -sort.dir;
      else { sort.key = c.key; sort.dir = c.num ? -1 : 1; }
      sortableTable(table, cols, rows, rowClass, action);
      table.querySelector(`th:nth-child(${cols.indexOf(c) + 1}) button`)?.focus();
    });
    h.append(b);
    hr.append(h);
  }
  if (action) hr.append(th('', 'col'));
  head.append(hr);
  const body = document.createElement('tbody');
  for (const row of sorted) {
    const tr = document.createElement('tr');
    if (rowClass) tr.className = rowClass(row);
    for (const c of cols) {
      const td = document.createElement('td');
      td.textContent = c.fmt ? c.fmt(row[c.key], row) : String(row[c.key] ?? '');
      if (c.num) td.className = 'num';
      tr.append(td);
    }
    if (action) {
      const td = document.createElement('td');
      td.append(action(row));
      tr.append(td);
    }
    body.append(tr);
  }
  table.replaceChildren(head, body);
}

// ---- fine-tuning tab -----------------------------------------------------------------------

function runFinetune() {
  const d = memest.answer(finetuneRequest(state));
  $('finetune-error').textContent = '';
  if (!d.ok) {
    lastFinetune = null;
    $('finetune-error').textContent = d.error.message;
    $('finetune-summary').textContent = '';
    $('finetune-table').replaceChildren();
    return;
  }
  lastFinetune = d;
  $('finetune-summary').textContent = d.selected === 'cpu_offload'
    ? 'No method fits on the GPUs: LLMem selects CPU offloading.'
    : `Selected: ${d.selected} at batch ${d.max_batch} per GPU — peak ${fmtGiB(d.peak_bytes)} of ` +
      `${fmtGiB(d.capacity_bytes)} (${d.verdict}).`;
  const rows = d.methods.map((m) => ({ ...m, peak_gib: m.peak_bytes / GiB, reason: m.reason ?? '' }));
  sortableTable($('finetune-table'), [
    { key: 'method', label: 'Method' },
    { key: 'applicable', label: 'Applies', fmt: (v) => (v ? 'yes' : 'no') },
    { key: 'tp', label: 'tp', num: true },
    { key: 'dp', label: 'dp', num: true },
    { key: 'max_batch', label: 'Max batch', num: true },
    { key: 'score', label: 'Score', num: true },
    { key: 'peak_gib', label: 'Peak (GiB)', num: true, fmt: (v, r) => (r.peak_bytes ? v.toFixed(2) : '—') },
    { key: 'reason', label: 'Note' },
  ], rows, (r) => (r.method === d.selected ? 'selected' : ''));
}

// ---- layout search tab ---------------------------------------------------------------------

function runSearch() {
  const d = memest.answer(searchRequest(state));
  $('search-error').textContent = '';
  if (!d.ok) {
    lastSearch = null;
    $('search-error').textContent = d.error.message;
    $('search-table').replaceChildren();
    $('search-summary').textContent = '';
    return;
  }
  lastSearch = d;
  const rows = (d.results ?? []).map((r, i) => ({
    rank: r.rank ?? i + 1, ...flattenLayout(r.layout ?? {}), peak_gib: (r.peak_bytes ?? 0) / GiB,
    verdict: r.verdict ?? '', oom: r.oom_predicted ? 'yes' : 'no', tflops: r.tflops_per_gpu ?? null,
    tokens: r.tokens_per_s ?? null, _raw: r,
  }));
  $('search-summary').textContent = rows.length
    ? `${d.ranked} of ${d.candidates} layouts fit and were ranked (${d.pruned_total} dropped); the best ${rows.length}:`
    : `No layout of the ${d.candidates} considered fits (${d.pruned_total} dropped: ${prunedSummary(d.pruned)}).`;
  const layoutKeys = ['tp', 'cp', 'pp', 'vpp', 'dp', 'micro_batch', 'zero'].filter((k) => rows.some((r) => k in r));
  sortableTable($('search-table'), [
    { key: 'rank', label: 'Rank', num: true },
    ...layoutKeys.map((k) => ({ key: k, label: k === 'micro_batch' ? 'mbs' : k, num: true })),
    ...(rows.some((r) => 'recompute' in r) ? [{ key: 'recompute', label: 'Recompute' }] : []),
    { key: 'peak_gib', label: 'Peak (GiB)', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'verdict', label: 'Verdict' },
    { key: 'oom', label: 'OOM' },
    { key: 'tflops', label: 'TFLOP/s per GPU', num: true, fmt: (v) => (v == null ? '—' : Number(v).toFixed(1)) },
    { key: 'tokens', label: 'Tokens/s', num: true, fmt: (v) => (v == null ? '—' : Math.round(v).toLocaleString('en-US')) },
  ], rows, (r) => (r.oom === 'yes' ? 'oom-row' : ''), (row) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = 'Use';
    b.setAttribute('aria-label', `Use layout ranked ${row.rank}`);
    b.addEventListener('click', () => applyLayout(row));
    return b;
  });
}

/** "oom 377, vpp_needs_pp 330": the library's prune counts by its reason names, largest first. */
function prunedSummary(pruned) {
  return Object.entries(pruned ?? {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${reason} ${n}`).join(', ') || 'none';
}

function flattenLayout(layout) {
  const out = {};
  for (const [k, v] of Object.entries(layout)) if (typeof v !== 'object') out[k] = v;
  if ('micro_batch' in layout === false && 'mbs' in layout) out.micro_batch = layout.mbs;
  return out;
}

function applyLayout(l) {
  const next = { ...state };
  for (const [key, field] of [['tp', 'tp'], ['cp', 'cp'], ['pp', 'pp'], ['vpp', 'vpp'], ['mbs', 'micro_batch'], ['zero', 'zero']]) {
    if (l[field] != null) next[key] = String(l[field]);
  }
  if (typeof l.recompute === 'string') next.rc = l.recompute;
  if (typeof l.sp === 'boolean') next.sp = l.sp ? '1' : '0';
  if (l.gpus != null) next.gpus = String(l.gpus);
  selectTab('pretrain');
  state = { ...next, tab: 'pretrain' };
  writeForm(state);
  update();
}

// ---- tabs ----------------------------------------------------------------------------------

const TABS = ['pretrain', 'finetune', 'search'];

function selectTab(name, focus = false) {
  for (const t of TABS) {
    const tab = $(`tab-${t}`);
    const on = t === name;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`panel-${t}`).hidden = !on;
    if (on && focus) tab.focus();
  }
  state.tab = name;
}

// ---- the update loop -----------------------------------------------------------------------

function update() {
  syncCustomFields(state);
  const hash = hashFromState(state);
  if (hash !== location.hash) history.replaceState(null, '', hash || location.pathname + location.search);
  clearErrors();
  const req = pretrainRequest(state);
  const t0 = performance.now();
  const d = memest.answer(req);
  timings.pretrainMs = performance.now() - t0;
  document.body.classList.toggle('invalid', !d.ok);
  if (!d.ok) {
    showError(d.error);
    $('status').textContent = `Not computed: ${d.error.message}`;
  } else {
    lastPretrain = d;
    renderPretrain(d);
    $('status').textContent = `${d.model.name} on ${d.layout.gpus} × ${d.gpu.name}: ` +
      `estimate ${fmtGiB(d.estimate_bytes)}, ${d.verdict}.`;
    if (timings.firstResultMs == null) {
      timings.firstResultMs = performance.now();
      performance.mark('memest-first-result');
    }
  }
  renderGrid(req);
  if (state.tab === 'finetune') runFinetune();
  if (state.tab === 'search') runSearch();
  window.__memest.updates += 1;
}

let pending = 0;
function scheduleUpdate() {
  if (pending) return;
  pending = requestAnimationFrame(() => {
    pending = 0;
    update();
  });
}

// ---- downloads and sharing -----------------------------------------------------------------

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function csvLine(values) {
  return values.map((v) => {
    const s = String(v ?? '');
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }).join(',');
}

function currentResult() {
  if (state.tab === 'finetune') return lastFinetune;
  if (state.tab === 'search') return lastSearch;
  return lastPretrain;
}

function csvOf(result) {
  if (!result) return '';
  if (result.mode === 'finetune') {
    const cols = ['method', 'applicable', 'tp', 'dp', 'max_batch', 'score', 'peak_bytes', 'reason'];
    return [csvLine(cols), ...result.methods.map((m) => csvLine(cols.map((c) => m[c])))].join('\n') + '\n';
  }
  if (result.mode === 'search') {
    const rows = (result.results ?? []).map((r) => ({ ...flattenLayout(r.layout ?? {}), ...r, layout: undefined }));
    const cols = [...new Set(rows.flatMap((r) => Object.keys(r).filter((k) => r[k] !== undefined && typeof r[k] !== 'object')))];
    return [csvLine(cols), ...rows.map((r) => csvLine(cols.map((c) => r[c])))].join('\n') + '\n';
  }
  const cols = ['stage', 'layers', 'microbatches_in_flight', 'parameters', 'weights_bytes',
    'gradients_bytes', 'optimizer_bytes', 'activations_bytes', 'total_bytes'];
  const extra = stageParts(result.stages).map((p) => p[0]).filter((k) => !cols.includes(k));
  const all = [...cols, ...extra];
  return [csvLine(all), ...result.stages.map((s) => csvLine(all.map((c) => (extra.includes(c) ? stageValue(s, c) : s[c]))))].join('\n') + '\n';
}

// ---- theme ---------------------------------------------------------------------------------

const THEMES = ['auto', 'light', 'dark'];
function applyTheme(theme) {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  $('theme').textContent = `Theme: ${theme}`;
  $('theme').setAttribute('aria-label', `Colour theme: ${theme} (change)`);
  try { localStorage.setItem('memest-theme', theme); } catch { /* private mode */ }
  if (lastPretrain) renderChart(lastPretrain);
}

// ---- start ---------------------------------------------------------------------------------

function fillSelect(select, items, customLabel) {
  select.replaceChildren(...items.map((it) => new Option(it.label, it.value)));
  select.append(new Option(customLabel, 'custom'));
}

async function start() {
  let theme = 'auto';
  try { theme = localStorage.getItem('memest-theme') || 'auto'; } catch { /* ignore */ }
  applyTheme(THEMES.includes(theme) ? theme : 'auto');
  memest = await createMemest();
  bands = memest.verdictBands();
  renderBandLegend();
  $('recompute').replaceChildren(...memest.enums().recompute.map((name) => new Option(name, name)));
  const models = memest.models();
  gpuPresets = memest.gpus();
  fillSelect($('model-preset'), models.map((m) => ({
    value: m.id, label: `${m.name} (${(m.num_parameters / 1e9).toFixed(2)} B)`,
  })), 'Custom: config.json…');
  fillSelect($('gpu-preset'), gpuPresets.map((g) => ({
    value: g.id, label: `${g.name} (${(g.memory_bytes / GiB).toFixed(0)} GiB)`,
  })), 'Custom capacity…');
  $('version').textContent = `libmemest ${memest.version()} (WebAssembly)`;
  const presetGpu = gpuPresets.find((g) => g.id === state.g);
  if (presetGpu) state.mem = String(presetGpu.memory_bytes / GiB);
  writeForm(state);
  selectTab(state.tab);

  const form = $('inputs');
  form.addEventListener('input', (e) => {
    const next = readForm();
    if (e.target.id === 'gpu-preset' && next.g !== 'custom') {
      const g = gpuPresets.find((x) => x.id === next.g);
      if (g) next.mem = String(g.memory_bytes / GiB);
      $('gpu-memory').value = next.mem;
    }
    if (e.target.id === 'gpu-preset' && next.g === 'custom') $('gpu-memory').focus();
    if (e.target.id === 'model-preset' && next.m === 'custom') $('model-config').focus();
    state = next;
    scheduleUpdate();
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  $('search-top').addEventListener('input', () => { state.top = $('search-top').value; scheduleUpdate(); });
  $('search-run').addEventListener('click', () => { state.top = $('search-top').value; runSearch(); });

  // config.json by file or drag-and-drop anywhere on the form
  const loadConfigText = (text) => {
    state = { ...readForm(), m: 'custom', cfg: text };
    writeForm(state);
    update();
  };
  $('config-file').addEventListener('change', async (e) => {
    const f = e.target.files?.[0];
    if (f) loadConfigText(await f.text());
  });
  form.addEventListener('dragover', (e) => { e.preventDefault(); form.classList.add('dropping'); });
  form.addEventListener('dragleave', () => form.classList.remove('dropping'));
  form.addEventListener('drop', async (e) => {
    e.preventDefault();
    form.classList.remove('dropping');
    const f = e.dataTransfer?.files?.[0];
    if (f) loadConfigText(await f.text());
    else if (e.dataTransfer?.getData('text')) loadConfigText(e.dataTransfer.getData('text'));
  });

  // a refused cell's message, asked of the library for that one cell when pointed at
  $('layout-table').addEventListener('mouseover', (e) => {
    const td = e.target.closest('td.refused[data-layout]');
    if (!td || td.dataset.explained) return;
    const [tp, cp, pp, mbs, gpus] = td.dataset.layout.split(',').map(Number);
    try {
      const [c] = memest.pretrainTable(pretrainRequest(state), [[gpus, tp, cp, pp, mbs]]);
      if (!c.ok) td.title = c.error.message;
      td.dataset.explained = '1';
    } catch { /* the base request is bad: the form says why */ }
  });

  // paper-table cells load their layout
  $('layout-table').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-layout]');
    if (!b) return;
    const [tp, cp, pp, mbs, gpus] = b.dataset.layout.split(',');
    state = { ...state, tp, cp, pp, mbs, gpus };
    writeForm(state);
    update();
    $('estimate').scrollIntoView({ block: 'nearest' });
  });

  // tabs: click, and arrow keys per the WAI-ARIA tabs pattern
  for (const t of TABS) {
    $(`tab-${t}`).addEventListener('click', () => { selectTab(t); update(); });
    $(`tab-${t}`).addEventListener('keydown', (e) => {
      const i = TABS.indexOf(t);
      let j = null;
      if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
      if (e.key === 'ArrowLeft') j = (i + TABS.length - 1) % TABS.length;
      if (e.key === 'Home') j = 0;
      if (e.key === 'End') j = TABS.length - 1;
      if (j != null) { e.preventDefault(); selectTab(TABS[j], true); update(); }
    });
  }

  $('share').addEventListener('click', async () => {
    const url = location.href;
    try {
      await navigator.clipboard.writeText(url);
      $('status').textContent = 'Link copied: it restores this exact configuration.';
    } catch {
      $('status').textContent = `Link: ${url}`;
    }
  });
  $('download-json').addEventListener('click', () => {
    const r = currentResult();
    if (r) download(`memest-${r.mode}.json`, 'application/json', `${JSON.stringify(r, null, 2)}\n`);
  });
  $('download-csv').addEventListener('click', () => {
    const r = currentResult();
    if (r) download(`memest-${r.mode}.csv`, 'text/csv', csvOf(r));
  });
  $('theme').addEventListener('click', () => {
    const cur = document.documentElement.dataset.theme ?? 'auto';
    applyTheme(THEMES[(THEMES.indexOf(cur) + 1) % THEMES.length]);
  });
  window.addEventListener('hashchange', () => {
    state = stateFromHash(location.hash);
    writeForm(state);
    selectTab(state.tab);
    update();
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => lastPretrain && renderChart(lastPretrain));

  update();
  document.body.dataset.ready = '1';
}

start().catch((e) => {
  $('status').textContent = `The estimator failed to load: ${e.message ?? e}`;
  document.body.dataset.ready = 'error';
  throw e;
});

export { DEFAULTS };
