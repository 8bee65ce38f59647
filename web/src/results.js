// The pretraining tab's answer (runPretrain): the headline verdict with the probability of OOM
// and the margin, the peak and the paper's estimate, the stages table, the stack, adapter,
// experts and dominant parts, the step time and the library's suggestions (a click loads one).
// The chart and the layouts table are stage-chart.js's and layout-grid.js's.
import { pretrainRequest, applySet, setEntries } from './state.js';
import { state, setState, update } from './page-state.js';
import { paperBands, peakBands, answerUnless } from './wasm-bridge.js';
import { timings } from './probe.js';
import { writeForm } from './form.js';
import { showErrors, errorStatus } from './form-errors.js';
import { resetGpuFit } from './gpu-fit.js';
import { scheduleChart, clearChart, stageValue } from './stage-chart.js';
import { scheduleGrid } from './layout-grid.js';
import { $, el, setStatus, verdictWords } from './dom.js';
import { gib, fmtGiB, percent, paramsText, probability, marginText, words, bandText } from './format.js';

/** The last answer shown (the downloads' and the chart's), null when none is. */
export let lastPretrain = null;

/** Names of the library's dominant parts, as a reader says them. */
const PART_NAMES = {
  weights: 'weights', gradients: 'gradients', optimizer: 'optimizer states',
  activations: 'activations', fragmentation: 'allocator fragmentation',
  comm_buffers: 'communication buffers', context: 'CUDA context', logits: 'bf16 logits',
};
const partName = (part) => PART_NAMES[part] ?? part.replace(/_/g, ' ');

function renderPretrain(r) {
  const capacity = r.capacity_bytes;
  $('verdict').textContent = words(r.peak_verdict);
  $('verdict').dataset.verdict = r.peak_verdict;
  $('verdict-band').textContent = capacity > 0
    ? `${words(r.peak_verdict)}: peak ${bandText(peakBands, r.peak_verdict)} of capacity` : '';
  $('peak').textContent = `${fmtGiB(r.peak_bytes)} (stage ${r.peak_stage})`;
  $('peak-share').textContent = capacity > 0 ? `${percent(r.peak_bytes / capacity)} of capacity` : '';
  renderRisk(r);
  renderLogFigures(r);
  $('capacity').textContent = capacity > 0 ? fmtGiB(capacity) : 'unknown';
  $('gpu-name').textContent = `${r.layout.gpus} × ${r.gpu.name}`;
  $('estimate').textContent = fmtGiB(r.estimate_bytes);
  const pv = $('paper-verdict');
  pv.dataset.verdict = r.verdict;
  pv.textContent = capacity > 0
    ? `${percent(r.usage_fraction)} of capacity: ${words(r.verdict)} by the paper's bands (fits ${bandText(paperBands, 'fits')})`
    : '';
  const m = r.model;
  const moe = m.active_parameters != null && m.active_parameters !== m.num_parameters;
  $('model-line').replaceChildren(`${m.name} · ${paramsText(m.num_parameters)} parameters` +
    (moe ? ` (${paramsText(m.active_parameters)} active per token)` : '') +
    (m.mixer_pattern ? ` · hybrid layers: mixers ${m.mixer_pattern}, MLPs ${m.mlp_pattern}` : '') + ' · ' +
    `dp ${r.layout.dp} · `, zeroRan(r),
    (moe ? ` · ep ${r.layout.ep}, etp ${r.layout.etp}, edp ${r.layout.edp}` : '') +
    ` · ${r.training.activation_model} activation model` +
    (r.training.num_microbatches ? ` · ${r.training.num_microbatches} micro-batches` : ''));
  renderExperts(r);

  $('chart-box').hidden = false;
  $('stages-wrap').hidden = false;
  const tbody = $('stages-table').tBodies[0];
  tbody.replaceChildren(...r.stages.map((s) => {
    const tr = el('tr', { dataset: { stage: String(s.stage) } });
    const cells = [s.stage, s.layers, s.microbatches_in_flight.toFixed(2), gib(s.weights_bytes),
      gib(s.gradients_bytes), gib(s.optimizer_bytes), gib(s.activations_bytes), gib(s.total_bytes),
      gib(stageValue(s, 'overhead_bytes')), gib(s.peak_bytes ?? s.total_bytes)];
    cells.forEach((c, i) => {
      const td = el(i === 0 ? 'th' : 'td', {}, String(c));
      if (i === 0) td.scope = 'row';
      if (i === 9) td.className = 'total';
      tr.append(td);
    });
    if (s.stage === r.peak_stage) tr.classList.add('peak-stage');
    return tr;
  }));
  renderStack(r);
  renderAdapter(r);
  renderParts(r);
  renderStep(r);
  renderSuggestions(r);
  scheduleChart(r);
}

