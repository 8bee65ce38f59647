// The calculator page's entry point: starts loading libmemest (WebAssembly) and Chart.js, says
// what an update does (recomputeActiveTab) and wires the modules once the library is ready.
// Every number, verdict threshold and name comes from the library (wasm-bridge.js); the modules
// only move values between the form, the library and the DOM.
import { DEFAULTS, stateFromHash, hashFromState, formProblems } from './state.js';
import { state, setState, setStateFromHash, fitLayout, update, onUpdate } from './page-state.js';
import { memest, loadLibrary, libraryReady, loadPresets } from './wasm-bridge.js';
import { probe, finishKeystroke } from './probe.js';
import {
  withPresetCapacity, writeForm, syncFields, syncRecomputeOptions, fillFormChoices, fillPresets,
  initForm, emptyFieldProblems,
} from './form.js';
import { clearErrors } from './form-errors.js';
import { loadChartJs, scheduleChart, chartScheduled } from './stage-chart.js';
import { lastPretrain, runPretrain, clearPretrain } from './results.js';
import { renderBandLegend, cancelGrid, initLayoutGrid } from './layout-grid.js';
import { scheduleFinetune, cancelFinetune, clearFinetune } from './finetune.js';
import { clearSearch, runSearch, fillSearchChoices, initSearchControls } from './search.js';
import { clearImport, runImport, fillImportPresets, initImportTab } from './import-tab.js';
import { selectTab, initTabs } from './tabs.js';
import { initSharing } from './downloads.js';
import { initGpuFit } from './gpu-fit.js';
import { reconcileHf, hfProblems, initHfConfig } from './hf-config.js';
import { applyStoredTheme, initThemeControls } from './theme.js';
import { fillRecipes, initRecipes } from './recipes.js';
import { $, setStatus } from './dom.js';

// Both start loading at once: the library (WebAssembly) for the first answer, Chart.js (its own
// chunk) for the chart drawn just after it.
performance.mark('memest-script-start');
loadLibrary();
const chartReady = loadChartJs();

// ---- the update loop -----------------------------------------------------------------------

/** Recomputes the active tab from the state; the other tabs' results are dropped (stale). What
 *  update() and scheduleUpdate() (page-state.js) do. */
function recomputeActiveTab() {
  reconcileHf();  // a model by Hugging Face id: fetched, or dropped when the model is no longer it
  // the layout sizes the user has not set follow the GPU count (one GPU: tp = cp = pp = 1)
  for (const k of fitLayout()) $(k).value = state[k];
  syncFields(state);
  const hash = hashFromState(state);
  if (hash !== location.hash) history.replaceState(null, '', hash || location.pathname + location.search);
  clearErrors();
  // every problem of the form's own (the texts that are not JSON, the empty fields), or null
  const problems = hfProblems([...formProblems(state), ...emptyFieldProblems(state)]);
  const problem = problems.length ? problems : null;
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
onUpdate(recomputeActiveTab);

// ---- start ---------------------------------------------------------------------------------

async function start() {
  applyStoredTheme();
  await libraryReady();
  renderBandLegend();
  const enums = memest.enums();
  fillFormChoices(enums);
  fillRecipes();
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

  // the controls' events, once the lists are filled
  initForm();
  initRecipes();
  initHfConfig();
  initSearchControls();
  initImportTab();
  initLayoutGrid();
  initGpuFit();
  initTabs();
  initSharing();
  initThemeControls();
  // a link's hash pasted or edited (back / forward): its state, in the form and the active tab
  window.addEventListener('hashchange', () => {
    setStateFromHash(withPresetCapacity(stateFromHash(location.hash)), location.hash);
    writeForm(state);
    selectTab(state.tab);
    update();
  });

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
