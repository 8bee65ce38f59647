// The form: the inputs <-> the page's state (writeForm, readForm, the FORM map of state keys to
// input ids), which controls each tab shows (syncFields), the option lists filled from the
// library's enums and presets, and the form's own events (typing, config.json and device-profile
// files, drag and drop). The inputs' values travel to the library as state.js makes them.
import { GiB } from '@memest';
import {
  pretrainRequest, BUCKETS, bucketApplies, POLICY, policyApplies, DDP_ONE, ddpApplies, FIELDS_19, field19Applies,
  fieldOfState, RECOMPUTE_MODULES, recomputeModulesApply,
} from './state.js';
import { state, setState, markLayoutSet, update, scheduleUpdate } from './page-state.js';
import { memest, gpuPresets, modelPresets } from './wasm-bridge.js';
import { timings } from './probe.js';
import { $, el, fillSelect } from './dom.js';

/** The dtype names a request's param_dtype / grad_dtype take (README "JSON request"). */
const DTYPES = ['bf16', 'fp16', 'fp32', 'fp8'];
/** Those the optimizer's moments take (training.optimizer_state_dtype, 1.15). */
const STATE_DTYPES = ['fp32', 'bf16', 'fp16', 'fp8'];
/** Those FSDP's reduce_dtype takes (training.reduce_dtype). */
const REDUCE_DTYPES = ['fp32', 'bf16', 'fp16'];

/** The state key of each input (state.js DEFAULTS) and the input's id. */
const FORM = {
  m: 'model-preset', cfg: 'model-config', g: 'gpu-preset', mem: 'gpu-memory', gp: 'gpu-profile', gpus: 'gpus',
  tp: 'tp', cp: 'cp', pp: 'pp', vpp: 'vpp', zero: 'zero', sp: 'sp', seq: 'seq', mbs: 'mbs',
  ep: 'ep', etp: 'etp', fsl: 'first-stage-layers', lsl: 'last-stage-layers', pl: 'pipeline-layout',
  gbs: 'gbs', rc: 'recompute', fa: 'flash', top: 'search-top',
  fm: 'ft-method', fb: 'ft-batch', ftp: 'ft-tp', fgc: 'ft-gc',
  fw: 'framework', pd: 'param-dtype', gd: 'grad-dtype', opt: 'optimizer', oib: 'opt-in-backward',
  rce: 'recompute-every', loss: 'loss', fp8: 'fp8', cmp: 'compile', oo: 'offload-optimizer',
  op: 'offload-params', oa: 'offload-activations', md: 'moe-dispatcher', ak: 'attention-kernel',
  co: 'comm-overlap',
  ...Object.fromEntries(BUCKETS.map((b) => [b.key, b.id])),
  [DDP_ONE.key]: DDP_ONE.id,
  ...Object.fromEntries(FIELDS_19.map((f) => [f.key, f.id])),
  ...Object.fromEntries(POLICY.map((p) => [p.key, p.id])),
  ad: 'adapter-type', lr: 'lora-rank', la: 'lora-alpha', ldo: 'lora-dropout', adt: 'adapter-dtype',
  dq: 'double-quant', qlh: 'quantize-lm-head', moop: 'search-max-oom', rcp: 'recipe',
};

/** The LoRA target checkboxes (one per lora_target name of the library), as the state's comma
 *  list `lt`, in the library's order. */
const targetBoxes = () => [...document.querySelectorAll('#lora-targets input[type="checkbox"]')];

/** The recompute module checkboxes (one per recompute_module name of the library, in its
 *  order; the first, core_attn, is Megatron's default) as the state's `rcm`: '' when exactly the
 *  default is checked, 'none' when none is, else the comma list. */
const moduleBoxes = () => [...document.querySelectorAll(`#${RECOMPUTE_MODULES.id} input[type="checkbox"]`)];

/** The search's stack variants (search.fp8, search.compile): the state key of each checkbox
 *  group, its boxes filled once the library's names are read; a group's checked boxes are the
 *  state's comma list, in the boxes' order (none: '', the form's own setting). */
export const SEARCH_VARIANTS = { sf8: 'search-fp8', scp: 'search-compile' };
export const variantBoxes = (id) => [...document.querySelectorAll(`#${id} input[type="checkbox"]`)];

/** The state with a preset GPU's capacity in `mem` (what the read-only capacity field shows):
 *  a shared link carries `mem` only for a custom GPU, so a state read from a URL holds the
 *  default's (40 GiB) until the preset's is put there. Before the presets are loaded (the first
 *  answer), the state as it is. */
export function withPresetCapacity(s) {
  const g = gpuPresets.find((x) => x.id === s.g);
  return g ? { ...s, mem: String(g.memory_bytes / GiB) } : s;
}

