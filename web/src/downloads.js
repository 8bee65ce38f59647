// Sharing and downloads (the header's buttons): Copy link (the URL's hash holds the whole
// state), and the active tab's answer as the library's JSON, or as CSV: the stages, the
// fine-tuning methods, the ranked layouts or the import's origins.
import { state } from './page-state.js';
import { stageParts, stageValue } from './stage-chart.js';
import { lastPretrain } from './results.js';
import { LLMEM_TERMS, lastFinetune } from './finetune.js';
import { lastSearch, flattenLayout } from './search.js';
import { lastImport, flattenFields, fieldText } from './import-tab.js';
import { $, el } from './dom.js';

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
      const cols = ['method', 'batch', 'peak_bytes', 'capacity_bytes', 'verdict', 'peak_verdict', ...LLMEM_TERMS.map(([k]) => k)];
      const row = { method: result.method, batch: result.training?.batch, peak_bytes: result.peak_bytes,
        capacity_bytes: result.capacity_bytes, verdict: result.verdict, peak_verdict: result.peak_verdict,
        ...(result.per_gpu ?? {}) };
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

/** The download buttons are enabled only while the active tab shows an answer (no button that
 *  does nothing). */
export function syncDownloads() {
  const none = currentResult() == null;
  $('download-json').disabled = none;
  $('download-csv').disabled = none;
}

/** The buttons' events: Copy link, Download JSON, Download CSV; the downloads follow the status
 *  line (an answer shown or not). */
export function initSharing() {
  $('share').disabled = false;
  document.addEventListener('memest:status', syncDownloads);
  syncDownloads();
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
}
