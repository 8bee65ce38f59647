// memest.mjs — the JavaScript face of libmemest's WebAssembly build.
//
// A thin bridge over the C API's JSON entry point (memest_request_json): every number comes from
// the same C++ core as the CLI and the other bindings; nothing here re-implements a formula.
//
//   import { createMemest } from './memest.mjs';
//   const memest = await createMemest();            // browser: fetches memest_core.wasm
//   const r = memest.request({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb' });
//   r.estimate_bytes / 2 ** 30                       // GiB, the 4D paper's Eq. 18
//
// In Node, pass the module bytes (Debian's emscripten 3.1.6 loader cannot read files from an ES
// module there): createMemest({ wasmBinary: fs.readFileSync(wasmPath) }), or use ./node.mjs.
import createMemestCore from './build/memest_core.mjs';

/**
 * @typedef {object} MemestErrorInfo
 * @property {string} code     status name, e.g. "invalid_argument", "unknown_preset"
 * @property {string} field    the request field at fault, e.g. "parallel.tp" ("" when none)
 * @property {string} message  the library's message, naming the field
 */

/**
 * @typedef {object} ModelPreset
 * @property {string} id
 * @property {string} name
 * @property {'llama'|'gpt'} family
 * @property {number} num_parameters
 * @property {number} num_hidden_layers
 * @property {number} hidden_size
 * @property {number} num_attention_heads
 * @property {number} num_key_value_heads
 * @property {number} intermediate_size
 * @property {number} vocab_size
 * @property {number} max_position_embeddings
 * @property {boolean} tie_word_embeddings
 */

/**
 * @typedef {object} GpuPreset
 * @property {string} id
 * @property {string} name
 * @property {number} memory_bytes
 * @property {number} gpus_per_node
 * @property {number} peak_bf16_tflops
 * @property {number} context_bytes
 * @property {number} page_bytes
 * @property {string} [memory_source] (1.6) where memory_bytes comes from: since 1.6 the presets
 *                                    hold the usable capacity torch.cuda.mem_get_info reports
 * @property {number} [nominal_gib]    (1.6) the card's nominal capacity, GiB
 */

/**
 * A request of the JSON contract (docs/json-reference.md): mode, model, gpu,
 * parallel, training, finetune, search ...
 * @typedef {Record<string, any>} MemestRequest
 */