/** The ZeRO stage the library ran (the response's layout.zero, not the form's value), and the
 *  form's when the library says it ran another. */
function zeroRan(r) {
  const ran = r.layout.zero;
  const asked = Number(state.zero);
  return el('span', { id: 'ran-zero', dataset: { value: String(ran) } },
    `ZeRO ${ran}` + (Number.isInteger(asked) && asked !== ran ? ` (the form's ${asked}: the ${r.training.framework} stack runs ${ran})` : ''));
}

/** Next to the verdict: the probability of running out of memory and the margin (capacity less
 *  the peak); next to the peak, its 90 % band from memest's measured error. Each keeps the
 *  library's number exactly in data-value. */
function renderRisk(r) {
  const show = r.capacity_bytes > 0 && typeof r.oom_probability === 'number';
  const risk = $('oom-probability');
  risk.textContent = show ? `probability of OOM ${probability(r.oom_probability)}` : '';
  risk.dataset.value = show ? String(r.oom_probability) : '';
  const margin = $('margin');
  margin.textContent = show && typeof r.margin_bytes === 'number' ? marginText(r.margin_bytes) : '';
  margin.dataset.value = show ? String(r.margin_bytes) : '';
  const band = r.peak_band_bytes;
  const hasBand = Array.isArray(band) && band.length === 2;
  $('peak-band').textContent = hasBand ? `90 % band ${gib(band[0])}–${gib(band[1])} GiB` : '';
  $('peak-band').dataset.low = hasBand ? String(band[0]) : '';
  $('peak-band').dataset.high = hasBand ? String(band[1]) : '';
}

/** The three figures a user compares with a run's logs (the peak stage's). */
const LOG_FIGURES = [
  ['torch-allocated', 'torch_max_memory_allocated_bytes'],
  ['torch-reserved', 'torch_max_memory_reserved_bytes'],
  ['nvidia-smi', 'nvidia_smi_bytes'],
];

function renderLogFigures(r) {
  for (const [id, key] of LOG_FIGURES) {
    $(id).textContent = typeof r[key] === 'number' ? fmtGiB(r[key]) : '—';
    $(id).dataset.value = typeof r[key] === 'number' ? String(r[key]) : '';
  }
}

function clearRisk() {
  for (const id of ['oom-probability', 'margin']) { $(id).textContent = ''; $(id).dataset.value = ''; }
  $('peak-band').textContent = '';
  $('peak-band').dataset.low = '';
  $('peak-band').dataset.high = '';
  for (const [id] of LOG_FIGURES) { $(id).textContent = '—'; $(id).dataset.value = ''; }
}

/** The step time and its nonzero parts (the response's `throughput`, present when a global
 *  batch is given). The parts' names are the library's (its step_part enum), shown with spaces;
 *  each item keeps its seconds exactly in data-seconds. */
