// The page's state: one flat object, mirrored in the URL (share the exact configuration) and
// turned into the library's JSON requests. No estimate is computed here.

/** The README's default example: Llama-3.1-8B on 8 x A100 40GB, (TP, CP, PP, MBS) = (4, 1, 2, 1).
 *  On a GPU count that layout does not divide, the sizes the user has not set are 1
 *  (fitDefaultLayout), as `memest pretrain` does. */
export const DEFAULTS = Object.freeze({
  m: 'llama-3.1-8b', cfg: '', g: 'a100-40gb', mem: '40', gp: '',
  // a model by its Hugging Face id (hf-config.js: owner/name[@revision]), its config.json
  // fetched from the Hub into cfg; the URL then carries the id, not the config
  hf: '',
  gpus: '8', tp: '4', cp: '1', pp: '2', vpp: '1', zero: '1', sp: '1',
  // expert parallelism (mixture-of-experts models): ep, etp (0 = the same as tp)
  ep: '1', etp: '0',
  // uneven and custom pipelines (1.7): the first and last stage's layers (0 = automatic) and
  // Megatron's --pipeline-model-parallel-layout string ('' = none); a request carries each only
  // when set
  fsl: '0', lsl: '0', pl: '',
  seq: '8192', mbs: '1', gbs: '1024', rc: 'none', fa: '1',
  tab: 'pretrain', top: '10',
  // fine-tuning (LLMem): method, batch per GPU (fixed methods), tp (DP+TP), gradient checkpointing
  fm: 'auto', fb: '1', ftp: '2', fgc: '1',
  // the training stack (README "Training stack"): framework, stored dtypes ('' = the library's
  // default), optimizer, optimizer in backward, recompute every N blocks, loss, fp8, what
  // torch.compile compiles (a memest_compile name; links of before 1.4 carry cmp=1: "all"),
  // offload of the optimizer / parameters / activations. These defaults are the library's own,
  // and a request carries a field only when the form differs from them.
  fw: 'megatron', pd: '', gd: '', opt: 'adam', oib: '0', rce: '1', loss: 'auto', fp8: '0',
  cmp: 'none', oo: '0', op: '0', oa: '0',
  // how MoE layers send tokens between expert-parallel ranks (a memest_moe_dispatcher name; ''
  // = the library's default): the step time when ep spans nodes
  md: '',
  // which attention kernels run (a memest_attention_kernel name; 'auto' = the library's
  // default: megatron fused, the other frameworks flash2): the step's compute on Hopper GPUs
  ak: 'auto',
  // what the stack overlaps with compute: '' = its own default, 'none', or memest_overlap names
  // joined by commas ("dp,tp"): the step time only
  co: '',
  // the framework's buffer sizes (training.buckets, README "Training stack"): '' = the
  // framework's default, which the library holds (a request then carries no such field);
  // gradient_as_bucket_view off unless checked. BUCKETS says which framework reads which.
  bcm: '', gbv: '0', rbs: '', abs: '', pbs: '', mlp: '', ppt: '',
  // DDP around one process (1.7, training.ddp; DDP_ONE says where the library reads it): off
  // ('0', the library's default: DDP wraps the model when data-parallel > 1); '1' also wraps one
  // GPU (torchrun with DDP around one GPU), so its gradient buckets are counted
  ddp: '0',
  // the precision policy and the loss beside the stored dtypes (1.6; POLICY says which framework
  // reads which): FSDP's reduce_dtype ('' = the gradient dtype), loss_parallel (on, the
  // library's default), autocast and no_sync ('' = the stack's default, '1' on, '0' off), fp8
  // all-gather, the logits held through backward
  rd: '', lp: '1', ac: '', fag: '0', ns: '', lh: '0',
  // the 1.9 fields (FIELDS_19 says where the library reads each): the chunks of a chunked loss
  // ('' = the loss's own default), FSDP1 flat parameters that mix frozen weights and LoRA
  // adapters (use_orig_params), NVFP4 linears under Megatron; off / default, as the library's
  lc: '', uop: '0', fp4: '0',
  // Megatron-Core's recompute modules (1.11, training.recompute_modules; RECOMPUTE_MODULES says
  // where the library reads it): '' = Megatron's default (core_attn), left out of the request;
  // else a comma list of the library's recompute_module names; 'none' = none checked (sent as
  // an empty list, which the library refuses saying why)
  rcm: '',
  // Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU in the Hugging Face blocks (1.12,
  // training.use_liger_kernel; FIELDS_19 says where the library reads it): off, as the library's
  lgr: '0',
  // how the optimizer stores what it updates (1.15, FIELDS_19 says where the library reads each):
  // the master copy of the weights (training.master_weights, a master_weights name of the
  // library; 'auto', its default, is left out of the request) and the dtype of the optimizer's
  // moments (training.optimizer_state_dtype; '' = the optimizer's own, left out)
  mw: 'auto', osd: '',
  // LoRA / QLoRA (README "LoRA and QLoRA"): adapter type, rank, alpha, dropout, targets (comma
  // list of the library's lora_target names), adapter dtype, double quantisation. peft's
  // defaults, as the library's; a request carries a field only when the form differs from them.
  ad: 'none', lr: '8', la: '8', ldo: '0', lt: 'q_proj,v_proj', adt: '', dq: '0',
  // QLoRA: the (untied) LM head quantised to NF4 too (LitGPT), off as in the library
  qlh: '0',
  // the library's fine-tuning recipe the form's fields were last set from (recipes.js; '' =
  // none): the request carries the fields themselves, the URL the name too
  rcp: '',
  // the search's largest probability of OOM for a ranked layout: '' = the library's default
  // (its enums mode's search_max_oom_probability), which the request then leaves out
  moop: '',
  // the stack variants the search tries at every layout (search.fp8, search.compile): '' = the
  // form's own fp8 and compile (the request then leaves the field out); else a comma list of
  // fp8 settings ("off,on": [false, true]) or of memest_compile names ("none,all")
  sf8: '', scp: '',
});