/**
 * The training block of a pretrain or search request (docs/json-reference.md): the
 * fields below are those of the training stack and its precision policy; the library checks
 * every value and combination and names the field it refuses. Left out, a field takes the
 * library's default.
 * @typedef {object} MemestTraining
 * @property {number} [seq_len]
 * @property {number} [micro_batch]
 * @property {number} [global_batch]
 * @property {string} [recompute]          a name of enums().recompute
 * @property {string} [framework]          a name of enums().framework ("fsdp1": FSDP1's
 *                                         FlatParameters, 1.6)
 * @property {string} [optimizer]          a name of enums().optimizer ("adamw_foreach",
 *                                         "paged_adamw_32bit": 1.6)
 * @property {'fp32'|'bf16'|'fp16'} [reduce_dtype] (1.6) FSDP's MixedPrecisionPolicy reduce_dtype
 *                                         (fsdp / fsdp1 only; default: the gradient dtype)
 * @property {boolean} [loss_parallel]     (1.6) default true; false: under tp > 1 the logits are
 *                                         gathered to the full vocabulary before the loss
 *                                         (torchtitan without loss_parallel; refused under megatron)
 * @property {boolean} [autocast]          (1.6) torch.autocast on or off (default: the stack's;
 *                                         refused under megatron)
 * @property {boolean} [fp8_all_gather]    (1.6) torchao's float8 all-gather (fsdp, fp8, zero 2/3)
 * @property {boolean} [no_sync]           (1.6) keep unsharded gradients over accumulation
 *                                         (fsdp / fsdp1; default: on under fsdp1, else off)
 * @property {boolean} [ddp]               (1.7) DistributedDataParallel around the model: true
 *                                         also wraps one GPU (its buckets counted), false is
 *                                         one GPU unwrapped; default: when data-parallel > 1
 *                                         (pytorch, fsdp at zero 0-1; echoed "default"/true/false)
 * @property {boolean} [logits_held]       (1.6) the loop keeps the model's output through
 *                                         backward (refused under megatron)
 * @property {string} [loss]              a name of enums().loss ("chunked_lm_head": LitGPT's
 *                                         128-token LM head chunks, "chunked_linear":
 *                                         torchtitan's ChunkedLossWrapper, 1.9; "flash_attn":
 *                                         flash-attn's CrossEntropyLoss, llm-foundry's, 1.10)
 * @property {number} [loss_chunks]       (1.9) chunks of a chunked loss ("chunked",
 *                                         "chunked_lm_head", "chunked_linear"); 0 or left out:
 *                                         the loss's own default (8; LitGPT ceil(seq_len / 128));
 *                                         echoed as the chunks in effect, 0 for another loss
 * @property {boolean} [fsdp_use_orig_params] (1.9) fsdp1 + a lora adapter in param_dtype, zero
 *                                         2/3: each block's FlatParameter mixes its frozen
 *                                         weights and the adapters, so the frozen weights get a
 *                                         gradient too (LitGPT's Fabric FSDPStrategy)
 * @property {boolean} [fp4]               (1.9) NVFP4 linears (Transformer Engine, Megatron's
 *                                         --fp4-format e2m1): framework megatron, fp8 off, a GPU
 *                                         whose profile has fp4 = 1 (B200, GB200; the gpu
 *                                         object's fp4 and peak_fp4_tflops)
 * @property {string[]} [recompute_modules] (1.11) Megatron-Core's --recompute-modules, what
 *                                         recompute "selective" checkpoints under megatron: names
 *                                         of enums().recompute_module (default ["core_attn"]);
 *                                         echoed as the modules in effect ([] unless selective
 *                                         under megatron)
 * @property {boolean} [use_liger_kernel]  (1.12) Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU
 *                                         kernels in the Hugging Face blocks (frameworks pytorch,
 *                                         deepspeed, fsdp, fsdp1): fewer saved activations;
 *                                         refused under megatron, for LayerNorm models and
 *                                         hybrids; echoed in every pretraining response
 * @property {string} [master_weights]    (1.15) the master copy of the weights the optimizer
 *                                         updates, a name of the C enumeration
 *                                         memest_master_weights (the fields mode's choices for
 *                                         training.master_weights): "auto"
 *                                         (default: the framework's; fp32 beside 16-bit weights
 *                                         under megatron and deepspeed), "fp32", "bf16", "fp16",
 *                                         "remainder" (the 16 bits an fp32 value has beyond bf16
 *                                         weights: Megatron-Core store_param_remainders, Apex
 *                                         DistributedFusedAdam), "none" (the optimizer steps the
 *                                         weights themselves); Megatron-Core --main-params-dtype,
 *                                         Apex store_params. Only frameworks megatron and
 *                                         deepspeed take a value other than "auto"; needs K
 *                                         derived (refused beside optimizer_bytes); echoed as the
 *                                         master in effect ("fp32" for a default megatron request)
 * @property {'fp32'|'bf16'|'fp16'|'fp8'} [optimizer_state_dtype] (1.15) the dtype of the
 *                                         optimizer's moments (Megatron-Core --exp-avg-dtype,
 *                                         NeMo optim.dtype); left out: the optimizer's own.
 *                                         Refused with adamw_8bit, paged_* and sgd, and beside
 *                                         optimizer_bytes; echoed as the dtype in effect ("fp32"
 *                                         for a default megatron request)
 * @property {{type: string, quantize_lm_head?: boolean, [key: string]: any}} [adapter]
 *                                         LoRA / QLoRA; quantize_lm_head (1.6): qlora with an
 *                                         untied head, the LM head in NF4 too
 */