function renderStep(r) {
  const t = r.throughput;
  $('step-box').hidden = !t;
  if (!t) { clearStep(); return; }
  const overlap = r.training?.comm_overlap;
  $('step-line').textContent = `${t.step_seconds.toFixed(3)} s per global batch · ` +
    `${Math.round(t.tokens_per_s).toLocaleString('en-US')} tokens/s · ${t.tflops_per_gpu.toFixed(1)} TFLOP/s per GPU · ` +
    `MFU ${percent(t.mfu)}` + (overlap ? ` · overlapped: ${overlap.length ? overlap.join(', ') : 'none'}` : '');
  $('step-box').dataset.stepSeconds = String(t.step_seconds);
  $('step-parts').replaceChildren(...Object.entries(t.step ?? {}).filter(([, v]) => v > 0).map(([part, v]) => {
    const share = t.step_seconds > 0 ? v / t.step_seconds : 0;
    return el('li', { dataset: { part, seconds: String(v) } },
      el('span', { className: 'part-name' }, part.replace(/_/g, ' ')),
      el('span', { className: 'part-bar', 'aria-hidden': 'true' },
        el('span', { className: 'part-fill', style: `width: ${Math.max(0, Math.min(1, share)) * 100}%` })),
      el('span', { className: 'part-value' }, `${v.toFixed(3)} s · ${percent(share)}`));
  }));
}

function clearStep() {
  $('step-parts').replaceChildren();
  $('step-line').textContent = '';
  delete $('step-box').dataset.stepSeconds;
  $('step-box').hidden = true;
}

/** The training stack's named parts of a stage (the response's `stack` object), as a reader
 *  says them; a part the library adds later shows under its own name. */
const STACK_PART_NAMES = {
  framework_buffer_bytes: 'framework buffers (FSDP / DDP / DeepSpeed)',
  master_weights_bytes: 'master weights (the optimizer\'s copy)',
  loss_bytes: 'loss temporaries',
  recompute_bytes: 'recompute working set',
  offload_staging_bytes: 'offload staging buffers',
  paged_bytes: 'paged optimizer memory (outside the peak)',
  unsharded_root_bytes: 'FSDP1 root unit kept unsharded (in the weights)',
  optimizer_step_bytes: 'optimizer step temporaries',
};

/** Peak allocated vs reserved, host memory and the stack's named parts of the peak stage. */
function renderStack(r) {
  const figure = (v) => (typeof v === 'number' ? fmtGiB(v) : '—');
  $('peak-allocated').textContent = figure(r.peak_allocated_bytes);
  $('peak-reserved').textContent = figure(r.peak_reserved_bytes);
  $('host-memory').textContent = figure(r.host_bytes);
  const stage = r.stages.find((s) => s.stage === r.peak_stage) ?? r.stages[0];
  const parts = Object.entries(stage?.stack ?? {}).filter(([, v]) => typeof v === 'number');
  // what optimizer.step() allocates beyond what the activations freed (an overhead, 1.6)
  const step = stage?.overheads?.optimizer_step_bytes;
  if (typeof step === 'number' && step > 0) parts.push(['optimizer_step_bytes', step]);
  $('stack-parts').replaceChildren(...parts.map(([key, v]) => el('li', { dataset: { part: key } },
    el('span', { className: 'part-name' }, STACK_PART_NAMES[key] ?? key.replace(/_bytes$/, '').replace(/_/g, ' ')),
    el('span', { className: 'part-value' }, fmtGiB(v)))));
}

/** The adapter parts of a stage (the response's `adapter` object), as a reader says them; a
 *  part the library adds later shows under its own name. */
const ADAPTER_PART_NAMES = {
  base_weights_bytes: 'frozen base weights',
  adapter_weights_bytes: 'adapter weights',
  adapter_gradients_bytes: 'adapter gradients',
  adapter_optimizer_bytes: 'adapter optimizer states',
  quant_metadata_bytes: 'quantisation metadata (NF4 absmax)',
  dequant_bytes: 'dequantised weight (transient)',
};

/** Trainable vs total parameters and the adapter parts of the peak stage; hidden without an
 *  adapter. */
