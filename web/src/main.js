// The memest calculator page. Every number shown comes from libmemest (WebAssembly) through
// ../wasm/memest.mjs; this file only moves values between the form, the library and the DOM.
// Verdict thresholds and names come from the library too (its "enums" mode).
import { DEFAULTS, stateFromHash, hashFromState, formProblem } from './state.js';
import { state, setState, onUpdate } from './page-state.js';
import { memest, loadLibrary, libraryReady, loadPresets } from './wasm-bridge.js';
import { probe, finishKeystroke } from './probe.js';
import {
  withPresetCapacity, writeForm, syncFields, syncRecomputeOptions, fillFormChoices, fillPresets,
  initForm,
} from './form.js';
import { clearErrors } from './form-errors.js';
import {
  loadChartJs, stageParts, stageValue, scheduleChart, chartScheduled,
} from './stage-chart.js';
import { lastPretrain, runPretrain, clearPretrain } from './results.js';
import { renderBandLegend, cancelGrid, initLayoutGrid } from './layout-grid.js';
import {
  LLMEM_TERMS, lastFinetune, scheduleFinetune, cancelFinetune, clearFinetune,
} from './finetune.js';
import {
  lastSearch, clearSearch, runSearch, flattenLayout, fillSearchChoices, initSearchControls,
} from './search.js';
import {
  lastImport, flattenFields, fieldText, clearImport, runImport, fillImportPresets, initImportTab,
} from './import-tab.js';
import { selectTab, initTabs } from './tabs.js';
import { $, el, setStatus } from './dom.js';

// Both start loading at once: the library (WebAssembly) for the first answer, Chart.js (its own
// chunk) for the chart drawn just after it.
performance.mark('memest-script-start');
loadLibrary();
const chartReady = loadChartJs();

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
  fillSearchChoices(enums);
  selectTab(state.tab);
  // The answer first; the preset lists (the library's presets mode) once it is on screen.
  update();
  await new Promise((resolve) => { requestAnimationFrame(() => setTimeout(resolve, 0)); });
  loadPresets();
  fillPresets();
  fillImportPresets();
  $('version').textContent = `libmemest ${memest.version()} (WebAssembly)`;
  setState(withPresetCapacity(state));
  writeForm(state);

  initForm();
  initSearchControls();

  initImportTab();

  initLayoutGrid();

  initTabs();

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