/** The compile state as a memest_compile name: the checkbox of before 1.4 wrote '1' (blocks and
 *  loss: "all") and '0' ("none"); a name stays as it is (the library refuses an unknown one). */
export function compileName(value) {
  if (value === '1' || value === true) return 'all';
  if (value === '0' || value === false || value === '' || value == null) return 'none';
  return String(value);
}

/** Reads a state from a URL's hash (#m=...&tp=...): unknown keys ignored, defaults filled. */
export function stateFromHash(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const state = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS)) {
    if (params.has(key)) state[key] = params.get(key);
  }
  state.cmp = compileName(state.cmp);
  for (const key of ['cfg', 'gp']) {  // pasted JSON texts travel compacted and encoded
    if (!state[key]) continue;
    try {
      state[key] = decodeConfig(state[key]);
    } catch {
      state[key] = '';
    }
  }
  return state;
}

/** The hash for a state: only what differs from the defaults, config.json compacted (or the
 *  Hugging Face id it was fetched by). */
export function hashFromState(state) {
  const params = new URLSearchParams();
  for (const [key, def] of Object.entries(DEFAULTS)) {
    const value = state[key] ?? def;
    if (value === def) continue;
    if ((key === 'mem' && state.g !== 'custom') || (key === 'cfg' && (state.m !== 'custom' || state.hf)) ||
        (key === 'hf' && state.m !== 'custom') || (key === 'gp' && state.g !== 'profile')) continue;
    params.set(key, key === 'cfg' || key === 'gp' ? encodeConfig(value) : value);
  }
  const text = params.toString();
  return text ? `#${text}` : '';
}