/**
 * The search block of a search request.
 * @typedef {object} MemestSearchOptions
 * @property {number} [top]
 * @property {number} [max_oom_probability] (1.6) in (0, 1]: layouts likelier than this to run
 *                                          out of memory are pruned as "oom" (default: the enums
 *                                          mode's search_max_oom_probability,
 *                                          {@link Memest#searchMaxOomProbability})
 * @property {boolean[]} [fp8]             (1.5) fp8 settings tried at every layout (false / true);
 *                                          left out: the training block's fp8
 * @property {string[]} [compile]          (1.5) torch.compile settings tried at every layout
 *                                          (names of enums().compile); left out: the training
 *                                          block's compile. Each result says which it used
 *                                          ("fp8": bool, "compile": name)
 */

/**
 * A successful response ({ok: true, ...}); its fields depend on the mode.
 * @typedef {Record<string, any> & {ok: true, mode: string}} MemestResponse
 */

/**
 * The figures a user compares with their logs, of one stage or of the peak stage (1.6).
 * @typedef {object} MemestMeasuredFigures
 * @property {number} torch_max_memory_allocated_bytes what torch.cuda.max_memory_allocated()
 *                                                     reports (the CUDA context left out)
 * @property {number} torch_max_memory_reserved_bytes  torch.cuda.max_memory_reserved()
 * @property {number} nvidia_smi_bytes                 what nvidia-smi shows for the process:
 *                                                     reserved + context + paged memory
 */

/**
 * One pipeline stage of a pretrain response (a selection of its fields).
 * @typedef {MemestMeasuredFigures & Record<string, any> & {
 *   stage: number, peak_bytes: number,
 *   overheads: Record<string, number> & {optimizer_step_bytes?: number},
 *   stack: Record<string, number> & {unsharded_root_bytes?: number},
 * }} MemestStage
 */

/**
 * A pretrain response (mode "pretrain"; a selection of its fields). From 1.6 it states the
 * peak's 90 % band from memest's measured error (enums mode peak_error_sigma), the probability
 * that the real peak exceeds capacity, and the margin left.
 * @typedef {MemestResponse & MemestMeasuredFigures & {
 *   estimate_bytes: number, peak_bytes: number, peak_stage: number, capacity_bytes: number,
 *   verdict: string, peak_verdict: string,
 *   peak_band_bytes: [number, number],
 *   oom_probability: number,
 *   margin_bytes: number,
 *   stages: MemestStage[],
 * }} MemestPretrainResponse
 */

/**
 * One ranked layout of a search response (a selection of its fields).
 * @typedef {Record<string, any> & {
 *   rank: number, layout: Record<string, any>, peak_bytes: number, peak_verdict: string,
 *   oom_probability: number, margin_bytes: number, peak_high_bytes: number,
 * }} MemestSearchEntry
 */

/**
 * A search response (mode "search"): the ranked layouts and the max_oom_probability it ranked
 * them under (1.6).
 * @typedef {MemestResponse & {
 *   results: MemestSearchEntry[], max_oom_probability: number, ranked: number,
 *   candidates: number, pruned: Record<string, number>,
 * }} MemestSearchResponse
 */

/** Thrown by {@link Memest#request} when the library answers {ok: false}. */
export class MemestError extends Error {
  /**
   * @param {MemestErrorInfo} info
   * @param {number} status the C status code (memest_status)
   */
  constructor(info, status) {
    super(info.message || info.code);
    this.name = 'MemestError';
    /** @type {string} */ this.code = info.code;
    /** @type {string} */ this.field = info.field || '';
    /** @type {number} */ this.status = status;
  }
}

