// The fine-tuning tab (LLMem): the library's estimate, computed once typing pauses
// (scheduleFinetune): the verdict, the method and batch (Algorithm 1's choice with "auto"), the
// methods table and LLMem's terms per GPU. The terms' names are those the CLI prints.
import { GiB } from '@memest';
import { finetuneRequest } from './state.js';
import { state } from './page-state.js';
import { answerUnless } from './wasm-bridge.js';
import { timings, probe } from './probe.js';
import { clearErrors, showErrors, errorStatus } from './form-errors.js';
import { sortableTable } from './sortable-table.js';
import { $, el, setStatus, verdictWords } from './dom.js';
import { gib, fmtGiB, percent, words } from './format.js';

/** The fine-tuning estimate costs ~0.2-0.4 s in WebAssembly: computed once typing pauses. */
const FINETUNE_DEBOUNCE_MS = 250;

/** The last answer shown (the downloads'), null when none is. */
export let lastFinetune = null;

/** LLMem's terms as the CLI prints them (memest finetune): the name, what it holds. */
export const LLMEM_TERMS = [
  ['m_base', 'CUDA context, framework'],
  ['m_p', 'fp16 + fp32 parameters'],
  ['m_os', 'momentum + variance'],
  ['m_out', 'kept outputs'],
  ['m_lm', 'logits, loss, LM head'],
  ['m_back', 'TP backward buffer'],
];

let finetuneTimer = 0;

/** Stops a fine-tuning estimate that is waiting for typing to pause (another tab is shown). */
export function cancelFinetune() {
  clearTimeout(finetuneTimer);
  probe.finetunePending = false;
}

export function clearFinetune() {
  lastFinetune = null;
  $('ft-verdict').textContent = '—';
  $('ft-verdict').dataset.verdict = '';
  $('ft-method-batch').textContent = '—';
  $('ft-peak').textContent = '—';
  $('ft-peak-share').textContent = '';
  $('finetune-summary').textContent = '';
  $('finetune-error').textContent = '';
  $('finetune-table').replaceChildren();
  $('finetune-methods-wrap').hidden = true;
  $('finetune-terms').tBodies[0].replaceChildren();
  $('finetune-terms-wrap').hidden = true;  // no empty table without an answer
  $('finetune-environment').textContent = '';
}

export function scheduleFinetune(problem) {
  clearTimeout(finetuneTimer);
  probe.finetunePending = true;
  $('panel-finetune').setAttribute('aria-busy', 'true');
  if (!lastFinetune) setStatus('pending', ['Fine-tuning: computing LLMem\'s estimate…']);
  const delay = probe.finetuneRuns === 0 ? 0 : FINETUNE_DEBOUNCE_MS;
  finetuneTimer = setTimeout(() => {
    probe.finetunePending = false;
    $('panel-finetune').removeAttribute('aria-busy');
    if (state.tab === 'finetune') runFinetune(problem);
  }, delay);
}

function runFinetune(problem) {
  const t0 = performance.now();
  const d = answerUnless(problem, () => finetuneRequest(state));
  timings.finetuneMs = performance.now() - t0;
  clearErrors();
  document.body.classList.toggle('invalid', !d.ok);
  clearFinetune();
  if (!d.ok) {
    showErrors(d);
    $('finetune-error').textContent = (d.errors ?? [d.error]).map((e) => e.message).join(' ');
    setStatus('error', [errorStatus(d)]);
  } else {
    lastFinetune = d;
    renderFinetune(d);
  }
  probe.finetuneRuns += 1;
}