function encodeConfig(text) {
  let compact = text;
  try {
    compact = JSON.stringify(JSON.parse(text));
  } catch { /* keep the text as typed: the library will name the parse error */ }
  const bytes = new TextEncoder().encode(compact);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function decodeConfig(encoded) {
  const bin = atob(encoded.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** A number input's value as the library should see it: an integer or number when it is one,
 *  else the text itself, so that the library's own type error names the field. */
function num(text) {
  const t = String(text).trim();
  if (t !== '' && Number.isFinite(Number(t))) return Number(t);
  return t;
}

/**
 * Why the form cannot become a request at all, as the library's error documents say it
 * ({code, field, message}): every such problem of the state, in the form's order (none: []).
 * Only the pasted texts are checked here, the config.json and the device profile: text that is
 * not JSON (cut short, say) would otherwise reach the library as a string, which it reads as a
 * preset id ("unknown preset"). Every value is the library's to check, one field at a time.
 */
export function formProblems(state) {
  return [configProblem(state), profileProblem(state)].filter(Boolean);
}

/** The first of formProblems, or null. */
export function formProblem(state) {
  return formProblems(state)[0] ?? null;
}

/** The parallel sizes whose defaults (tp 4, cp 1, pp 2: the README's example on 8 GPUs) give
 *  way on a GPU count they do not divide (fitDefaultLayout). */
export const LAYOUT_KEYS = Object.freeze(['tp', 'cp', 'pp']);

/** The LAYOUT_KEYS a URL's hash sets (a link's layout is the user's). */
export function layoutKeysOfHash(hash) {
  const params = new URLSearchParams(String(hash ?? '').replace(/^#/, ''));
  return LAYOUT_KEYS.filter((k) => params.has(k));
}

/**
 * The state with the layout the form's GPU count can run, as `memest pretrain` chooses it: the
 * LAYOUT_KEYS not in `explicit` (the set the user has set) hold their defaults where tp x cp x
 * pp divides the GPUs, and 1 elsewhere (one GPU: tp = cp = pp = 1); the explicit ones stay as
 * they are (when they do not divide, the library says why). The same object when nothing
 * changes. A default, not a check: the library still checks the layout.
 * @param {Record<string, string>} state
 * @param {Set<string>} explicit
 */
export function fitDefaultLayout(state, explicit) {
  const gpus = Number(state.gpus);
  if (!Number.isInteger(gpus) || gpus < 1) return state;
  const next = { ...state };
  for (const k of LAYOUT_KEYS) if (!explicit.has(k)) next[k] = DEFAULTS[k];
  let rest = gpus;
  for (const k of LAYOUT_KEYS) {
    const size = Number(next[k]);
    rest = Number.isInteger(size) && size >= 1 && rest % size === 0 ? rest / size : NaN;
  }
  if (Number.isNaN(rest)) for (const k of LAYOUT_KEYS) if (!explicit.has(k)) next[k] = '1';
  return LAYOUT_KEYS.every((k) => next[k] === state[k]) ? state : next;
}

/** A pasted device profile (the GPU's "profile" choice) that is not a JSON object. */
function profileProblem(state) {
  if (state.g !== 'profile') return null;
  const text = String(state.gp ?? '');
  if (text.trim() === '') {
    return { code: 'missing_field', field: 'gpu',
      message: 'gpu: paste a device profile (what memest-calibrate writes) or choose a file' };
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { code: 'parse_error', field: 'gpu',
      message: `gpu: the device profile is not valid JSON (${e.message})` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { code: 'wrong_type', field: 'gpu', message: 'gpu: the device profile must be a JSON object ({...})' };
  }
  return null;
}

/** Python's bare Infinity, -Infinity and NaN outside strings, as null: Hugging Face writes
 *  them into config.json (Nemotron-H's "time_step_limit": [0.0, Infinity]) and JSON.parse
 *  refuses them. As the CLI's --config does: a value the library does not read. */
function nonFiniteAsNull(text) {
  const word = /[A-Za-z0-9_.+-]/;
  let out = '';
  for (let i = 0; i < text.length;) {
    if (text[i] === '"') {  // a string, whole, escapes respected
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      j = Math.min(j + 1, text.length);
      out += text.slice(i, j);
      i = j;
      continue;
    }
    const token = (i === 0 || !word.test(text[i - 1]))
      && ['-Infinity', 'Infinity', 'NaN'].find((t) => text.startsWith(t, i)
        && (i + t.length >= text.length || !word.test(text[i + t.length])));
    if (token) {
      out += 'null';
      i += token.length;
    } else {
      out += text[i++];
    }
  }
  return out;
}

/** A pasted config.json as a value: its JSON, where Python's bare Infinity / NaN read as null
 *  (nonFiniteAsNull). Throws JSON.parse's own error for the text as pasted when it is not
 *  JSON either way. */
export function parseConfig(text) {
  try {
    return JSON.parse(text);
  } catch (e) {
    const cleaned = nonFiniteAsNull(text);
    if (cleaned === text) throw e;
    try {
      return JSON.parse(cleaned);
    } catch {
      throw e;
    }
  }
}

function configProblem(state) {
  if (state.m !== 'custom') return null;
  const text = String(state.cfg ?? '');
  if (text.trim() === '') {
    return { code: 'missing_field', field: 'model',
      message: 'model: paste a Hugging Face config.json (or choose a file)' };
  }
  let value;
  try {
    value = parseConfig(text);
  } catch (e) {
    return { code: 'parse_error', field: 'model',
      message: `model: the pasted config.json is not valid JSON (${e.message})` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { code: 'wrong_type', field: 'model',
      message: 'model: the pasted config.json must be a JSON object ({...})' };
  }
  return null;
}

/** The model part of a request: a preset id, or the pasted config.json object (formProblem
 *  says when the text is not one). */
export function modelOf(state) {
  if (state.m !== 'custom') return state.m;
  try {
    return parseConfig(state.cfg);
  } catch {
    return state.cfg;
  }
}

export function gpuOf(state) {
  if (state.g === 'profile') {  // a device profile, passed whole: the library reads its fields
    try {
      return JSON.parse(state.gp);
    } catch {
      return state.gp;
    }
  }
  if (state.g !== 'custom') return state.g;
  return { memory_gib: num(state.mem) };
}

/**
 * The framework buffer sizes of training.buckets: the state key, the request field, the form
 * control's id and the frameworks whose buffers the library computes from it (DDP's buckets:
 * pytorch, and fsdp / fsdp1 at ZeRO 0, which the library runs as DDP; DeepSpeed's: deepspeed). A
 * control is shown, and its field sent, only under those frameworks.
 */
export const BUCKETS = Object.freeze([
  { key: 'bcm', field: 'bucket_cap_mb', id: 'bucket-cap-mb', frameworks: ['pytorch', 'fsdp', 'fsdp1'] },
  { key: 'gbv', field: 'gradient_as_bucket_view', id: 'bucket-view', frameworks: ['pytorch', 'fsdp', 'fsdp1'], flag: true },
  { key: 'rbs', field: 'reduce_bucket_size', id: 'reduce-bucket-size', frameworks: ['deepspeed'] },
  { key: 'abs', field: 'allgather_bucket_size', id: 'allgather-bucket-size', frameworks: ['deepspeed'] },
  { key: 'pbs', field: 'stage3_prefetch_bucket_size', id: 'prefetch-bucket-size', frameworks: ['deepspeed'] },
  { key: 'mlp', field: 'stage3_max_live_parameters', id: 'max-live-parameters', frameworks: ['deepspeed'] },
  { key: 'ppt', field: 'stage3_param_persistence_threshold', id: 'persistence-threshold', frameworks: ['deepspeed'] },
]);

/** Whether the form's framework reads a bucket field (BUCKETS). */
export function bucketApplies(bucket, state) {
  return bucket.frameworks.includes(state.fw ?? DEFAULTS.fw);
}

/** training.buckets of the form: the fields of its framework that the form sets (a number the
 *  library reads as given, or the text itself, so that its type error names the field). */
export function bucketFields(state) {
  const buckets = {};
  for (const b of BUCKETS) {
    if (!bucketApplies(b, state)) continue;
    const v = String(state[b.key] ?? DEFAULTS[b.key]);
    if (b.flag) {
      if (v === '1') buckets[b.field] = true;
    } else if (v.trim() !== '') {
      buckets[b.field] = num(v);
    }
  }
  return Object.keys(buckets).length ? { buckets } : {};
}

/**
 * "DDP on one GPU" (1.7, training.ddp: true): a checkbox of the buckets section. The library
 * reads training.ddp under pytorch, and under fsdp / fsdp1 at ZeRO 0 (DDP replicas; their ZeRO 1
 * shards); a search enumerates ZeRO under fsdp, so there only pytorch's search carries it. It is
 * shown, and sent (true, only when checked), only there; unchecked leaves the field out (the
 * library's default: DDP wraps the model when data-parallel > 1). A bucket size alone no longer
 * wraps one process.
 */
export const DDP_ONE = Object.freeze({ key: 'ddp', field: 'ddp', id: 'ddp-one-gpu', frameworks: ['pytorch', 'fsdp', 'fsdp1'] });

/** Whether the library reads the form's training.ddp: in a pretrain request (mode 'pretrain',
 *  the layouts table's too) or the search's (mode 'search'). */
export function ddpApplies(state, mode = 'pretrain') {
  const fw = state.fw ?? DEFAULTS.fw;
  if (!DDP_ONE.frameworks.includes(fw)) return false;
  if (fw === 'pytorch') return true;
  return mode !== 'search' && String(state.zero ?? DEFAULTS.zero).trim() === '0';
}

/** training.ddp of the form: true when checked where the library reads it, else nothing. */
export function ddpFields(state, mode = 'pretrain') {
  return ddpApplies(state, mode) && (state[DDP_ONE.key] ?? DEFAULTS[DDP_ONE.key]) === '1' ? { ddp: true } : {};
}

/** The losses that chunk the LM head and the loss (1.9, training.loss_chunks applies). */
export const CHUNKED_LOSSES = Object.freeze(['chunked', 'chunked_lm_head', 'chunked_linear']);

/**
 * The request fields of C ABI 1.9, each a control of the training stack shown, and sent, only
 * where the library reads it (as DDP_ONE): the state key, the request field, the control's id,
 * its kind ('int': a number input, '' = the default, left out; 'flag': a checkbox, checked
 * sends true; 'name': a select of names, '' or the default left out) and where it applies (mode 'pretrain' or 'search'):
 *  - loss_chunks: a chunked loss (chunked, chunked_lm_head, chunked_linear);
 *  - fsdp_use_orig_params: framework fsdp1 with a LoRA / QLoRA adapter (pretraining only: the
 *    search takes no adapter); the library checks the dtype and ZeRO stage;
 *  - fp4: framework megatron; the library checks the GPU (fp4) and fp8;
 *  - use_liger_kernel (1.12): every framework but megatron; the library refuses it for
 *    LayerNorm models and hybrids;
 *  - master_weights and optimizer_state_dtype (1.15, kind 'name': a select, the default left
 *    out): the frameworks of OPTIMIZER_STORAGE, megatron and deepspeed (the library refuses a
 *    master under the others; it checks the optimizer and the dtypes).
 */
/** The frameworks whose optimizer storage the request may set (1.15: training.master_weights
 *  and training.optimizer_state_dtype): the library refuses a master other than auto elsewhere. */
export const OPTIMIZER_STORAGE = Object.freeze(['megatron', 'deepspeed']);
const storageApplies = (s) => OPTIMIZER_STORAGE.includes(s.fw ?? DEFAULTS.fw);

export const FIELDS_19 = Object.freeze([
  { key: 'lc', field: 'loss_chunks', id: 'loss-chunks', kind: 'int',
    applies: (s) => CHUNKED_LOSSES.includes(s.loss ?? DEFAULTS.loss) },
  { key: 'uop', field: 'fsdp_use_orig_params', id: 'use-orig-params', kind: 'flag',
    applies: (s, mode) => mode !== 'search' && (s.fw ?? DEFAULTS.fw) === 'fsdp1' && (s.ad ?? DEFAULTS.ad) !== 'none' },
  { key: 'fp4', field: 'fp4', id: 'fp4', kind: 'flag', applies: (s) => (s.fw ?? DEFAULTS.fw) === 'megatron' },
  // 1.12: Liger-Kernel in the Hugging Face blocks, every framework but megatron (the library
  // refuses it for LayerNorm models and hybrids, shown next to the box)
  { key: 'lgr', field: 'use_liger_kernel', id: 'use-liger-kernel', kind: 'flag',
    applies: (s) => (s.fw ?? DEFAULTS.fw) !== 'megatron' },
  // 1.15: the master copy (a select of the library's master_weights names) and the moments'
  // dtype, under megatron and deepspeed (pretraining and the search read both)
  { key: 'mw', field: 'master_weights', id: 'master-weights', kind: 'name', frameworks: OPTIMIZER_STORAGE,
    applies: storageApplies },
  { key: 'osd', field: 'optimizer_state_dtype', id: 'optimizer-state-dtype', kind: 'name',
    frameworks: OPTIMIZER_STORAGE, applies: storageApplies },
]);

/** Whether the library reads a FIELDS_19 field of the form (mode as ddpApplies). */
export function field19Applies(entry, state, mode = 'pretrain') {
  return entry.applies(state, mode);
}

/** The FIELDS_19 fields of the form that apply and differ from the library's defaults. */
export function fields19(state, mode = 'pretrain') {
  const out = {};
  for (const f of FIELDS_19) {
    if (!field19Applies(f, state, mode)) continue;
    const v = String(state[f.key] ?? DEFAULTS[f.key]).trim();
    if (f.kind === 'flag') {
      if (v === '1') out[f.field] = true;
    } else if (f.kind === 'name') {  // a name as it is (the library refuses an unknown one)
      if (v !== '' && v !== DEFAULTS[f.key]) out[f.field] = v;
    } else if (v !== '' && v !== DEFAULTS[f.key]) {
      out[f.field] = num(v);
    }
  }
  return out;
}

/**
 * training.recompute_modules (1.11): Megatron-Core's --recompute-modules, what selective
 * recomputation checkpoints. The state key, the request field and the control's id (a group of
 * checkboxes, one per recompute_module name of the library); shown, and sent, only where the
 * library reads it: framework megatron with recompute "selective" (pretraining and the search,
 * whose training block pins the recomputation too).
 */
export const RECOMPUTE_MODULES = Object.freeze({ key: 'rcm', field: 'recompute_modules', id: 'recompute-modules' });

/** Whether the library reads training.recompute_modules for the form. */
export function recomputeModulesApply(state) {
  return (state.fw ?? DEFAULTS.fw) === 'megatron' && (state.rc ?? DEFAULTS.rc) === 'selective';
}

/** training.recompute_modules of the form: the checked names where the library reads them and
 *  they differ from Megatron's default ('' leaves the field out; 'none' sends an empty list). */
export function recomputeModulesFields(state) {
  if (!recomputeModulesApply(state)) return {};
  const v = String(state[RECOMPUTE_MODULES.key] ?? DEFAULTS[RECOMPUTE_MODULES.key]).trim();
  if (v === '') return {};
  return { [RECOMPUTE_MODULES.field]: v === 'none' ? [] : v.split(',').map((t) => t.trim()) };
}

/** The frameworks whose FSDP mechanisms the library models (FSDP2 fully_shard and FSDP1). */
const FSDP = ['fsdp', 'fsdp1'];
/** Every framework but Megatron-LM (which runs its own mixed precision and loss). */
const NOT_MEGATRON = ['fsdp', 'fsdp1', 'deepspeed', 'pytorch'];

/**
 * The precision policy and loss fields of the training block (1.6, README "Training stack"):
 * the state key, the request field, the form control's id, its kind, the frameworks that read it
 * and what else it needs in the form. As with BUCKETS, a control is shown, and its field sent,
 * only where it applies, and only when the form sets it away from the library's default:
 *  - 'dtype': a select of dtype names, '' = default (left out);
 *  - 'on': a checkbox whose default is on; unchecked sends false;
 *  - 'flag': a checkbox whose default is off; checked sends true;
 *  - 'tri': a select '' (the stack's default, left out), '1' (true) or '0' (false).
 */
export const POLICY = Object.freeze([
  { key: 'rd', field: 'reduce_dtype', id: 'reduce-dtype', kind: 'dtype', frameworks: FSDP },
  { key: 'lp', field: 'loss_parallel', id: 'loss-parallel', kind: 'on', frameworks: FSDP },
  { key: 'fag', field: 'fp8_all_gather', id: 'fp8-all-gather', kind: 'flag', frameworks: FSDP, needs: 'fp8' },
  { key: 'ns', field: 'no_sync', id: 'no-sync', kind: 'tri', frameworks: FSDP },
  { key: 'ac', field: 'autocast', id: 'autocast', kind: 'tri', frameworks: NOT_MEGATRON },
  { key: 'lh', field: 'logits_held', id: 'logits-held', kind: 'flag', frameworks: NOT_MEGATRON },
]);

/** Whether a POLICY field applies to the form: its framework, and the flag it needs (fp8). */
export function policyApplies(entry, state) {
  if (!entry.frameworks.includes(state.fw ?? DEFAULTS.fw)) return false;
  return !entry.needs || (state[entry.needs] ?? DEFAULTS[entry.needs]) === '1';
}

/** The POLICY fields of the form that apply and differ from the library's defaults. */
export function policyFields(state) {
  const out = {};
  for (const p of POLICY) {
    if (!policyApplies(p, state)) continue;
    const v = String(state[p.key] ?? DEFAULTS[p.key]);
    if (p.kind === 'dtype') {
      if (v !== '') out[p.field] = v;
    } else if (p.kind === 'on') {
      if (v === '0') out[p.field] = false;
    } else if (p.kind === 'flag') {
      if (v === '1') out[p.field] = true;
    } else if (v === '1' || v === '0') {
      out[p.field] = v === '1';
    }
  }
  return out;
}

/** The training-stack fields of the training block (README "Training stack"), those the form
 *  sets away from the defaults: the library checks every value and combination. */
export function stackFields(state) {
  const out = {};
  const text = (key, field) => {
    const v = state[key] ?? DEFAULTS[key];
    if (v !== DEFAULTS[key] && v !== '') out[field] = v;
  };
  const flag = (key) => (state[key] ?? DEFAULTS[key]) === '1';
  text('fw', 'framework');
  text('pd', 'param_dtype');
  text('gd', 'grad_dtype');
  text('opt', 'optimizer');
  if (flag('oib')) out.optimizer_in_backward = true;
  if ((state.rce ?? DEFAULTS.rce) !== DEFAULTS.rce) out.recompute_every = num(state.rce);
  text('loss', 'loss');
  if (flag('fp8')) out.fp8 = true;
  text('cmp', 'compile');
  text('md', 'moe_dispatcher');
  text('ak', 'attention_kernel');
  const overlap = state.co ?? DEFAULTS.co;
  if (overlap === 'none') out.comm_overlap = 'none';
  else if (overlap !== '') out.comm_overlap = overlap.split(',');
  const offload = {};
  if (flag('oo')) offload.optimizer = true;
  if (flag('op')) offload.params = true;
  if (flag('oa')) offload.activations = true;
  if (Object.keys(offload).length) out.offload = offload;
  return { ...out, ...policyFields(state), ...bucketFields(state) };
}

/** The adapter of the training block (README "LoRA and QLoRA"): none unless the form chooses
 *  lora or qlora, then its type and the fields the form sets away from peft's defaults. The
 *  library checks every value (rank, targets, qlora's base dtype ...). */
export function adapterFields(state) {
  const v = (key) => state[key] ?? DEFAULTS[key];
  if (v('ad') === DEFAULTS.ad) return {};
  const adapter = { type: v('ad') };
  if (v('lr') !== DEFAULTS.lr) adapter.rank = num(v('lr'));
  if (v('la') !== DEFAULTS.la) adapter.alpha = num(v('la'));
  if (v('ldo') !== DEFAULTS.ldo) adapter.dropout = num(v('ldo'));
  if (v('lt') !== DEFAULTS.lt) adapter.targets = v('lt').split(',').filter((t) => t !== '');
  if (v('adt') !== DEFAULTS.adt) adapter.dtype = v('adt');
  if (v('dq') === '1') adapter.double_quant = true;
  if (v('qlh') === '1') adapter.quantize_lm_head = true;
  return { adapter };
}

/** parallel.first_stage_layers, last_stage_layers and pipeline_layout (1.7) where the form sets
 *  them away from their defaults (0, 0, ''); the library checks each. */
export function pipelineFields(state) {
  const v = (key) => String(state[key] ?? DEFAULTS[key]).trim();
  const out = {};
  if (v('fsl') !== '' && v('fsl') !== DEFAULTS.fsl) out.first_stage_layers = num(v('fsl'));
  if (v('lsl') !== '' && v('lsl') !== DEFAULTS.lsl) out.last_stage_layers = num(v('lsl'));
  if (v('pl') !== '') out.pipeline_layout = v('pl');
  return out;
}

/** The pretrain request of the form, exactly as `memest request` takes it. */
export function pretrainRequest(state) {
  return {
    mode: 'pretrain',
    model: modelOf(state),
    gpu: gpuOf(state),
    parallel: {
      gpus: num(state.gpus), tp: num(state.tp), cp: num(state.cp), pp: num(state.pp),
      vpp: num(state.vpp), sp: state.sp === '1', zero: num(state.zero),
      ep: num(state.ep), etp: num(state.etp), ...pipelineFields(state),
    },
    training: {
      seq_len: num(state.seq), micro_batch: num(state.mbs), global_batch: num(state.gbs),
      recompute: state.rc, flash_attention: state.fa === '1', ...stackFields(state),
      ...ddpFields(state), ...fields19(state), ...recomputeModulesFields(state), ...adapterFields(state),
    },
  };
}

/** LLMem for the same model, GPU, GPU count and sequence length: its Algorithm 1 (method
 *  "auto"), or one method at a batch (and a tp size for DP+TP). */
export function finetuneRequest(state) {
  const method = state.fm || 'auto';
  const finetune = { method, gradient_checkpointing: state.fgc === '1' };
  if (method !== 'auto') finetune.batch = num(state.fb);
  if (method === 'dp+tp') finetune.tp = num(state.ftp);
  return {
    mode: 'finetune',
    model: modelOf(state),
    gpu: gpuOf(state),
    parallel: { gpus: num(state.gpus) },
    training: { seq_len: num(state.seq) },
    finetune,
  };
}

/** The layout search over the form's GPUs, with its training settings. */
export function searchRequest(state) {
  return {
    mode: 'search',
    model: modelOf(state),
    gpu: gpuOf(state),
    parallel: { gpus: num(state.gpus), sp: state.sp === '1' },
    training: {
      seq_len: num(state.seq), global_batch: num(state.gbs),
      recompute: state.rc, flash_attention: state.fa === '1', ...stackFields(state),
      ...ddpFields(state, 'search'), ...fields19(state, 'search'), ...recomputeModulesFields(state),
    },
    search: { top: num(state.top), ...searchLimit(state), ...searchVariants(state) },
  };
}

/** The fp8 settings a search may try, as the state's comma list names them (search.fp8's
 *  false / true); a boolean, not an enumeration of the library. */
export const SEARCH_FP8 = Object.freeze(['off', 'on']);

/** search.fp8 and search.compile where the form lists settings to try ('' leaves the form's
 *  own fp8 and compile). The names go as they are: the library refuses an unknown one. */
export function searchVariants(state) {
  const list = (key) => String(state[key] ?? DEFAULTS[key]).split(',').map((t) => t.trim()).filter((t) => t !== '');
  const out = {};
  const fp8 = list('sf8');
  if (fp8.length) out.fp8 = fp8.map((t) => (t === 'on' ? true : t === 'off' ? false : t));
  const compile = list('scp');
  if (compile.length) out.compile = compile;
  return out;
}

/** search.max_oom_probability when the form sets one ('' leaves the library's default). */
function searchLimit(state) {
  const v = String(state.moop ?? DEFAULTS.moop).trim();
  return v === '' ? {} : { max_oom_probability: num(v) };
}

/** The state key of each request field the form holds. */
const STATE_OF_FIELD = {
  'parallel.gpus': 'gpus', 'parallel.tp': 'tp', 'parallel.cp': 'cp', 'parallel.pp': 'pp',
  'parallel.vpp': 'vpp', 'parallel.zero': 'zero', 'parallel.sp': 'sp',
  'parallel.ep': 'ep', 'parallel.etp': 'etp',
  'parallel.first_stage_layers': 'fsl', 'parallel.last_stage_layers': 'lsl',
  'parallel.pipeline_layout': 'pl',
  'training.seq_len': 'seq', 'training.micro_batch': 'mbs', 'training.global_batch': 'gbs',
  'training.recompute': 'rc', 'training.flash_attention': 'fa',
  'finetune.method': 'fm', 'finetune.batch': 'fb', 'finetune.tp': 'ftp',
  'finetune.gradient_checkpointing': 'fgc',
  'training.framework': 'fw', 'training.param_dtype': 'pd', 'training.grad_dtype': 'gd',
  'training.optimizer': 'opt', 'training.optimizer_in_backward': 'oib',
  'training.recompute_every': 'rce', 'training.loss': 'loss', 'training.fp8': 'fp8',
  'training.compile': 'cmp', 'training.offload.optimizer': 'oo', 'training.offload.params': 'op',
  'training.offload.activations': 'oa', 'training.moe_dispatcher': 'md',
  'training.attention_kernel': 'ak', 'training.comm_overlap': 'co',
  ...Object.fromEntries(BUCKETS.map((b) => [`training.buckets.${b.field}`, b.key])),
  [`training.${DDP_ONE.field}`]: DDP_ONE.key,
  ...Object.fromEntries(FIELDS_19.map((f) => [`training.${f.field}`, f.key])),
  [`training.${RECOMPUTE_MODULES.field}`]: RECOMPUTE_MODULES.key,
  'training.adapter.type': 'ad', 'training.adapter.rank': 'lr', 'training.adapter.alpha': 'la',
  'training.adapter.dropout': 'ldo', 'training.adapter.targets': 'lt', 'training.adapter.dtype': 'adt',
  'training.adapter.double_quant': 'dq',
  ...Object.fromEntries(POLICY.map((p) => [`training.${p.field}`, p.key])),
  'training.adapter.quantize_lm_head': 'qlh', 'search.max_oom_probability': 'moop',
  'search.fp8': 'sf8', 'search.compile': 'scp',
};

/**
 * The state with a response's `set` ({"parallel": {"zero": 3}, "training": {...}}, what a
 * suggestion changes) applied, and the request fields the form has no control for (then the
 * state cannot reproduce the suggestion).
 * @returns {{state: Record<string, string>, unknown: string[]}}
 */
export function applySet(state, set) {
  const next = { ...state };
  const unknown = [];
  for (const [field, value] of setEntries(set)) {
    const stateKey = STATE_OF_FIELD[field];
    if (!stateKey || (typeof value === 'object' && value !== null)) { unknown.push(field); continue; }
    next[stateKey] = stateKey === 'cmp' ? compileName(value)
      : typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
  }
  return { state: next, unknown };
}

/** A suggestion's `set` as [dotted request field, value] pairs, nested blocks walked
 *  (training.offload.params, training.adapter.dtype); a list stays one value. */
export function setEntries(set, prefix = '') {
  return Object.entries(set ?? {}).flatMap(([key, value]) => {
    const field = prefix ? `${prefix}.${key}` : key;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? setEntries(value, field) : [[field, value]];
  });
}

/** The request field of a state key (the form's own problems name it as the library would);
 *  the state key itself when the form has no such field. */
export function fieldOfState(key) {
  if (key === 'mem') return 'gpu.memory_gib';
  return Object.keys(STATE_OF_FIELD).find((f) => STATE_OF_FIELD[f] === key) ?? key;
}

/** The error slot (and input) of each state key, where it differs from the key. */
const SLOT_OF_STATE = {
  rc: 'recompute', fa: 'flash', fm: 'ft-method', fb: 'ft-batch', ftp: 'ft-tp', fgc: 'ft-gc',
  fw: 'framework', pd: 'param-dtype', gd: 'grad-dtype', opt: 'optimizer', oib: 'opt-in-backward',
  rce: 'recompute-every', loss: 'loss', fp8: 'fp8', cmp: 'compile', oo: 'offload-optimizer',
  op: 'offload-params', oa: 'offload-activations', md: 'moe-dispatcher', ak: 'attention-kernel', co: 'comm-overlap',
  ...Object.fromEntries(BUCKETS.map((b) => [b.key, b.id])),
  [DDP_ONE.key]: DDP_ONE.id,
  ...Object.fromEntries(FIELDS_19.map((f) => [f.key, f.id])),
  [RECOMPUTE_MODULES.key]: RECOMPUTE_MODULES.id,
  ad: 'adapter-type', lr: 'lora-rank', la: 'lora-alpha', ldo: 'lora-dropout', lt: 'lora-targets',
  adt: 'adapter-dtype', dq: 'double-quant',
  ...Object.fromEntries(POLICY.map((p) => [p.key, p.id])),
  qlh: 'quantize-lm-head', moop: 'search-max-oom', sf8: 'search-fp8', scp: 'search-compile',
  fsl: 'first-stage-layers', lsl: 'last-stage-layers', pl: 'pipeline-layout',
};

/** Which form control (and error slot) a request field belongs to. */
export function inputForField(field) {
  if (!field) return 'general';
  const key = STATE_OF_FIELD[field];
  if (key) return SLOT_OF_STATE[key] ?? key;
  if (field === 'model' || field.startsWith('model.')) return 'model';
  if (field === 'gpu' || field.startsWith('gpu.')) return 'gpu';
  if (field.startsWith('parallel.')) return 'gpus';
  if (field.startsWith('training.offload')) return 'offload-optimizer';
  if (field.startsWith('training.buckets')) return 'general';
  if (field.startsWith('training.adapter.targets')) return 'lora-targets';
  // training.recompute_modules[1]: the list's item
  if (field.startsWith(`training.${RECOMPUTE_MODULES.field}`)) return RECOMPUTE_MODULES.id;
  if (field.startsWith('training.adapter')) return 'adapter-type';
  if (field.startsWith('training.')) return 'seq';
  if (field.startsWith('finetune.')) return 'ft-method';
  if (field.startsWith('search.fp8')) return 'search-fp8';  // search.fp8[1]: the list's item
  if (field.startsWith('search.compile')) return 'search-compile';
  return 'general';
}
