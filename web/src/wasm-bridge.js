// The bridge to libmemest (WebAssembly, ../wasm/memest.mjs): loads the module, holds what the
// page reads of it once (the verdict bands, the model and GPU presets) and asks it for answers
// (memest.answer calls memest_request_json). The form's own problems found before asking
// (formProblems) are answered as the library's errors are: {ok: false, error: {code, field,
// message}}, with every one of them in `errors`.
import { createMemest } from '@memest';

/** @type {import('../../wasm/memest.mjs').Memest} */
export let memest;
/** The paper's bands on the estimate ({fits: 0.8, tight: 1.0}) and the headline verdict's bands
 *  on the overhead model's peak ({fits: 0.95, tight: 1.0}): upper bounds, fractions of capacity. */
export let paperBands = {};
export let peakBands = {};
export let gpuPresets = [];
export let modelPresets = [];  // the library's model presets (num_experts: whether a preset is MoE)

let loading = null;

/** Starts loading the WebAssembly module (as soon as the script runs); returns its promise. */
export function loadLibrary() {
  loading = createMemest();
  return loading;
}

/** Awaits the module loadLibrary() started, then reads the verdict bands of it. */
export async function libraryReady() {
  memest = await loading;
  performance.mark('memest-library-ready');
  paperBands = memest.verdictBands();
  peakBands = memest.peakVerdictBands();
  return memest;
}

/** Reads the library's model and GPU presets (its presets mode). */
export function loadPresets() {
  modelPresets = memest.models();
  gpuPresets = memest.gpus();
}

/** The library's answer to request(), or, when the form cannot make a request (`problems`: the
 *  list main.js makes, or null), those problems as an error answer without asking the library:
 *  the first in `error`, all of them in `errors`. */
export function answerUnless(problems, request) {
  return problems ? { ok: false, error: problems[0], errors: problems } : memest.answer(request());
}