/**
 * The library's enumerations (its "enums" mode): names by value, as requests and responses use
 * them.
 * @typedef {object} MemestEnums
 * @property {string[]} status            "ok", "invalid_argument", ... (index: memest_status)
 * @property {string[]} family            "llama", "gpt"
 * @property {string[]} verdict           "fits", "tight", "oom", "unknown"
 * @property {string[]} recompute         "none", "selective", "full", "op_selective"
 * @property {string[]} activation_model  "auto", "llama", "gpt"
 * @property {string[]} prune_reason      "oom", "tp_heads", ...
 * @property {string[]} finetune_method   "cdp", "zero3", "tp", "dp+tp", "cpu_offload", "auto"
 * @property {string[]} framework         "megatron", "fsdp", "deepspeed", "pytorch", "fsdp1"
 * @property {string[]} loss              "auto", "fused", "unfused", "chunked", "linear_fused",
 *                                        "unfused_16bit", "chunked_lm_head", "chunked_linear",
 *                                        "flash_attn"
 * @property {string[]} optimizer         "adam", "adamw", "adamw_8bit", "paged_adamw_8bit", ...,
 *                                        "adamw_foreach", "paged_adamw_32bit"
 * @property {string[]} adapter           "none", "lora", "qlora"
 * @property {string[]} lora_target       "q_proj", ..., "embed_tokens"
 * @property {string[]} compile           "none", "all", "model", "loss": what torch.compile
 *                                        compiles (training.compile takes one of these or a bool:
 *                                        true = "all")
 * @property {string[]} overlap           "dp", "tp", "pp", "ep": training.comm_overlap's names
 * @property {string[]} step_part         "compute", "recompute", ...: the step's parts
 * @property {string[]} moe_dispatcher    "alltoall", "deepep": training.moe_dispatcher
 * @property {string[]} attention_kernel  "auto", ...: training.attention_kernel
 * @property {string[]} recompute_module  (1.11) "core_attn", "moe_act", "layernorm", ...:
 *                                        training.recompute_modules
 * @property {string[]} [master_weights] (1.15) "auto", "fp32", "bf16", "fp16", "remainder",
 *                                        "none": training.master_weights (MEMEST_ENUM_MASTER_WEIGHTS;
 *                                        present once the library's enums mode lists the kind)
 */

/**
 * What the library's "enums" mode answers: the enumerations, the paper's verdict bands (on the
 * estimate), the headline verdict's bands (on the overhead model's peak), the measured spread
 * of the peak's error and the search's default max_oom_probability.
 * @typedef {object} MemestTables
 * @property {MemestEnums} enums
 * @property {Record<string, number>} verdict_bands
 * @property {Record<string, number>} peak_verdict_bands
 * @property {number} peak_error_sigma            (1.6) standard deviation of ln(measured /
 *                                                predicted peak), MEMEST_PEAK_ERROR_SIGMA
 * @property {number} search_max_oom_probability  (1.6) the search's default max_oom_probability
 */

/** The library, loaded. Create with {@link createMemest}. */
export class Memest {
  /** @param {any} core the Emscripten module */
  constructor(core) {
    /** @private */ this.core = core;
    /** @private @type {{models: ModelPreset[], gpus: GpuPreset[]} | null} */ this.presets = null;
    /** @private @type {MemestTables | null} */
    this.tables = null;
  }

  /**
   * The error document for a failure the wrapper finds itself (the status number by the
   * library's name for it).
   * @private
   * @param {string} code @param {string} field @param {string} message
   */
  ownError(code, field, message) {
    let status = -1;
    try {
      status = this.enums().status.indexOf(code);
    } catch { /* out of memory: the name alone */ }
    return { ok: false, status, error: { code, field, message } };
  }

