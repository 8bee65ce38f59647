// The Import tab (launch files): the library's "import" mode reads one run's launch files into a
// pretrain request and says where each field comes from (a file's line, a framework default and
// the file defining it, a flag, a rule); the page sends the files and the optional fields, and
// shows the answer as is, with the estimate when Estimate asks for it.
import { GiB } from '@memest';
import { state, update, scheduleUpdate } from './page-state.js';
import { memest, gpuPresets, modelPresets } from './wasm-bridge.js';
import { probe } from './probe.js';
import { statusOfPretrain } from './results.js';
import { $, el, setStatus } from './dom.js';
import { fmtGiB, percent, probability, marginText, words } from './format.js';

/** The last answer shown (the downloads'), null when none is. */
export let lastImport = null;

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
export function flattenFields(obj, prefix = '', out = new Map()) {
  for (const [k, v] of Object.entries(obj ?? {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flattenFields(v, key, out);
    else out.set(key, v);
  }
  return out;
}

export const fieldText = (v) => (v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

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

export function clearImport() {
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

export function runImport() {
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

/** Fills the tab's optional GPU and model lists with the library's presets, after "from the files". */
export function fillImportPresets() {
  $('import-gpu').append(...gpuPresets.map((g) => new Option(`${g.name} (${(g.memory_bytes / GiB).toFixed(2)} GiB usable)`, g.id)));
  $('import-model').append(...modelPresets.map((m) => new Option(`${m.name} (${(m.num_parameters / 1e9).toFixed(2)} B)`, m.id)));
}

/** The tab's events: its files (typed, chosen or dropped) and optional fields; Estimate runs it.
 *  Starts with one empty file to paste into. */
export function initImportTab() {
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
}