function renderAdapter(r) {
  const stage = r.stages.find((s) => s.stage === r.peak_stage) ?? r.stages[0];
  const adapter = stage?.adapter ?? r.adapter;
  const show = typeof r.trainable_parameters === 'number' && adapter != null;
  $('adapter-box').hidden = !show;
  if (!show) { clearAdapter(); return; }
  const total = r.model.num_parameters;
  $('trainable-params').textContent = `${r.trainable_parameters.toLocaleString('en-US')}` +
    (total > 0 ? ` (${(100 * r.trainable_parameters / total).toFixed(4)} %)` : '');
  $('total-params').textContent = total.toLocaleString('en-US');
  $('trainable-params').dataset.value = String(r.trainable_parameters);
  $('total-params').dataset.value = String(total);
  const parts = Object.entries(adapter).filter(([k, v]) => k.endsWith('_bytes') && typeof v === 'number');
  $('adapter-parts').replaceChildren(...parts.map(([key, v]) => el('li', { dataset: { part: key } },
    el('span', { className: 'part-name' }, ADAPTER_PART_NAMES[key] ?? key.replace(/_bytes$/, '').replace(/_/g, ' ')),
    el('span', { className: 'part-value' }, fmtGiB(v)))));
}

function clearAdapter() {
  for (const id of ['trainable-params', 'total-params']) { $(id).textContent = '—'; $(id).dataset.value = ''; }
  $('adapter-parts').replaceChildren();
  $('adapter-box').hidden = true;
}

function clearStack() {
  for (const id of ['peak-allocated', 'peak-reserved', 'host-memory']) $(id).textContent = '—';
  $('stack-parts').replaceChildren();
}

/** A mixture-of-experts model: the routed experts' share of each stage (in the table's totals),
 *  as the library reports it (stage.experts). Hidden for a dense model. */
function renderExperts(r) {
  const box = $('experts-line');
  const stages = r.stages.filter((s) => s.experts);
  box.hidden = stages.length === 0;
  box.replaceChildren(...stages.map((s) => {
    const e = s.experts;
    const states = e.weights_bytes + e.gradients_bytes + e.optimizer_bytes;
    return el('li', { dataset: { stage: String(s.stage) } },
      `Stage ${s.stage}: ${e.moe_layers} MoE layers, ${(e.parameters / 1e9).toFixed(3)} B expert parameters, ` +
      `${gib(states)} GiB expert states, ${gib(e.activations_bytes)} GiB expert activations, ` +
      `${gib(e.dispatch_buffer_bytes)} GiB all-to-all buffers`);
  }));
}

function renderParts(r) {
  const parts = r.dominant_parts ?? [];
  $('parts-title').textContent = parts.length
    ? `Where the memory goes (stage ${r.peak_stage}, the most loaded)` : 'Where the memory goes';
  $('dominant-parts').replaceChildren(...parts.map((p) => el('li', { dataset: { part: p.part } },
    el('span', { className: 'part-name' }, partName(p.part)),
    el('span', { className: 'part-bar', 'aria-hidden': 'true' },
      el('span', { className: 'part-fill', style: `width: ${Math.max(0, Math.min(1, p.share)) * 100}%` })),
    el('span', { className: 'part-value' }, `${fmtGiB(p.bytes)} · ${Math.round(p.share * 100)} %`))));
}

/** "training.recompute = full, parallel.zero = 3": a suggestion's request fields. */
function setText(set) {
  return setEntries(set).map(([field, v]) => `${field} = ${v}`).join(', ');
}

function renderSuggestions(r) {
  const list = r.suggestions ?? [];
  $('suggestions-box').hidden = list.length === 0;
  $('suggestions').replaceChildren(...list.map((s, i) => {
    const { unknown } = applySet(state, s.set);
    const use = el('button', { type: 'button', className: 'use', disabled: unknown.length > 0,
      'aria-label': `Use: ${s.change}` }, 'Use');
    use.addEventListener('click', () => applySuggestion(s));
    const figures = [`peak ${fmtGiB(s.peak_bytes)}`, words(s.peak_verdict)];
    if (typeof s.host_bytes === 'number') figures.push(`host ${fmtGiB(s.host_bytes)}`);
    if (typeof s.tflops_per_gpu === 'number') figures.push(`${s.tflops_per_gpu.toFixed(1)} TFLOP/s per GPU`);
    return el('li', { dataset: { index: String(i), verdict: s.peak_verdict } },
      el('span', { className: 'change' }, s.change),
      el('span', { className: 'figures' }, figures.join(' · ')),
      el('code', { className: 'set' }, setText(s.set)),
      use);
  }));
}

