// The memest calculator page. Every number shown comes from libmemest (WebAssembly) through
// ../wasm/memest.mjs; this file only moves values between the form, the library and the DOM.
// Verdict thresholds and names come from the library too (its "enums" mode).
import { GiB } from '@memest';
import {
  DEFAULTS, stateFromHash, hashFromState, searchRequest,
  formProblem, applySet, SEARCH_FP8, searchVariants,
} from './state.js';
import { state, setState, onUpdate, scheduleUpdate } from './page-state.js';
import {
  memest, gpuPresets, modelPresets, loadLibrary, libraryReady, loadPresets, answerUnless,
} from './wasm-bridge.js';
import { timings, probe, finishKeystroke } from './probe.js';
import {
  SEARCH_VARIANTS, variantBoxes, withPresetCapacity, writeForm, syncFields, syncRecomputeOptions,
  fillFormChoices, fillPresets, initForm,
} from './form.js';
import { clearErrors, showError } from './form-errors.js';
import { loadChartJs, stageParts, stageValue, scheduleChart, chartScheduled } from './stage-chart.js';
import { lastPretrain, runPretrain, statusOfPretrain, clearPretrain } from './results.js';
import { renderBandLegend, cancelGrid, initLayoutGrid } from './layout-grid.js';
import { LLMEM_TERMS, lastFinetune, scheduleFinetune, cancelFinetune, clearFinetune } from './finetune.js';
import { sortableTable } from './sortable-table.js';
import { $, el, setStatus, verdictWords } from './dom.js';
import { fmtGiB, percent, probability, marginText, words } from './format.js';

// Both start loading at once: the library (WebAssembly) for the first answer, Chart.js (its own
// chunk) for the chart drawn just after it.
performance.mark('memest-script-start');
loadLibrary();
const chartReady = loadChartJs();

// ---- results of the tabs ------------------------------------------------------------------

let lastSearch = null;
let lastImport = null;
// ---- layout search tab ---------------------------------------------------------------------

function clearSearch() {
  lastSearch = null;
  $('search-error').textContent = '';
  $('search-table').replaceChildren();
  $('search-summary').textContent = '';
}