export function writeForm(s) {
  for (const [key, id] of Object.entries(FORM)) {
    const input = $(id);
    if (input.type === 'checkbox') input.checked = s[key] === '1';
    else input.value = s[key];
  }
  const targets = String(s.lt ?? '').split(',');
  for (const box of targetBoxes()) box.checked = targets.includes(box.value);
  const modules = String(s[RECOMPUTE_MODULES.key] ?? '');
  const boxes = moduleBoxes();
  const checked = modules === '' ? boxes.slice(0, 1).map((b) => b.value) : modules.split(',');
  for (const box of boxes) box.checked = checked.includes(box.value);
  for (const [key, id] of Object.entries(SEARCH_VARIANTS)) {
    const names = String(s[key] ?? '').split(',');
    for (const box of variantBoxes(id)) box.checked = names.includes(box.value);
  }
  syncFields(s);
}

function readForm() {
  const s = { ...state };
  for (const [key, id] of Object.entries(FORM)) {
    const input = $(id);
    s[key] = input.type === 'checkbox' ? (input.checked ? '1' : '0') : input.value;
  }
  // before the enums fill the checkboxes, keep the state's list
  const boxes = targetBoxes();
  if (boxes.length) s.lt = boxes.filter((b) => b.checked).map((b) => b.value).join(',');
  const modules = moduleBoxes();
  if (modules.length) {
    const on = modules.filter((b) => b.checked).map((b) => b.value);
    s[RECOMPUTE_MODULES.key] = on.length === 0 ? 'none' : on.length === 1 && on[0] === modules[0].value ? '' : on.join(',');
  }
  for (const [key, id] of Object.entries(SEARCH_VARIANTS)) {
    const group = variantBoxes(id);
    if (group.length) s[key] = group.filter((b) => b.checked).map((b) => b.value).join(',');
  }
  return s;
}

const MODE_NOTES = {
  finetune: 'Fine-tuning reads the model, the GPU, the GPU count, the sequence length and its own options; the pretraining layout is hidden.',
  search: 'The search reads the model, the GPU, the GPU count and the training settings; it chooses tp, cp, pp, vpp, micro-batch and ZeRO itself.',
};

/** Whether the form's model may be a mixture of experts: a preset with experts, or a pasted
 *  config.json (the library reads its expert fields). */
function isMoe(s) {
  if (s.m === 'custom') return true;
  return (modelPresets.find((m) => m.id === s.m)?.num_experts ?? 0) > 0;
}

/** Whether the form's model is a preset whose LM head is tied to its embedding (QLoRA cannot
 *  quantise that head apart). */
function isTiedPreset(s) {
  return modelPresets.find((m) => m.id === s.m)?.tie_word_embeddings === true;
}

/** Shows the field (`<id>-field`) of each entry of a table (state.js POLICY, BUCKETS) that
 *  `applies`, hides the others; returns how many are shown. */
function showApplying(entries, applies) {
  let shown = 0;
  for (const entry of entries) {
    const on = applies(entry);
    $(`${entry.id}-field`).hidden = !on;
    shown += on ? 1 : 0;
  }
  return shown;
}

/** Shows the controls the active tab's request reads (data-modes), and the custom fields. */
export function syncFields(s) {
  $('config-field').hidden = s.m !== 'custom';
  $('gpu-memory').readOnly = s.g !== 'custom';
  $('gpu-memory-field').classList.toggle('derived', s.g !== 'custom');
  $('gpu-memory-field').hidden = s.g === 'profile';
  $('gpu-profile-field').hidden = s.g !== 'profile';
  for (const node of document.querySelectorAll('#inputs [data-modes]')) {
    node.hidden = !node.dataset.modes.split(' ').includes(s.tab);
  }
  $('ft-batch-field').hidden = s.fm === 'auto';
  $('ft-tp-field').hidden = s.fm !== 'dp+tp';
  for (const node of document.querySelectorAll('#lora-fieldset .lora-only')) node.hidden = s.ad === 'none';
  $('double-quant-field').hidden = s.ad !== 'qlora' && s.dq !== '1';
  // the NF4 LM head: QLoRA with an untied head (or a link that sets it: the library says why not)
  $('quantize-lm-head-field').hidden = (s.ad !== 'qlora' || isTiedPreset(s)) && s.qlh !== '1';
  // the precision policy and the loss: only where its framework reads it (state.js POLICY)
  $('policy').hidden = showApplying(POLICY, (p) => policyApplies(p, s)) === 0;
  // the MoE dispatcher: for a preset with experts (the library's presets), or a pasted config
  // (which may have them), or a link that sets it
  $('moe-dispatcher-field').hidden = !isMoe(s) && !s.md;
  // the framework's buffer sizes: only those its framework reads (state.js BUCKETS)
  $('buckets-hint').hidden = showApplying(BUCKETS, (b) => bucketApplies(b, s)) === 0;
  // DDP on one GPU: only where the library reads training.ddp (state.js DDP_ONE)
  $(`${DDP_ONE.id}-field`).hidden = !ddpApplies(s, s.tab === 'search' ? 'search' : 'pretrain');
  // the 1.9 fields (loss chunks, use_orig_params, fp4), 1.12 use_liger_kernel and the 1.15
  // optimizer storage (master weights, moments' dtype), only where the library reads each
  // (state.js FIELDS_19)
  for (const f of FIELDS_19) $(`${f.id}-field`).hidden = !field19Applies(f, s, s.tab === 'search' ? 'search' : 'pretrain');
  // Megatron's recompute modules: under megatron with selective recomputation (state.js
  // RECOMPUTE_MODULES)
  $(`${RECOMPUTE_MODULES.id}-field`).hidden = !recomputeModulesApply(s);
  // the import tab has its own fields (what the launch files leave out): the form is not read
  $('inputs').hidden = s.tab === 'import';
  $('inputs').parentElement.classList.toggle('wide', s.tab === 'import');
  $('mode-note').hidden = !MODE_NOTES[s.tab];
  $('mode-note').textContent = MODE_NOTES[s.tab] ?? '';
}