  /**
   * Answers a request without throwing: the parsed {ok: true, ...} or {ok: false, error} document.
   * @param {MemestRequest | string} request an object, or JSON text (sent as is)
   * @returns {{ok: boolean, status: number, [key: string]: any}}
   */
  answer(request) {
    const core = this.core;
    const text = typeof request === 'string' ? request : JSON.stringify(request);
    const nul = text.indexOf('\0');
    if (nul >= 0) {
      // The C entry point reads a NUL-terminated string: the request would be cut short there.
      const offset = core.lengthBytesUTF8(text.slice(0, nul));
      return this.ownError('parse_error', '',
        `request is not valid JSON: a NUL byte at offset ${offset} (a C string ends there)`);
    }
    const size = core.lengthBytesUTF8(text) + 1;
    const input = core._malloc(size);
    const outSlot = core._malloc(4);
    if (!input || !outSlot) {
      core._free(input);
      core._free(outSlot);
      const doc = this.ownError('no_memory', '', 'out of memory');
      throw new MemestError(doc.error, doc.status);
    }
    try {
      core.stringToUTF8(text, input, size);
      core.HEAPU32[outSlot >> 2] = 0;
      const status = core._memest_request_json(input, outSlot);
      const out = core.HEAPU32[outSlot >> 2];
      if (!out) {
        const message = core.UTF8ToString(core._memest_last_error());
        throw new MemestError({ code: core.UTF8ToString(core._memest_status_name(status)),
                                field: core.UTF8ToString(core._memest_last_error_field()),
                                message }, status);
      }
      const json = core.UTF8ToString(out);
      core._memest_string_free(out);
      const doc = JSON.parse(json);
      return Object.assign(doc, { status });
    } finally {
      core._free(input);
      core._free(outSlot);
    }
  }

  /**
   * Answers a request: the response object, or throws a {@link MemestError} carrying the
   * library's code, field and message when it answers {ok: false}.
   * @param {MemestRequest | string} request
   * @returns {MemestResponse}
   */
  request(request) {
    const doc = this.answer(request);
    if (!doc.ok) throw new MemestError(doc.error, doc.status);
    delete doc.status;
    return /** @type {MemestResponse} */ (doc);
  }

  /**
   * Estimates a whole table of pretraining layouts in one call (~100x faster than one
   * request() per cell). `base` is a pretrain request, read as the pretrain mode reads it, whose
   * model, gpu, parallel.{vpp, sp, zero, uneven_pipeline, ep, etp, first_stage_layers,
   * last_stage_layers, pipeline_layout} and training block apply to every
   * cell; each cell gives [gpus, tp, cp, pp, micro_batch] (the base's own are ignored).
   * Throws a {@link MemestError} when the base model or GPU is bad; a bad cell is
   * {ok: false, error} in its place. With `{messages: false}`, a cell whose layout the library's
   * layout check refuses is {ok: false, issue} without the message (much faster: no C++
   * exception); ask for that one cell again to get the message.
   * @param {MemestRequest} base
   * @param {Array<[number, number, number, number, number]>} cells
   * @param {{messages?: boolean}} [options]
   * @returns {Array<{ok: true, estimate_bytes: number, peak_bytes: number, capacity_bytes: number, usage_fraction: number,
   *   oom_probability: number, margin_bytes: number, verdict: string, peak_verdict: string}
   *   | {ok: false, error?: MemestErrorInfo, issue?: string}>}
   */
  pretrainTable(base, cells, options = {}) {
    const messages = options.messages ?? true;
    const doc = this.callText('_memest_wasm_pretrain_table', JSON.stringify({ ...base, cells, messages }));
    if (!doc.ok) throw new MemestError(doc.error, this.enums().status.indexOf(doc.error.code));
    return doc.cells;
  }

  /**
   * Calls a `char *f(const char *)` helper of wasm/src and parses its JSON answer.
   * @private
   * @param {string} fn
   * @param {string} text
   */
  callText(fn, text) {
    const core = this.core;
    const size = core.lengthBytesUTF8(text) + 1;
    const input = core._malloc(size);
    const noMemory = () => {
      const doc = this.ownError('no_memory', '', 'out of memory');
      return new MemestError(doc.error, doc.status);
    };
    if (!input) throw noMemory();
    try {
      core.stringToUTF8(text, input, size);
      const out = core[fn](input);
      if (!out) throw noMemory();
      const json = core.UTF8ToString(out);
      core._memest_string_free(out);
      return JSON.parse(json);
    } finally {
      core._free(input);
    }
  }

