// The library's errors next to the field they name: one slot (err-<id>) per control, and
// "general" for a field the active tab hides or has no control for; the inputs concerned are
// marked aria-invalid. The messages are the library's (or the form's own, formProblems and
// emptyFieldProblems), shown as they are; the form's own problems are shown all at once.
import { inputForField, BUCKETS, POLICY, DDP_ONE, FIELDS_19, RECOMPUTE_MODULES } from './state.js';
import { state } from './page-state.js';
import { $ } from './dom.js';

const ERROR_SLOTS = ['model', 'gpu', 'gpus', 'tp', 'cp', 'pp', 'vpp', 'ep', 'etp',
  'first-stage-layers', 'last-stage-layers', 'pipeline-layout', 'zero', 'sp', 'seq',
  'mbs', 'gbs', 'recompute', 'flash', 'ft-method', 'ft-batch', 'ft-tp', 'ft-gc', 'framework',
  'optimizer', 'param-dtype', 'grad-dtype', 'loss', 'recompute-every', 'opt-in-backward', 'fp8',
  'compile', 'moe-dispatcher', 'attention-kernel', 'comm-overlap', 'offload-optimizer', 'offload-params', 'offload-activations', 'adapter-type', 'lora-rank',
  'lora-alpha', 'lora-dropout', 'lora-targets', 'adapter-dtype', 'double-quant', 'quantize-lm-head',
  ...POLICY.map((p) => p.id), 'search-max-oom', 'search-fp8', 'search-compile', ...BUCKETS.map((b) => b.id), DDP_ONE.id,
  ...FIELDS_19.map((f) => f.id), RECOMPUTE_MODULES.id, 'general'];
const SLOT_INPUTS = { model: ['model-preset', 'model-config', 'hf-id'], gpu: ['gpu-preset', 'gpu-memory', 'gpu-profile'] };

export function clearErrors() {
  for (const slot of ERROR_SLOTS) $(`err-${slot}`).textContent = '';
  for (const node of document.querySelectorAll('[aria-invalid="true"]')) node.removeAttribute('aria-invalid');
}

export function showError(error) {
  let slot = inputForField(error.field);
  // a field whose control the active tab hides: say it where it can be read
  if (slot !== 'general' && $(`err-${slot}`).closest('[hidden]')) slot = 'general';
  const node = $(`err-${slot}`);
  node.textContent = node.textContent ? `${node.textContent} ${error.message}` : error.message;
  const ids = SLOT_INPUTS[slot] ?? (slot === 'general' ? [] : [slot]);
  for (const id of ids) {
    if (id === 'model-config' && state.m !== 'custom') continue;
    if (id === 'hf-id' && !state.hf) continue;
    if (id === 'gpu-profile' && state.g !== 'profile') continue;
    $(id).setAttribute('aria-invalid', 'true');
  }
}

/** Every error of an answer next to its field: the form's own problems all at once (`errors`),
 *  the library's one refusal (it stops at the first field it refuses). */
export function showErrors(d) {
  for (const error of d.errors ?? [d.error]) showError(error);
}

/** The status line of a refused answer: "Not computed: " and the message, or the count and
 *  every message when the form has several problems. */
export function errorStatus(d) {
  const all = d.errors ?? [d.error];
  if (all.length === 1) return `Not computed: ${all[0].message}`;
  return `Not computed: ${all.length} problems: ${all.map((e) => e.message).join('; ')}`;
}