/**
 * The form's own check of the fields it shows: each `required` input (index.html) of the active
 * tab that is empty (a number input holds '' for text that is not a number) is a problem named
 * as the library names the field, all of them at once. Its value is the library's to check.
 */
export function emptyFieldProblems(s) {
  const problems = [];
  for (const [key, id] of Object.entries(FORM)) {
    const input = $(id);
    if (!input.required || input.readOnly || input.closest('[hidden]')) continue;
    if (String(s[key] ?? '').trim() !== '') continue;
    const field = fieldOfState(key);
    problems.push({ code: 'missing_field', field, message: `${field}: empty (type a number)` });
  }
  return problems;
}

/**
 * Hides the recompute options the library refuses for the form's training stack (op_selective
 * under megatron): each option is asked of the library (one cell of its table, the form's
 * layout); only a refusal naming training.recompute hides it. The option the form holds stays
 * shown, so that its refusal is read next to the field.
 */
export function syncRecomputeOptions(problem) {
  const base = problem ? null : pretrainRequest(state);
  const cell = [state.gpus, state.tp, state.cp, state.pp, state.mbs].map(Number);
  for (const option of $('recompute').options) {
    let refused = false;
    if (base) {
      try {
        const [c] = memest.pretrainTable({ ...base, training: { ...base.training, recompute: option.value } }, [cell]);
        refused = c != null && !c.ok && c.error?.field === 'training.recompute';
      } catch { /* a bad model or GPU: the form says why; keep every option */ }
    }
    const hide = refused && option.value !== state.rc;
    option.hidden = hide;
    option.disabled = hide;
    option.dataset.refused = refused ? '1' : '';
  }
}

