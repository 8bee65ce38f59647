// The page's state: one flat object, mirrored in the URL (share the exact configuration) and
// turned into the library's JSON requests. No estimate is computed here.

/** The README's default example: Llama-3.1-8B on 8 x A100 40GB, (TP, CP, PP, MBS) = (4, 1, 2, 1). */
export const DEFAULTS = Object.freeze({
  m: 'llama-3.1-8b', cfg: '', g: 'a100-40gb', mem: '40',
  gpus: '8', tp: '4', cp: '1', pp: '2', vpp: '1', zero: '1', sp: '1',
  seq: '8192', mbs: '1', gbs: '1024', rc: 'none', fa: '1',
  tab: 'pretrain', top: '10',
});

/** Reads a state from a URL's hash (#m=...&tp=...): unknown keys ignored, defaults filled. */
export function stateFromHash(hash) {
  const params = new URLSearchParams(hash.replace(/^#/, ''));
  const state = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS)) {
    if (params.has(key)) state[key] = params.get(key);
  }
  if (state.cfg) {
    try {
      state.cfg = decodeConfig(state.cfg);
    } catch {
      state.cfg = '';
    }
  }
  return state;
}

/** The hash for a state: only what differs from the defaults, config.json compacted. */
export function hashFromState(state) {
  const params = new URLSearchParams();
  for (const [key, def] of Object.entries(DEFAULTS)) {
    const value = state[key] ?? def;
    if (value === def) continue;
    if ((key === 'mem' && state.g !== 'custom') || (key === 'cfg' && state.m !== 'custom')) continue;
    params.set(key, key === 'cfg' ? encodeConfig(value) : value);
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

/** The model part of a request: a preset id, or the pasted config.json object (or its text,
 *  when it does not parse, for the library to refuse). */
export function modelOf(state) {
  if (state.m !== 'custom') return state.m;
  try {
    return JSON.parse(state.cfg);
  } catch {
    return state.cfg;
  }
}

export function gpuOf(state) {
  if (state.g !== 'custom') return state.g;
  return { memory_gib: num(state.mem) };
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
    },
    training: {
      seq_len: num(state.seq), micro_batch: num(state.mbs), global_batch: num(state.gbs),
      recompute: state.rc, flash_attention: state.fa === '1',
    },
  };
}

/** LLMem's Algorithm 1 for the same model, GPU, GPU count and sequence length. */
export function finetuneRequest(state) {
  return {
    mode: 'finetune',
    model: modelOf(state),
    gpu: gpuOf(state),
    parallel: { gpus: num(state.gpus) },
    training: { seq_len: num(state.seq) },
    finetune: { method: 'auto' },
  };
}

/** The layout search over the form's GPUs, with its training settings. */
export function searchRequest(state) {
  return {
    mode: 'search',
    model: modelOf(state),
    gpu: gpuOf(state),
    parallel: { gpus: num(state.gpus) },
    training: {
      seq_len: num(state.seq), global_batch: num(state.gbs),
      recompute: state.rc, flash_attention: state.fa === '1',
    },
    search: { top: num(state.top) },
  };
}

/** Which form control (and error slot) a request field belongs to. */
export function inputForField(field) {
  const map = {
    'parallel.gpus': 'gpus', 'parallel.tp': 'tp', 'parallel.cp': 'cp', 'parallel.pp': 'pp',
    'parallel.vpp': 'vpp', 'parallel.zero': 'zero', 'parallel.sp': 'sp',
    'training.seq_len': 'seq', 'training.micro_batch': 'mbs', 'training.global_batch': 'gbs',
    'training.recompute': 'recompute', 'training.flash_attention': 'flash',
  };
  if (!field) return 'general';
  if (map[field]) return map[field];
  if (field === 'model' || field.startsWith('model.')) return 'model';
  if (field === 'gpu' || field.startsWith('gpu.')) return 'gpu';
  if (field.startsWith('parallel.')) return 'gpus';
  if (field.startsWith('training.')) return 'seq';
  return 'general';
}