function runSearch(problem) {
  const t0 = performance.now();
  const d = answerUnless(problem, () => searchRequest(state));
  timings.searchMs = performance.now() - t0;
  clearSearch();
  document.body.classList.toggle('invalid', !d.ok);
  probe.searchRuns += 1;
  if (!d.ok) {
    showError(d.error);
    $('search-error').textContent = d.error.message;
    setStatus('error', [`Not computed: ${d.error.message}`]);
    return;
  }
  lastSearch = d;
  const rows = (d.results ?? []).map((r, i) => ({
    rank: r.rank ?? i + 1, ...flattenLayout(r.layout ?? {}), peak_gib: (r.peak_bytes ?? 0) / GiB,
    peak_verdict: r.peak_verdict ?? '', estimate_gib: (r.estimate_bytes ?? 0) / GiB, verdict: r.verdict ?? '',
    tflops: r.tflops_per_gpu ?? null, tokens: r.tokens_per_s ?? null, reason: r.reason ?? '', _raw: r,
    tie: r.tie ? 1 : 0, mfu: r.throughput?.mfu ?? null,
    oom_probability: r.oom_probability ?? null, margin_gib: r.margin_bytes == null ? null : r.margin_bytes / GiB,
    fp8: r.fp8 ? 'on' : 'off', compile: r.compile ?? 'none',
  }));
  // which fp8 and torch.compile each layout trains with: shown when the search tried variants,
  // or when a layout uses either (as the CLI's table)
  const tried = searchVariants(state);
  const variants = 'fp8' in tried || 'compile' in tried || rows.some((r) => r.fp8 === 'on' || r.compile !== 'none');
  const limit = typeof d.max_oom_probability === 'number'
    ? ` with a probability of OOM of at most ${probability(d.max_oom_probability)}` : '';
  $('search-summary').dataset.maxOomProbability = String(d.max_oom_probability ?? '');
  $('search-summary').textContent = rows.length
    ? `${d.ranked} of ${d.candidates} layouts fit${limit} and were ranked (${d.pruned_total} dropped); the best ${rows.length}:`
    : `No layout of the ${d.candidates} considered fits (${d.pruned_total} dropped: ${prunedSummary(d.pruned)}).`;
  const who = `${d.model.name} on ${d.gpus} × ${d.gpu.name}, layout search: `;
  if (rows.length) {
    const best = d.results[0];
    const l = best.layout;
    setStatus('result', [who, 'the fastest layout predicted to fit is ',
      `tp ${l.tp}, cp ${l.cp}, pp ${l.pp}, vpp ${l.vpp}, micro-batch ${l.micro_batch}, recompute ${l.recompute}, ZeRO ${l.zero}` +
      (variants ? `, fp8 ${best.fp8 ? 'on' : 'off'}, compile ${best.compile ?? 'none'}` : ''),
      ' — ', verdictWords(best.peak_verdict),
      `, peak ${fmtGiB(best.peak_bytes)} of ${fmtGiB(d.gpu.memory_bytes)}` +
      (typeof best.oom_probability === 'number' ? ` (probability of OOM ${probability(best.oom_probability)}, ${marginText(best.margin_bytes)})` : '') +
      `, ${best.tflops_per_gpu.toFixed(1)} TFLOP/s per GPU.`],
    best.peak_verdict);
  } else {
    setStatus('result', [who, verdictWords('oom'), ` — no layout of the ${d.candidates} considered fits.`], 'oom');
  }
  const layoutKeys = ['tp', 'cp', 'pp', 'vpp', 'dp', 'ep', 'micro_batch', 'zero'].filter((k) => rows.some((r) => k in r));
  sortableTable($('search-table'), [
    { key: 'rank', label: 'Rank', num: true },
    { key: 'tie', label: 'Tie', num: true, fmt: (v) => (v ? '=' : '') },
    ...layoutKeys.map((k) => ({ key: k, label: k === 'micro_batch' ? 'mbs' : k, num: true })),
    ...(rows.some((r) => 'recompute' in r) ? [{ key: 'recompute', label: 'Recompute' }] : []),
    ...(variants ? [{ key: 'fp8', label: 'fp8' }, { key: 'compile', label: 'Compile' }] : []),
    { key: 'peak_gib', label: 'Peak (GiB)', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'peak_verdict', label: 'Verdict', fmt: (v) => words(v), verdict: 'peak_verdict' },
    ...(rows.some((r) => r.oom_probability != null) ? [
      { key: 'oom_probability', label: 'P(OOM)', num: true, fmt: (v) => (v == null ? '—' : probability(v)) },
      { key: 'margin_gib', label: 'Margin (GiB)', num: true, fmt: (v) => (v == null ? '—' : v.toFixed(2)) },
    ] : []),
    { key: 'estimate_gib', label: 'Paper\'s estimate (GiB)', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'verdict', label: 'Paper\'s verdict', fmt: (v) => words(v) },
    { key: 'tflops', label: 'TFLOP/s per GPU', num: true, fmt: (v) => (v == null ? '—' : Number(v).toFixed(1)) },
    { key: 'tokens', label: 'Tokens/s', num: true, fmt: (v) => (v == null ? '—' : Math.round(v).toLocaleString('en-US')) },
    { key: 'mfu', label: 'MFU', num: true, fmt: (v) => (v == null ? '—' : percent(v)) },
  ], rows, (r) => `verdict-${r.peak_verdict}`, (row) => {
    const b = el('button', { type: 'button', className: 'use', title: row.reason }, 'Use');
    b.setAttribute('aria-label', `Use layout ranked ${row.rank}`);
    b.addEventListener('click', () => applyLayout(row._raw.layout, row._raw));
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
  return out;
}

/** Loads a search result's layout into the form: every field the search chose (tp, cp, pp,
 *  vpp, micro-batch, recompute, ZeRO, and the fp8 and torch.compile of its entry); the GPUs, SP
 *  and other training settings are those it ran with. */
function applyLayout(l, entry = {}) {
  const set = { parallel: {}, training: {} };
  for (const k of ['tp', 'cp', 'pp', 'vpp', 'zero', 'gpus', 'sp']) if (l[k] != null) set.parallel[k] = l[k];
  // expert parallelism: only where the search varied it (ep > 1, or experts not split by tp)
  if (l.ep != null && (l.ep > 1 || l.etp !== l.tp)) {
    set.parallel.ep = l.ep;
    set.parallel.etp = l.etp === l.tp ? 0 : l.etp;
  }
  // the end stages' layers of an uneven pipeline (the search reports them for every pp > 1
  // layout; pp 1 has no end stages); a layout string of the form does not apply to another layout
  for (const k of ['first_stage_layers', 'last_stage_layers']) {
    set.parallel[k] = (l.pp ?? 1) > 1 && l[k] != null ? l[k] : 0;
  }
  set.parallel.pipeline_layout = '';
  for (const k of ['micro_batch', 'recompute']) if (l[k] != null) set.training[k] = l[k];
  for (const k of ['fp8', 'compile']) if (entry[k] != null) set.training[k] = entry[k];
  const { state: next } = applySet(state, set);
  selectTab('pretrain');
  setState({ ...next, tab: 'pretrain' });
  writeForm(state);
  update();
}

// ---- import tab (launch files) -------------------------------------------------------------
// The library's "import" mode reads one run's launch files into a pretrain request and says
// where each field comes from (a file's line, a framework default and the file defining it, a
// flag, a rule); the page sends the files and the optional fields, and shows the answer as is.

/** Whether the next import asks for the estimate too (the Estimate button); any edit drops it. */
let importEstimate = false;
let importFileCount = 0;

/** Adds one launch file's name and text to the tab (empty: a file to paste). */
function addImportFile(name = '', text = '') {
  const n = importFileCount++;
  const remove = el('button', { type: 'button', className: 'import-remove' }, 'Remove');
  remove.setAttribute('aria-label', `Remove file ${n + 1}`);
  const box = el('div', { className: 'import-file', dataset: { file: String(n) } },
    el('div', { className: 'import-file-head' },
      el('label', { htmlFor: `import-name-${n}` }, 'File name'),
      el('input', { type: 'text', id: `import-name-${n}`, className: 'import-name', value: name,
        placeholder: 'e.g. llama3_8b.toml, train.sh, ds_config.json', spellcheck: false }),
      remove),
    el('textarea', { id: `import-text-${n}`, className: 'import-text', rows: 8, spellcheck: false, value: text,
      placeholder: 'the file\'s contents' }));
  box.querySelector('textarea').setAttribute('aria-label', `Contents of file ${n + 1}`);
  remove.addEventListener('click', () => {
    box.remove();
    if (!document.querySelector('#import-files .import-file')) addImportFile();
    importEdited();
  });
  $('import-files').append(box);
  return box;
}

/** The tab's files as the request's "files": those with a name or a text. */
function importFiles() {
  return [...document.querySelectorAll('#import-files .import-file')].map((box) => ({
    name: box.querySelector('.import-name').value.trim(), text: box.querySelector('.import-text').value,
  })).filter((f) => f.name || f.text);
}

/** Puts files read from a drop or the file picker into the tab: the first into an empty entry. */
async function loadImportFiles(list) {
  for (const f of list) {
    const text = await f.text();
    const empty = [...document.querySelectorAll('#import-files .import-file')].find((box) =>
      !box.querySelector('.import-name').value && !box.querySelector('.import-text').value);
    const box = empty ?? addImportFile();
    box.querySelector('.import-name').value = f.name;
    box.querySelector('.import-text').value = text;
  }
  importEdited();
}

function importEdited() {
  importEstimate = false;
  if (state.tab === 'import') scheduleUpdate();
}

/** The import request of the tab: the files, and each optional field that is filled. */
function importRequest(estimate) {
  const doc = { mode: 'import', files: importFiles() };
  const gpu = $('import-gpu').value;
  if (gpu) doc.gpu = gpu;
  const model = $('import-model').value;
  if (model) doc.model = model;
  for (const [id, key] of [['import-gpus', 'gpus'], ['import-seq', 'seq_len']]) {
    const text = $(id).value.trim();
    // the number as typed (the library checks it and names the field it refuses)
    if (text !== '') doc[key] = Number(text);
  }
  if (estimate) doc.estimate = true;
  return doc;
}

/** The request's fields as "parallel.tp" -> value (objects flattened, lists kept whole). */
function flattenFields(obj, prefix = '', out = new Map()) {
  for (const [k, v] of Object.entries(obj ?? {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flattenFields(v, key, out);
    else out.set(key, v);
  }
  return out;
}

const fieldText = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

/** Where an origin points, in words: the file and line with its key, the framework default and
 *  the file defining it, the flag, or the rule; any further detail the library gives after. */
function originWhere(o) {
  const parts = [];
  const known = new Set(['from']);
  if (o.file != null) {
    parts.push(el('code', { className: 'origin-file' }, o.line != null ? `${o.file}:${o.line}` : o.file));
    known.add('file').add('line');
    if (o.key != null) { parts.push(' ', el('code', {}, o.key)); known.add('key'); }
  }
  if (o.framework != null || o.default != null) {
    parts.push(`${o.framework ?? ''} default`.trim(), ...(o.default != null ? [': ', el('code', {}, o.default)] : []));
    if (o.defined_in != null) parts.push(' (', el('code', { className: 'origin-defined-in' }, o.defined_in), ')');
    known.add('framework').add('default').add('defined_in');
  }
  if (o.flag != null) { parts.push(el('code', {}, o.flag)); known.add('flag'); }
  if (o.rule != null) { parts.push(o.rule); known.add('rule'); }
  for (const [k, v] of Object.entries(o)) {
    if (!known.has(k)) parts.push(`${parts.length ? '; ' : ''}${k}: ${fieldText(v)}`);
  }
  return parts;
}

function clearImport() {
  lastImport = null;
  $('import-error').textContent = '';
  $('import-format').textContent = '—';
  $('import-file-formats').textContent = '';
  $('import-verdict').textContent = '—';
  $('import-verdict').dataset.verdict = '';
  for (const id of ['import-risk', 'import-peak-share', 'import-request']) $(id).textContent = '';
  $('import-peak').textContent = '—';
  $('import-origins').tBodies[0].replaceChildren();
  $('import-warnings').replaceChildren();
  $('import-warnings-box').hidden = true;
  $('import-estimate').disabled = true;
}

function runImport() {
  clearImport();
  probe.importRuns += 1;
  const doc = importRequest(importEstimate);
  if (!doc.files.length) {
    document.body.classList.remove('invalid');
    setStatus('idle', ['Paste or drop one run\'s launch files in the Import tab.']);
    return;
  }
  const d = memest.answer(doc);
  document.body.classList.toggle('invalid', !d.ok);
  if (!d.ok) {
    // the library's message as it is: it names what is missing (e.g. gpu: ... add --gpu ...)
    $('import-error').textContent = d.error.message;
    $('import-error').dataset.field = d.error.field ?? '';
    setStatus('error', [`Not imported: ${d.error.message}`]);
    return;
  }
  lastImport = d;
  $('import-format').textContent = d.format;
  $('import-file-formats').textContent = (d.files ?? []).map((f) => `${f.name || '(unnamed)'}: ${f.format}`).join(', ');
  $('import-request').textContent = JSON.stringify(d.request, null, 2);
  const fields = flattenFields(d.request);
  const origins = d.origins ?? {};
  for (const key of Object.keys(origins)) if (!fields.has(key)) fields.set(key, undefined);
  $('import-origins').tBodies[0].replaceChildren(...[...fields].map(([key, value]) => {
    const o = origins[key];
    return el('tr', { dataset: { field: key, from: o?.from ?? '' } },
      el('th', { scope: 'row' }, el('code', {}, key)),
      el('td', { className: 'text' }, fieldText(value)),
      el('td', { className: 'text' }, o?.from ?? '—'),
      el('td', { className: 'text origin-where' }, ...(o ? originWhere(o) : [])));
  }));
  const warnings = d.warnings ?? [];
  $('import-warnings-box').hidden = warnings.length === 0;
  $('import-warnings').replaceChildren(...warnings.map((w) => el('li', {},
    el('span', {}, ...(w.file != null ? [el('code', {}, w.line != null ? `${w.file}:${w.line}` : w.file), ' '] : []),
      ...(w.key != null ? [el('code', {}, w.key), ': '] : []), w.message ?? ''))));
  $('import-estimate').disabled = false;
  const what = `${d.format} launch file${(d.files ?? []).length === 1 ? '' : 's'} imported`;
  const e = d.estimate;
  if (e && e.ok !== false) {
    const capacity = e.capacity_bytes;
    $('import-verdict').textContent = words(e.peak_verdict);
    $('import-verdict').dataset.verdict = e.peak_verdict;
    $('import-peak').textContent = `${fmtGiB(e.peak_bytes)} (stage ${e.peak_stage})`;
    $('import-peak').dataset.bytes = String(e.peak_bytes);
    $('import-peak-share').textContent = capacity > 0 ? `${percent(e.peak_bytes / capacity)} of ${fmtGiB(capacity)}` : '';
    $('import-risk').textContent = capacity > 0 && typeof e.oom_probability === 'number'
      ? `probability of OOM ${probability(e.oom_probability)}, ${marginText(e.margin_bytes)}` : '';
    setStatus('result', [`${what}. `, ...statusOfPretrain(e)], e.peak_verdict);
  } else if (e) {
    $('import-error').textContent = e.error?.message ?? 'the estimate failed';
    setStatus('error', [`Imported, not estimated: ${e.error?.message ?? ''}`]);
  } else {
    setStatus('result', [`${what}: a pretraining request of ${fields.size} fields` +
      (warnings.length ? `, ${warnings.length} warning${warnings.length > 1 ? 's' : ''}` : '') + '. Estimate runs it.']);
  }
}

// ---- tabs ----------------------------------------------------------------------------------

const TABS = ['pretrain', 'finetune', 'search', 'import'];

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

/** Recomputes the active tab from the state; the other tabs' results are dropped (stale). */
function update() {
  syncFields(state);
  const hash = hashFromState(state);
  if (hash !== location.hash) history.replaceState(null, '', hash || location.pathname + location.search);
  clearErrors();
  const problem = formProblem(state);
  if (state.tab !== 'pretrain') {
    cancelGrid();
    clearPretrain();
  }
  if (state.tab !== 'finetune') {
    cancelFinetune();
    clearFinetune();
  }
  if (state.tab !== 'search') clearSearch();
  if (state.tab !== 'import') clearImport();
  if (state.tab === 'pretrain' || state.tab === 'search') syncRecomputeOptions(problem);
  if (state.tab === 'pretrain') runPretrain(problem);
  else if (state.tab === 'finetune') scheduleFinetune(problem);
  else if (state.tab === 'import') runImport();
  else runSearch(problem);
  if (!chartScheduled()) finishKeystroke();
  probe.updates += 1;
}
onUpdate(update);

// ---- downloads and sharing -----------------------------------------------------------------

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name });
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
  if (state.tab === 'import') return lastImport;
  return lastPretrain;
}

function csvOf(result) {
  if (!result) return '';
  if (result.mode === 'finetune') {
    if (!Array.isArray(result.methods)) {
      const cols = ['method', 'batch', 'peak_bytes', 'capacity_bytes', 'verdict', ...LLMEM_TERMS.map(([k]) => k)];
      const row = { method: result.method, batch: result.training?.batch, peak_bytes: result.peak_bytes,
        capacity_bytes: result.capacity_bytes, verdict: result.verdict, ...(result.per_gpu ?? {}) };
      return `${csvLine(cols)}\n${csvLine(cols.map((c) => row[c]))}\n`;
    }
    const cols = ['method', 'applicable', 'tp', 'dp', 'max_batch', 'score', 'peak_bytes', 'reason'];
    return [csvLine(cols), ...result.methods.map((m) => csvLine(cols.map((c) => m[c])))].join('\n') + '\n';
  }
  if (result.mode === 'import') {
    // the origins table: each request field, its value and where it comes from
    const fields = flattenFields(result.request);
    const cols = ['field', 'value', 'from', 'file', 'line', 'key', 'framework', 'default', 'defined_in', 'flag', 'rule'];
    return [csvLine(cols), ...[...fields].map(([field, value]) => csvLine(cols.map((c) => (
      c === 'field' ? field : c === 'value' ? fieldText(value) : result.origins?.[field]?.[c]))))].join('\n') + '\n';
  }
  if (result.mode === 'search') {
    const rows = (result.results ?? []).map((r) => ({ ...flattenLayout(r.layout ?? {}), ...r, layout: undefined }));
    const cols = [...new Set(rows.flatMap((r) => Object.keys(r).filter((k) => r[k] !== undefined && typeof r[k] !== 'object')))];
    return [csvLine(cols), ...rows.map((r) => csvLine(cols.map((c) => r[c])))].join('\n') + '\n';
  }
  const cols = ['stage', 'layers', 'microbatches_in_flight', 'parameters', 'weights_bytes',
    'gradients_bytes', 'optimizer_bytes', 'activations_bytes', 'total_bytes'];
  const extra = [...stageParts(result.stages).map((p) => p[0]), 'peak_bytes'].filter((k) => !cols.includes(k));
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
  if (lastPretrain) scheduleChart(lastPretrain);
}

// ---- start ---------------------------------------------------------------------------------

async function start() {
  let theme = 'auto';
  try { theme = localStorage.getItem('memest-theme') || 'auto'; } catch { /* ignore */ }
  applyTheme(THEMES.includes(theme) ? theme : 'auto');
  await libraryReady();
  renderBandLegend();
  const enums = memest.enums();
  fillFormChoices(enums);
  // the search's default limit on the probability of OOM: the library's
  $('search-max-oom').placeholder = `default ${memest.searchMaxOomProbability()}`;
  // the stack variants the search may try: fp8 off / on (a boolean) and the library's
  // torch.compile names (its compile enum, as the compile select's)
  const variantBox = (id, name) => el('label', { className: 'check' },
    el('input', { type: 'checkbox', value: name, id: `${id}-${name}`, name: id }), ` ${name}`);
  $('search-fp8').replaceChildren(...SEARCH_FP8.map((name) => variantBox('search-fp8', name)));
  $('search-compile').replaceChildren(...enums.compile.map((name) => variantBox('search-compile', name)));
  selectTab(state.tab);
  // The answer first; the preset lists (the library's presets mode) once it is on screen.
  update();
  await new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); });
  loadPresets();
  fillPresets();
  // the import tab's optional fields: the same presets, "from the files" ('') first
  $('import-gpu').append(...gpuPresets.map((g) => new Option(`${g.name} (${(g.memory_bytes / GiB).toFixed(2)} GiB usable)`, g.id)));
  $('import-model').append(...modelPresets.map((m) => new Option(`${m.name} (${(m.num_parameters / 1e9).toFixed(2)} B)`, m.id)));
  $('version').textContent = `libmemest ${memest.version()} (WebAssembly)`;
  setState(withPresetCapacity(state));
  writeForm(state);

  initForm();
  $('search-top').addEventListener('input', () => { state.top = $('search-top').value; scheduleUpdate(); });
  $('search-max-oom').addEventListener('input', () => { state.moop = $('search-max-oom').value; scheduleUpdate(); });
  for (const [key, id] of Object.entries(SEARCH_VARIANTS)) {
    $(id).addEventListener('change', () => {
      state[key] = variantBoxes(id).filter((b) => b.checked).map((b) => b.value).join(',');
      scheduleUpdate();
    });
  }
  $('search-run').addEventListener('click', () => {
    state.top = $('search-top').value;
    state.moop = $('search-max-oom').value;
    update();
  });

  // the import tab: its files (typed, chosen or dropped) and optional fields; Estimate runs it
  addImportFile();
  $('import-add').addEventListener('click', () => addImportFile().querySelector('.import-name').focus());
  $('panel-import').addEventListener('input', (e) => {
    if (e.target.id !== 'import-file-input') importEdited();
  });
  $('import-file-input').addEventListener('change', async (e) => {
    await loadImportFiles([...(e.target.files ?? [])]);
    e.target.value = '';
  });
  const drop = $('import-drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('dropping'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('dropping'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('dropping');
    // read what was dropped now: the DataTransfer empties once the handler returns
    const files = [...(e.dataTransfer?.files ?? [])];
    const text = e.dataTransfer?.getData('text') ?? '';
    if (files.length) await loadImportFiles(files);
    else if (text) await loadImportFiles([{ name: '', text: async () => text }]);
  });
  $('import-estimate').addEventListener('click', () => {
    importEstimate = true;
    update();
  });

  initLayoutGrid();

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
      $('share').textContent = 'Link copied';
    } catch {
      $('share').textContent = 'Copy link (see the address bar)';
    }
    setTimeout(() => { $('share').textContent = 'Copy link'; }, 2000);
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
    setState(withPresetCapacity(stateFromHash(location.hash)));
    writeForm(state);
    selectTab(state.tab);
    update();
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => lastPretrain && scheduleChart(lastPretrain));

  await chartReady;
  if (lastPretrain) scheduleChart(lastPretrain);
  await new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); });
  document.body.dataset.ready = '1';
}

start().catch((e) => {
  setStatus('error', [`The estimator failed to load: ${e.message ?? e}`]);
  document.body.dataset.ready = 'error';
  throw e;
});

export { DEFAULTS };