/** Fills the form's option lists from the library's enums (its "enums" mode). */
export function fillFormChoices(enums) {
  $('recompute').replaceChildren(...enums.recompute.map((name) => new Option(name, name)));
  // the training stack's choices: the library's names (its enums mode)
  $('framework').replaceChildren(...enums.framework.map((name) => new Option(name, name)));
  $('optimizer').replaceChildren(...enums.optimizer.map((name) => new Option(name, name)));
  $('loss').replaceChildren(...enums.loss.map((name) => new Option(name, name)));
  // what torch.compile compiles: none, all (blocks and loss), model (blocks), loss
  $('compile').replaceChildren(...enums.compile.map((name) => new Option(name, name)));
  // how MoE tokens cross expert-parallel ranks: '' sends none (the library's default, value 0)
  $('moe-dispatcher').replaceChildren(new Option(`default (${enums.moe_dispatcher[0]})`, ''),
    ...enums.moe_dispatcher.map((name) => new Option(name, name)));
  // which attention kernels run: the library's names, its default (auto) first
  $('attention-kernel').replaceChildren(...enums.attention_kernel.map((name) => new Option(name, name)));
  // what the stack overlaps: '' its own default, 'none', or any combination of the library's
  // overlap kinds (value "dp,tp", training.comm_overlap ["dp", "tp"])
  const kinds = enums.overlap;
  const combos = [];
  for (let mask = 1; mask < 1 << kinds.length; ++mask) combos.push(kinds.filter((_, i) => mask & (1 << i)));
  combos.sort((a, b) => a.length - b.length);
  $('comm-overlap').replaceChildren(new Option('default (the stack\'s)', ''), new Option('none', 'none'),
    ...combos.map((c) => new Option(c.join(' + '), c.join(','))));
  // the dtype names the JSON request reads (not an enumeration of the library); '' sends none
  for (const id of ['param-dtype', 'grad-dtype']) {
    $(id).replaceChildren(new Option('default', ''), ...DTYPES.map((name) => new Option(name, name)));
  }
  $('reduce-dtype').replaceChildren(new Option('default (the gradient dtype)', ''),
    ...REDUCE_DTYPES.map((name) => new Option(name, name)));
  // the optimizer's storage (1.15): the library's master_weights names (its default, auto,
  // first: left out of the request) and the moments' dtypes ('' = the optimizer's own)
  $('master-weights').replaceChildren(...enums.master_weights.map((name) => new Option(
    name === 'auto' ? 'auto (the framework\'s)' : name, name)));
  $('optimizer-state-dtype').replaceChildren(new Option('default (the optimizer\'s)', ''),
    ...STATE_DTYPES.map((name) => new Option(name, name)));
  // LoRA / QLoRA: the adapter types and target names are the library's; the adapter dtypes the
  // JSON request's names
  $('adapter-type').replaceChildren(...enums.adapter.map((name) => new Option(name, name)));
  $('adapter-dtype').replaceChildren(new Option('default (fp32; megatron: param dtype)', ''),
    ...DTYPES.map((name) => new Option(name, name)));
  $('lora-targets').replaceChildren(...enums.lora_target.map((name) => el('label', { className: 'check' },
    el('input', { type: 'checkbox', value: name, id: `lora-target-${name}`, name: 'lt' }), ` ${name}`)));
  // what selective recomputation checkpoints under megatron: the library's module names
  $(RECOMPUTE_MODULES.id).replaceChildren(...enums.recompute_module.map((name) => el('label', { className: 'check' },
    el('input', { type: 'checkbox', value: name, id: `recompute-module-${name}`, name: RECOMPUTE_MODULES.key }), ` ${name}`)));
  // the methods a request may name: "auto" (Algorithm 1) first; cpu_offload is only an answer
  const methods = enums.finetune_method.filter((m) => m !== 'cpu_offload');
  fillSelect($('ft-method'), [...methods.filter((m) => m === 'auto'), ...methods.filter((m) => m !== 'auto')]
    .map((m) => ({ value: m, label: m === 'auto' ? 'auto (Algorithm 1)' : m })));
}

/** Fills the model and GPU preset lists (the library's presets mode, loadPresets). */
export function fillPresets() {
  fillSelect($('model-preset'), modelPresets.map((m) => ({
    value: m.id, label: `${m.name} (${(m.num_parameters / 1e9).toFixed(2)} B)`,
  })), 'Custom: config.json…');
  fillSelect($('gpu-preset'), gpuPresets.map((g) => ({
    value: g.id, label: `${g.name} (${(g.memory_bytes / GiB).toFixed(2)} GiB usable)`,
  })), 'Custom capacity…');
  $('gpu-preset').append(new Option('Device profile (calibrate/)…', 'profile'));
}

/** The form's events: any input updates the state (one update a frame); a config.json or a
 *  device profile comes from a file, or a config.json from a drop anywhere on the form. */
export function initForm() {
  const form = $('inputs');
  form.addEventListener('input', (e) => {
    timings.inputAt ??= e.timeStamp;
    let next = readForm();
    if (e.target.id === 'gpu-preset' && next.g !== 'custom') {
      next = withPresetCapacity(next);
      $('gpu-memory').value = next.mem;
    }
    if (e.target.id === 'gpu-preset' && next.g === 'custom') $('gpu-memory').focus();
    if (e.target.id === 'gpu-preset' && next.g === 'profile') $('gpu-profile').focus();
    if (e.target.id === 'model-preset' && next.m === 'custom') $('model-config').focus();
    markLayoutSet(e.target.id);  // tp, cp or pp typed: the user's from now on
    setState(next);
    scheduleUpdate();
  });
  form.addEventListener('submit', (e) => e.preventDefault());

  // config.json by file or drag-and-drop anywhere on the form
  const loadConfigText = (text) => {
    setState({ ...readForm(), m: 'custom', cfg: text });
    writeForm(state);
    update();
  };
  $('config-file').addEventListener('change', async (e) => {
    const f = e.target.files?.[0];
    if (f) loadConfigText(await f.text());
  });
  // a device profile (memest-calibrate's output) by file
  $('gpu-profile-file').addEventListener('change', async (e) => {
    const f = e.target.files?.[0];
    if (!f) return;
    setState({ ...readForm(), g: 'profile', gp: await f.text() });
    writeForm(state);
    update();
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
}