function renderFinetune(d) {
  const cap = d.capacity_bytes;
  const offload = d.selected === 'cpu_offload';
  const method = d.selected ?? d.method;
  const batch = d.selected ? d.max_batch : d.training?.batch;
  // the verdict with the product's margin (tight above MEMEST_PEAK_FITS_FRACTION); d.verdict is
  // LLMem's own test (peak <= capacity), which picks Algorithm 1's batch
  const verdict = d.peak_verdict;
  $('ft-verdict').textContent = words(verdict);
  $('ft-verdict').dataset.verdict = verdict;
  $('ft-method-batch').textContent = offload ? 'CPU offloading' : `${method} · batch ${batch}`;
  const peak = offload ? null : (d.peak_bytes ?? d.estimate_bytes);
  $('ft-peak').textContent = peak != null ? fmtGiB(peak) : '—';
  // the library's usage_fraction (peak / capacity) where it gives one
  const share = typeof d.usage_fraction === 'number' ? d.usage_fraction : peak / cap;
  $('ft-peak-share').textContent = peak != null && cap > 0 ? `${percent(share)} of ${fmtGiB(cap)}` : '';
  const who = `${d.model.name} on ${d.layout?.gpus ?? state.gpus} × ${d.gpu.name}, fine-tuning (LLMem): `;
  let summary;
  if (offload) {
    summary = `no method fits on the GPUs even at batch 1: LLMem selects CPU offloading.`;
  } else {
    const how = d.selected
      ? `LLMem's Algorithm 1 selects ${method} (the best score among the methods that avoid OOM) at its largest batch, ${batch} per GPU`
      : `${method} at batch ${batch} per GPU`;
    summary = `${how} — peak ${fmtGiB(peak)} of ${fmtGiB(cap)} (${percent(share)}).`;
  }
  $('finetune-summary').textContent = `${words(verdict)}: ${summary}`;
  setStatus('result', [who, verdictWords(verdict), ` — ${summary}`], verdict);

  $('finetune-methods-wrap').hidden = !Array.isArray(d.methods);
  if (Array.isArray(d.methods)) {
    const rows = d.methods.map((m) => ({ ...m, peak_gib: (m.peak_bytes ?? 0) / GiB, reason: m.reason ?? '' }));
    sortableTable($('finetune-table'), [
      { key: 'method', label: 'Method' },
      { key: 'applicable', label: 'Applies', fmt: (v) => (v ? 'yes' : 'no') },
      { key: 'tp', label: 'tp', num: true },
      { key: 'dp', label: 'dp', num: true },
      { key: 'max_batch', label: 'Max batch', num: true },
      { key: 'score', label: 'Score', num: true },
      { key: 'peak_gib', label: 'Peak at max (GiB)', num: true, fmt: (v, r) => (r.peak_bytes ? v.toFixed(2) : '—') },
      { key: 'reason', label: 'Note' },
    ], rows, (r) => (r.method === d.selected ? 'selected' : ''));
  }
  const parts = d.parts ?? {};
  const perGpu = d.per_gpu ?? {};
  $('finetune-terms-wrap').hidden = false;
  $('finetune-terms-caption').textContent = offload
    ? 'LLMem\'s terms: none (CPU offloading)'
    : `LLMem's terms of ${method} at batch ${batch} (GiB): a single GPU's, and what each adds per GPU under the method`;
  $('finetune-terms').tBodies[0].replaceChildren(...LLMEM_TERMS.filter(([k]) => k in parts || k in perGpu)
    .map(([k, what]) => el('tr', { dataset: { term: k } }, el('th', { scope: 'row' }, k), el('td', { className: 'text' }, what),
      el('td', {}, k in parts ? gib(parts[k]) : '—'), el('td', {}, k in perGpu ? gib(perGpu[k]) : '—'))));
  if (!offload && (d.parts || d.per_gpu)) {
    $('finetune-terms').tBodies[0].append(el('tr', { className: 'total-row' },
      el('th', { scope: 'row' }, 'peak'), el('td', { className: 'text' }, 'LLMem\'s peak per GPU'), el('td', {}, ''),
      el('td', { className: 'total' }, gib(peak))));
  }
  const env = d.environment;
  $('finetune-environment').textContent = env
    ? `chunks: ${env.chunk_elements} elements × ${env.chunk_count} (${(env.chunk_waste_bytes / 2 ** 20).toFixed(2)} MiB of chunk space unused)` : '';
}
