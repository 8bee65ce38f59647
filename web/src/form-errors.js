// The library's errors next to the field they name: one slot (err-<id>) per control, and
// "general" for a field the active tab hides or has no control for; the inputs concerned are
// marked aria-invalid. The messages are the library's (or formProblem's), shown as they are.
import { inputForField, BUCKETS, POLICY, DDP_ONE } from './state.js';
import { state } from './page-state.js';
import { $ } from './dom.js';

const ERROR_SLOTS = ['model', 'gpu', 'gpus', 'tp', 'cp', 'pp', 'vpp', 'ep', 'etp',
  'first-stage-layers', 'last-stage-layers', 'pipeline-layout', 'zero', 'sp', 'seq',
  'mbs', 'gbs', 'recompute', 'flash', 'ft-method', 'ft-batch', 'ft-tp', 'ft-gc', 'framework',
  'optimizer', 'param-dtype', 'grad-dtype', 'loss', 'recompute-every', 'opt-in-backward', 'fp8',
  'compile', 'moe-dispatcher', 'attention-kernel', 'comm-overlap', 'offload-optimizer', 'offload-params', 'offload-activations', 'adapter-type', 'lora-rank',
  'lora-alpha', 'lora-dropout', 'lora-targets', 'adapter-dtype', 'double-quant', 'quantize-lm-head',
  ...POLICY.map((p) => p.id), 'search-max-oom', 'search-fp8', 'search-compile', ...BUCKETS.map((b) => b.id), DDP_ONE.id, 'general'];
const SLOT_INPUTS = { model: ['model-preset', 'model-config'], gpu: ['gpu-preset', 'gpu-memory', 'gpu-profile'] };

export function clearErrors() {
  for (const slot of ERROR_SLOTS) $(`err-${slot}`).textContent = '';
  for (const node of document.querySelectorAll('[aria-invalid="true"]')) node.removeAttribute('aria-invalid');
}

export function showError(error) {
  let slot = inputForField(error.field);
  // a field whose control the active tab hides: say it where it can be read
  if (slot !== 'general' && $(`err-${slot}`).closest('[hidden]')) slot = 'general';
  $(`err-${slot}`).textContent = error.message;
  const ids = SLOT_INPUTS[slot] ?? (slot === 'general' ? [] : [slot]);
  for (const id of ids) {
    if (id === 'model-config' && state.m !== 'custom') continue;
    if (id === 'gpu-profile' && state.g !== 'profile') continue;
    $(id).setAttribute('aria-invalid', 'true');
  }
}