function applySuggestion(s) {
  const { state: next, unknown } = applySet(state, s.set);
  if (unknown.length) return;
  setState({ ...next, tab: 'pretrain' });
  writeForm(state);
  update();
  $('status').focus?.();
}

export function clearPretrain() {
  lastPretrain = null;
  for (const id of ['verdict', 'peak', 'capacity', 'estimate']) $(id).textContent = '—';
  $('verdict').dataset.verdict = '';
  $('paper-verdict').dataset.verdict = '';
  for (const id of ['verdict-band', 'peak-share', 'gpu-name', 'paper-verdict', 'model-line']) $(id).textContent = '';
  clearRisk();
  $('stages-table').tBodies[0].replaceChildren();
  // no empty chart and no empty table without an answer
  $('stages-wrap').hidden = true;
  $('chart-box').hidden = true;
  resetGpuFit(false);
  clearStack();
  clearAdapter();
  $('experts-line').replaceChildren();
  $('experts-line').hidden = true;
  $('dominant-parts').replaceChildren();
  $('parts-title').textContent = 'Where the memory goes';
  clearStep();
  $('suggestions').replaceChildren();
  $('suggestions-box').hidden = true;
  clearChart();
}

export function statusOfPretrain(r) {
  const cap = r.capacity_bytes;
  const who = `${r.model.name} on ${r.layout.gpus} × ${r.gpu.name}: `;
  if (!(cap > 0)) {
    return [who, `peak ${fmtGiB(r.peak_bytes)} per GPU; the paper's estimate ${fmtGiB(r.estimate_bytes)} (no capacity given).`];
  }
  const risk = typeof r.oom_probability === 'number'
    ? `; probability of OOM ${probability(r.oom_probability)}, ${marginText(r.margin_bytes)}` : '';
  return [who, verdictWords(r.peak_verdict),
    ` — peak ${fmtGiB(r.peak_bytes)} of ${fmtGiB(cap)} per GPU (${percent(r.peak_bytes / cap)}, the overhead model; ` +
    `fits ${bandText(peakBands, 'fits')}${risk}). `,
    el('span', { className: 'paper-figure' },
      `The paper's estimate: ${fmtGiB(r.estimate_bytes)} (${percent(r.usage_fraction)}, ${words(r.verdict)} by its bands; ` +
      `fits ${bandText(paperBands, 'fits')}).`),
    ...(r.suggestions?.length ? [` ${r.suggestions.length} change${r.suggestions.length > 1 ? 's' : ''} predicted to fit below.`] : [])];
}

export function runPretrain(problem) {
  const req = pretrainRequest(state);
  const t0 = performance.now();
  const d = answerUnless(problem, () => req);
  timings.pretrainMs = performance.now() - t0;
  document.body.classList.toggle('invalid', !d.ok);
  if (!d.ok) {
    showErrors(d);
    clearPretrain();
    setStatus('error', [errorStatus(d)]);
  } else {
    lastPretrain = d;
    renderPretrain(d);
    setStatus('result', statusOfPretrain(d), d.peak_verdict);
    if (timings.firstResultMs == null) {
      timings.firstResultMs = performance.now();
      performance.mark('memest-first-result');
      // the frame that paints it
      requestAnimationFrame(() => { timings.firstPaintMs = performance.now(); });
    }
  }
  scheduleGrid(problem ? null : req);
  // "Which GPUs would fit this" answers another request: dropped; it can be asked when this one
  // has an answer
  resetGpuFit(d.ok);
}