  /** @private */
  loadPresets() {
    if (!this.presets) {
      // The library's "presets" mode: the same list `memest models` and `memest gpus` print.
      const response = this.request({ mode: 'presets' });
      this.presets = { models: response.models, gpus: response.gpus };
    }
    return /** @type {{models: ModelPreset[], gpus: GpuPreset[]}} */ (this.presets);
  }

  /** @private */
  loadTables() {
    if (!this.tables) {
      // The library's "enums" mode: every enumeration's names and the verdict bands.
      const response = this.request({ mode: 'enums' });
      this.tables = { enums: response.enums, verdict_bands: response.verdict_bands,
                      peak_verdict_bands: response.peak_verdict_bands,
                      peak_error_sigma: response.peak_error_sigma,
                      search_max_oom_probability: response.search_max_oom_probability };
    }
    return /** @type {MemestTables} */ (this.tables);
  }

  /**
   * The library's enumerations, names by value (a copy): `enums().recompute` is
   * ["none", "selective", "full"], `enums().status[3]` the name of status 3.
   * @returns {MemestEnums}
   */
  enums() {
    return /** @type {MemestEnums} */ (structuredClone(this.loadTables().enums));
  }

  /**
   * The upper bound of each bounded verdict band as a fraction of capacity, e.g.
   * {fits: 0.8, tight: 1.0}; above the last, the verdict is "oom".
   * @returns {Record<string, number>}
   */
  verdictBands() {
    return { ...this.loadTables().verdict_bands };
  }

  /**
   * The bands of the headline verdict (`peak_verdict`: the overhead model's peak against
   * capacity), as {@link Memest#verdictBands} gives the paper's: e.g. {fits: 0.89, tight: 1.0}
   * (from 1.6 fits is derived from the measured error: a probability of OOM of at most 5 %).
   * @returns {Record<string, number>}
   */
  peakVerdictBands() {
    return { ...this.loadTables().peak_verdict_bands };
  }

  /**
   * The spread of memest's peak error as the library measured it (the standard deviation of
   * ln(measured / predicted), MEMEST_PEAK_ERROR_SIGMA): the width of every response's
   * peak_band_bytes and the source of its oom_probability.
   * @returns {number}
   */
  peakErrorSigma() {
    return this.loadTables().peak_error_sigma;
  }

  /**
   * The search's default max_oom_probability (MEMEST_SEARCH_MAX_OOM_PROBABILITY): a layout is
   * ranked only when its probability of running out of memory is at most this.
   * @returns {number}
   */
  searchMaxOomProbability() {
    return this.loadTables().search_max_oom_probability;
  }

  /** The built-in model presets, in the library's order. @returns {ModelPreset[]} */
  models() {
    return this.loadPresets().models.map((m) => ({ ...m }));
  }

  /** The built-in GPU presets, in the library's order. @returns {GpuPreset[]} */
  gpus() {
    return this.loadPresets().gpus.map((g) => ({ ...g }));
  }

  /** The library's version string, e.g. "1.2.0". @returns {string} */
  version() {
    return this.core.UTF8ToString(this.core._memest_version_string());
  }

  /** MAJOR*10000 + MINOR*100 + PATCH. @returns {number} */
  versionNumber() {
    return this.core._memest_version_number() >>> 0;
  }
}

/**
 * Loads the WebAssembly module.
 * @param {{wasmBinary?: ArrayBuffer | Uint8Array, locateFile?: (path: string, prefix: string) => string}} [options]
 *   wasmBinary: the bytes of memest_core.wasm (required in Node); locateFile: where to fetch it.
 * @returns {Promise<Memest>}
 */
export async function createMemest(options = {}) {
  /** @type {Record<string, any>} */
  const moduleArgs = {};
  if (options.wasmBinary) moduleArgs.wasmBinary = options.wasmBinary;
  if (options.locateFile) moduleArgs.locateFile = options.locateFile;
  const core = await createMemestCore(moduleArgs);
  return new Memest(core);
}

/** Bytes per GiB (2^30): the unit of the 4D paper's tables. */
export const GiB = 1024 ** 3;
