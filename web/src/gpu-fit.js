// "Which GPUs would fit this" (the pretraining tab): the form's pretrain request asked of the
// library once per GPU preset (its presets mode), at the form's GPU count and layout, when the
// button is pressed. Each row is one answer of the library: its peak, verdict and probability of
// OOM, or its refusal. Those the library predicts to fit (oom_predicted false) come first, the
// smallest memory first (the library has no prices: memory stands for cost), then the others.
// "Use" loads a GPU into the form. A change to the form drops the list (it answered another
// request).
import { pretrainRequest } from './state.js';
import { state, setState, update } from './page-state.js';
import { memest, gpuPresets } from './wasm-bridge.js';
import { withPresetCapacity, writeForm } from './form.js';
import { $, el, th } from './dom.js';
import { fmtGiB, percent, probability, words } from './format.js';

/** Drops the list; the button is enabled only while the pretraining tab has an answer. */
export function resetGpuFit(answered) {
  $('gpu-fit-run').disabled = !answered;
  $('gpu-fit-table').replaceChildren();
  $('gpu-fit-wrap').hidden = true;
  $('gpu-fit-summary').textContent = '';
}

/** Whether an answer is one the library predicts to fit (its peak within capacity). */
const fits = (d) => d.ok && !d.oom_predicted;

function runGpuFit() {
  const base = pretrainRequest(state);
  const rows = gpuPresets.map((g) => ({ g, d: memest.answer({ ...base, gpu: g.id }) }));
  rows.sort((a, b) => (fits(a.d) ? 0 : 1) - (fits(b.d) ? 0 : 1) || a.g.memory_bytes - b.g.memory_bytes);
  const fitting = rows.filter((r) => fits(r.d));
  const gpus = base.parallel.gpus;
  $('gpu-fit-summary').textContent = fitting.length
    ? `${fitting.length} of ${rows.length} GPU presets fit this at ${gpus} GPUs; the smallest that fits: ${fitting[0].g.name}.`
    : `None of the ${rows.length} GPU presets fits this at ${gpus} GPUs.`;
  const head = el('thead', {}, el('tr', {}, th('GPU', 'col'), th('Memory (usable)', 'col'), th('Peak per GPU', 'col'),
    th('Share', 'col'), th('Verdict', 'col'), th('P(OOM)', 'col'), th('', 'col')));
  const body = el('tbody', {}, ...rows.map(({ g, d }) => {
    const use = el('button', { type: 'button', className: 'use', 'aria-label': `Use ${g.name}` }, 'Use');
    use.addEventListener('click', () => {
      setState(withPresetCapacity({ ...state, g: g.id }));
      writeForm(state);
      update();
    });
    const name = el('th', { scope: 'row' }, g.name);
    const memory = el('td', {}, fmtGiB(g.memory_bytes));
    const verdict = d.ok ? d.peak_verdict : 'refused';
    const tr = el('tr', { dataset: { gpu: g.id, verdict }, className: `verdict-${verdict}` });
    if (g.id === state.g) tr.classList.add('current');
    if (d.ok) {
      tr.append(name, memory, el('td', { dataset: { peak: String(d.peak_bytes) } }, fmtGiB(d.peak_bytes)),
        el('td', {}, d.capacity_bytes > 0 ? percent(d.peak_bytes / d.capacity_bytes) : '—'),
        el('td', { className: 'text', dataset: { verdict } }, words(verdict)),
        el('td', {}, typeof d.oom_probability === 'number' ? probability(d.oom_probability) : '—'),
        el('td', {}, use));
    } else {
      tr.append(name, memory, el('td', { className: 'text', colSpan: 4 }, `refused: ${d.error.message}`), el('td', {}, use));
    }
    return tr;
  }));
  $('gpu-fit-table').replaceChildren(
    el('caption', {}, `Each GPU preset for this configuration at ${gpus} GPUs: one library request each`), head, body);
  $('gpu-fit-wrap').hidden = false;
}

/** The button's event. */
export function initGpuFit() {
  $('gpu-fit-run').addEventListener('click', runGpuFit);
}
