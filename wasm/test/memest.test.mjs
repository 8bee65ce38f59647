// Unit tests of the JavaScript wrapper (wasm/memest.mjs) against the built WebAssembly module.
// Run: node --test wasm/test/   (after wasm/build.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadMemest, MemestError, GiB } from '../node.mjs';

const memest = await loadMemest();

const paper = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb',
  parallel: { gpus: 8, tp: 4, cp: 1, pp: 2, vpp: 1, sp: true, zero: 1 },
  training: { seq_len: 8192, micro_batch: 1, global_batch: 1024, recompute: 'none', flash_attention: true },
};

test('version() is the header version', () => {
  assert.match(memest.version(), /^\d+\.\d+\.\d+$/);
  const [a, b, c] = memest.version().split('.').map(Number);
  assert.equal(memest.versionNumber(), a * 10000 + b * 100 + c);
});

test('models() lists the presets with their parameter counts', () => {
  const models = memest.models();
  assert.ok(models.length >= 10);
  const llama = models.find((m) => m.id === 'llama-3.1-8b');
  assert.ok(llama, 'llama-3.1-8b preset');
  assert.equal(llama.family, 'llama');
  assert.equal(llama.hidden_size, 4096);
  assert.equal(llama.num_hidden_layers, 32);
  assert.ok(Math.abs(llama.num_parameters - 8.03e9) < 0.01e9);
  assert.equal(new Set(models.map((m) => m.id)).size, models.length, 'ids are unique');
  models[0].id = 'mutated';
  assert.notEqual(memest.models()[0].id, 'mutated', 'callers get copies');
});

test('gpus() lists the GPU presets with capacities (1.6: the usable capacity, the nominal beside it)', () => {
  const gpus = memest.gpus();
  const a100 = gpus.find((g) => g.id === 'a100-40gb');
  assert.equal(a100.nominal_gib, 40);
  // what torch.cuda.mem_get_info reports: a little less than the nominal 40 GiB
  assert.ok(a100.memory_bytes < 40 * GiB && a100.memory_bytes > 39 * GiB, String(a100.memory_bytes));
  assert.equal(typeof a100.memory_source, 'string');
  assert.equal(a100.gpus_per_node, 8);
  assert.ok(gpus.every((g) => g.memory_bytes > 0 && g.name));
});

test('request() reproduces the 4D paper (Llama-3.1-8B, 8 x A100 40GB, tp 4 pp 2: 27.20 GiB)', () => {
  const r = memest.request(paper);
  assert.equal(r.ok, true);
  assert.equal(r.mode, 'pretrain');
  assert.equal((r.estimate_bytes / GiB).toFixed(2), '27.20');
  assert.equal(r.verdict, 'fits');
  assert.equal(r.stages.length, 2);
  assert.equal(r.capacity_bytes, memest.gpus().find((g) => g.id === 'a100-40gb').memory_bytes);
  const s0 = r.stages[0];
  assert.ok(Math.abs(s0.weights_bytes + s0.gradients_bytes + s0.optimizer_bytes + s0.activations_bytes - s0.total_bytes) < 1);
});

test('request() estimates a mixture-of-experts model with expert parallelism (ep, etp, edp, experts per stage)', () => {
  // Mixtral 8x7B, TP1 PP4 EP8 on 32 GPUs: edp = 32 / (1*8*4) = 1; 8 MoE layers per stage,
  // 8 experts of 3*4096*14336 over ep*etp = 8 GPUs.
  const r = memest.request({ mode: 'pretrain', model: 'mixtral-8x7b', gpu: 'h100-80gb',
    parallel: { gpus: 32, pp: 4, ep: 8 }, training: { seq_len: 4096 } });
  assert.equal(r.layout.ep, 8);
  assert.equal(r.layout.etp, 1);
  assert.equal(r.layout.edp, 1);
  assert.equal(r.stages[0].experts.moe_layers, 8);
  assert.equal(r.stages[0].experts.parameters, 8 * 3 * 4096 * 14336);
  assert.ok(r.model.active_parameters < r.model.num_parameters);
  const cells = memest.pretrainTable({ mode: 'pretrain', model: 'mixtral-8x7b', gpu: 'h100-80gb',
    parallel: { ep: 8 }, training: { seq_len: 4096 } }, [[32, 1, 1, 4, 1], [16, 1, 1, 4, 1]]);
  assert.equal(cells[0].ok, true);
  assert.equal(cells[0].peak_bytes, r.peak_bytes);
  assert.equal(cells[1].ok, false);  // etp*ep*pp = 32 does not divide 16 GPUs
});

test('request() estimates LoRA and QLoRA (training.adapter), naming the parts and refusing bad adapters', () => {
  // Llama-3.1-8B, q_proj + v_proj at r 8 (peft's defaults): (8*(4096+4096) + 8*(4096+1024)) * 32
  // = 3407872 trainable, fp32 adapters 4 bytes each
  const lora = {
    mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 1 },
    training: { framework: 'pytorch', seq_len: 2048, adapter: { type: 'lora' } },
  };
  const r = memest.request(lora);
  assert.equal(r.trainable_parameters, 3407872);
  assert.equal(r.adapter.adapter_weights_bytes, 3407872 * 4);
  assert.deepEqual(r.training.adapter.targets, ['q_proj', 'v_proj']);
  const q = memest.request({ ...lora, training: { ...lora.training, adapter: { type: 'qlora', double_quant: true } } });
  assert.ok(q.adapter.quant_metadata_bytes > 0 && q.adapter.base_weights_bytes < r.adapter.base_weights_bytes);
  assert.throws(() => memest.request({ ...lora, training: { ...lora.training, param_dtype: 'fp32', adapter: { type: 'qlora' } } }),
    (e) => e instanceof MemestError && e.field === 'training.param_dtype');
});

test('request() accepts JSON text as well as objects, with identical answers', () => {
  assert.deepEqual(memest.request(JSON.stringify(paper)), memest.request(paper));
});

test('request() takes a pasted config.json object as the model', () => {
  const config = {
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 4096, num_hidden_layers: 32,
    num_attention_heads: 32, num_key_value_heads: 8, intermediate_size: 14336, vocab_size: 128256,
    tie_word_embeddings: false, max_position_embeddings: 131072, rms_norm_eps: 1e-5,
  };
  const fromConfig = memest.request({ ...paper, model: config });
  const fromPreset = memest.request(paper);
  assert.equal(fromConfig.estimate_bytes, fromPreset.estimate_bytes);
});

test('request() throws MemestError with the code and the field on {ok: false}', () => {
  assert.throws(() => memest.request({ ...paper, parallel: { ...paper.parallel, tp: 3 } }), (e) => {
    assert.ok(e instanceof MemestError);
    assert.ok(e instanceof Error);
    assert.equal(e.code, 'invalid_argument');
    assert.equal(e.field, 'parallel.tp');
    assert.match(e.message, /parallel\.tp/);
    assert.equal(e.status, 1);
    return true;
  });
  assert.throws(() => memest.request({ ...paper, model: 'no-such-model' }),
    (e) => e.code === 'unknown_preset' && e.field === 'model');
  assert.throws(() => memest.request({ ...paper, training: { ...paper.training, seq_lenn: 1 } }),
    (e) => e.code === 'unknown_field' && e.field.startsWith('training.'));
  assert.throws(() => memest.request('{not json'), (e) => e.code === 'parse_error');
});

test('answer() returns the error document instead of throwing', () => {
  const d = memest.answer({ ...paper, gpu: 'nope' });
  assert.equal(d.ok, false);
  assert.equal(d.error.field, 'gpu');
  assert.equal(d.error.code, 'unknown_preset');
});

test('finetune mode with method auto (LLMem Algorithm 1)', () => {
  const r = memest.request({ mode: 'finetune', model: 'opt-1.3b', gpu: 'v100-16gb', parallel: { gpus: 4 },
                             training: { seq_len: 512 }, finetune: { method: 'auto' } });
  assert.ok(['cdp', 'zero3', 'tp', 'dp+tp', 'cpu_offload'].includes(r.selected));
  assert.ok(Array.isArray(r.methods) && r.methods.length >= 4);
  assert.ok(r.peak_bytes > 0);
});

test('model_states mode (ZeRO table)', () => {
  const r = memest.request({ mode: 'model_states', model: { num_parameters: 7.5e9 }, parallel: { gpus: 64, zero: 0 } });
  assert.equal(Math.round(r.estimate_gb), 135);
});

test('pretrainTable() equals request() cell for cell, errors included', () => {
  const cells = [];
  for (const gpus of [8, 16, 64]) for (const tp of [1, 2, 4, 8]) for (const pp of [1, 2, 4]) for (const mbs of [1, 2]) cells.push([gpus, tp, 1, pp, mbs]);
  cells.push([8, 3, 1, 1, 1], [4, 4, 1, 2, 1]);
  const table = memest.pretrainTable(paper, cells);
  assert.equal(table.length, cells.length);
  cells.forEach(([gpus, tp, cp, pp, mbs], i) => {
    const d = memest.answer({ ...paper, parallel: { ...paper.parallel, gpus, tp, cp, pp },
                              training: { ...paper.training, micro_batch: mbs } });
    assert.equal(table[i].ok, d.ok, `cell ${cells[i]}`);
    if (d.ok) {
      assert.equal(table[i].estimate_bytes, d.estimate_bytes);
      assert.equal(table[i].peak_bytes, d.peak_bytes);
      assert.equal(table[i].verdict, d.verdict);
      assert.equal(table[i].peak_verdict, d.peak_verdict);
      assert.equal(table[i].capacity_bytes, d.capacity_bytes);
    } else {
      assert.deepEqual(table[i].error, d.error);
    }
  });
});

test('pretrainTable() throws for a bad base model', () => {
  assert.throws(() => memest.pretrainTable({ ...paper, model: 'nope' }, [[8, 1, 1, 1, 1]]),
    (e) => e instanceof MemestError && e.field === 'model');
});

test('many requests do not leak (heap stays bounded)', () => {
  memest.request(paper);
  const before = memest.core.HEAPU8.length;
  for (let i = 0; i < 2000; i++) { memest.answer(paper); memest.answer({ ...paper, gpu: 'x' }); }
  assert.equal(memest.core.HEAPU8.length, before);
});

test('pretrainTable({messages: false}) agrees on every cell, leaving out only refused layouts\' text', () => {
  const cells = [];
  for (const gpus of [4, 8, 12, 64]) for (const tp of [1, 2, 3, 4, 8]) for (const cp of [1, 2]) for (const pp of [1, 2, 3, 8]) cells.push([gpus, tp, cp, pp, 1]);
  const full = memest.pretrainTable(paper, cells);
  const fast = memest.pretrainTable(paper, cells, { messages: false });
  assert.ok(full.some((c) => !c.ok) && full.some((c) => c.ok));
  full.forEach((c, i) => {
    assert.equal(fast[i].ok, c.ok, `cell ${cells[i]}`);
    if (c.ok) assert.deepEqual(fast[i], c);
    else if (!fast[i].error) assert.equal(typeof fast[i].issue, 'string');
  });
});

test('enums() and verdictBands() are the library\'s tables (the C functions agree)', () => {
  const core = memest.core;
  const e = memest.enums();
  const kinds = ['status', 'family', 'verdict', 'recompute', 'activation_model', 'prune_reason', 'finetune_method',
    'framework', 'loss', 'optimizer', 'adapter', 'lora_target', 'compile', 'overlap', 'step_part', 'moe_dispatcher', 'attention_kernel',
    'recompute_module', 'master_weights'];
  assert.deepEqual(Object.keys(e), kinds);
  assert.deepEqual(e.compile, ['none', 'all', 'model', 'loss']);
  kinds.forEach((key, which) => {
    const n = core._memest_enum_count(which);
    assert.equal(e[key].length, n, key);
    for (let v = 0; v < n; v++) assert.equal(core.UTF8ToString(core._memest_enum_name(which, v)), e[key][v], `${key}[${v}]`);
    assert.equal(core._memest_enum_name(which, n), 0, `${key}: NULL past the end`);
  });
  assert.equal(e.verdict[0], 'fits');
  const bands = memest.verdictBands();
  assert.deepEqual(Object.keys(bands), ['fits', 'tight']);
  assert.equal(bands.fits, core._memest_verdict_limit(e.verdict.indexOf('fits')));
  assert.equal(bands.tight, core._memest_verdict_limit(e.verdict.indexOf('tight')));
  e.status.push('changed');
  assert.ok(!memest.enums().status.includes('changed'), 'callers get copies');
  // the verdicts follow the bands
  const r = memest.request(paper);
  assert.ok(r.usage_fraction <= bands.fits && r.verdict === 'fits');
});

test('a NUL character in the request text is a parse error, not a shorter request', () => {
  const text = JSON.stringify(paper);
  const d = memest.answer(`${text}\0 lost`);
  assert.equal(d.ok, false);
  assert.equal(d.error.code, 'parse_error');
  assert.equal(d.error.field, '');
  assert.equal(d.status, memest.enums().status.indexOf('parse_error'));
  assert.throws(() => memest.request(`${text}\0`), (e) => e instanceof MemestError && e.code === 'parse_error');
  // inside a JSON string of an object request it is an escaped character, not the end
  assert.throws(() => memest.request({ ...paper, model: 'llama-3.1-8b\0' }), (e) => e.code === 'unknown_preset');
});

test('strict JSON: null refused with the field named, duplicate keys and 1e999 are parse errors', () => {
  assert.throws(() => memest.request({ ...paper, training: { ...paper.training, recompute: null } }),
    (e) => e.code === 'wrong_type' && e.field === 'training.recompute');
  assert.throws(() => memest.request('{"mode": "model_states", "model": "gpt2", "model": "gpt2"}'),
    (e) => e.code === 'parse_error');
  assert.throws(() => memest.request('{"mode": "model_states", "model": {"num_parameters": 1e999}}'),
    (e) => e.code === 'parse_error');
});

test('search mode: the page\'s request (training.recompute pinned) ranks layouts', () => {
  const r = memest.request({ mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 64 },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'full', flash_attention: true }, search: { top: 5 } });
  assert.equal(r.results.length, 5);
  assert.ok(r.results.every((x) => x.layout.recompute === 'full'));
});

test('pretrainTable() reads the base as the pretrain mode does (training block, strictly)', () => {
  const base = { ...paper, training: { ...paper.training, activation_model: 'gpt', param_dtype: 'fp16', optimizer: 'sgd' } };
  const cells = [[8, 4, 1, 2, 1], [16, 2, 1, 2, 2], [8, 8, 1, 1, 1]];
  const table = memest.pretrainTable(base, cells);
  cells.forEach(([gpus, tp, cp, pp, mbs], i) => {
    const d = memest.request({ ...base, parallel: { ...base.parallel, gpus, tp, cp, pp },
                               training: { ...base.training, micro_batch: mbs } });
    assert.equal(table[i].estimate_bytes, d.estimate_bytes, `cell ${cells[i]}`);
  });
  assert.notEqual(table[0].estimate_bytes, memest.pretrainTable(paper, cells)[0].estimate_bytes);
  // the cells give gpus, tp, cp, pp and micro_batch: the base's own (even bad ones) are ignored
  const loose = { ...paper, parallel: { ...paper.parallel, tp: 'x', gpus: 3 }, training: { ...paper.training, micro_batch: 0 } };
  assert.deepEqual(memest.pretrainTable(loose, cells), memest.pretrainTable(paper, cells));
  // the rest is read strictly, with the field named
  assert.throws(() => memest.pretrainTable({ ...paper, training: { ...paper.training, recompute: 'sometimes' } }, cells),
    (e) => e instanceof MemestError && e.field === 'training.recompute' && e.code === 'invalid_argument'
      && e.status === memest.enums().status.indexOf('invalid_argument'));
  assert.throws(() => memest.pretrainTable({ ...paper, parallel: { ...paper.parallel, vpp: null } }, cells),
    (e) => e.field === 'parallel.vpp' && e.code === 'wrong_type');
  assert.throws(() => memest.pretrainTable({ ...paper, training: { ...paper.training, seq_length: 1 } }, cells),
    (e) => e.code === 'unknown_field' && e.field === 'training.seq_length');
});

test('peakVerdictBands() is the enums mode\'s peak_verdict_bands, and peak_verdict follows it', () => {
  const bands = memest.peakVerdictBands();
  assert.deepEqual(bands, memest.request({ mode: 'enums' }).peak_verdict_bands);
  assert.deepEqual(Object.keys(bands), ['fits', 'tight']);
  assert.ok(bands.fits < bands.tight);
  bands.fits = 0;
  assert.notEqual(memest.peakVerdictBands().fits, 0, 'callers get copies');
  const r = memest.request(paper);
  const fraction = r.peak_bytes / r.capacity_bytes;
  const want = fraction <= memest.peakVerdictBands().fits ? 'fits' : fraction <= 1 ? 'tight' : 'oom';
  assert.equal(r.peak_verdict, want);
});

// The 4D paper's OOM run: (tp 4, cp 2, pp 1, mbs 2) on 8 x A100 40GB, seq 8192.
const oom = { ...paper, parallel: { ...paper.parallel, tp: 4, cp: 2, pp: 1 },
  training: { ...paper.training, micro_batch: 2 } };

test('the OOM request: peak_verdict oom, dominant parts and suggestions that fit', () => {
  const r = memest.request(oom);
  assert.equal(r.peak_verdict, 'oom');
  assert.ok(r.peak_bytes > r.capacity_bytes, `${r.peak_bytes} > ${r.capacity_bytes}`);
  assert.ok(r.margin_bytes < 0, 'over capacity: a negative margin');
  assert.ok(r.oom_probability > 0.5, String(r.oom_probability));
  assert.ok(r.dominant_parts.length > 0);
  assert.ok(r.suggestions.length > 0);
  for (const s of r.suggestions) {
    // each suggestion's set, applied to the request, fits
    const next = structuredClone(oom);
    for (const [block, fields] of Object.entries(s.set)) Object.assign(next[block], fields);
    const applied = memest.request(next);
    assert.equal(applied.peak_verdict, s.peak_verdict, s.change);
    assert.equal(applied.peak_bytes, s.peak_bytes, s.change);
  }
});

test('the OOM request through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  const cli = process.env.MEMEST_CLI;
  if (!cli) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
  const { execFileSync } = await import('node:child_process');
  const want = JSON.parse(execFileSync(cli, ['request'], { input: JSON.stringify(oom), encoding: 'utf8' }));
  const got = memest.request(oom);
  assert.equal(got.peak_verdict, want.peak_verdict);
  assert.deepEqual(got.suggestions, want.suggestions);
  assert.deepEqual(got.dominant_parts, want.dominant_parts);
});

// The training stack (docs/training-stack.md): the page's table and the JSON answer agree, and
// a refused combination is a cell error naming its field (the page hides op_selective by it).
const fsdp = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3 },
  training: { seq_len: 4096, micro_batch: 2, global_batch: 16, recompute: 'op_selective',
              flash_attention: true, framework: 'fsdp', loss: 'unfused', offload: { activations: true } },
};

test('training stack: pretrainTable() equals request() for an FSDP request; its parts are reported', () => {
  const d = memest.request(fsdp);
  assert.equal(d.training.framework, 'fsdp');
  assert.ok(d.peak_allocated_bytes > 0 && d.peak_allocated_bytes < d.peak_reserved_bytes);
  assert.equal(d.peak_reserved_bytes, d.peak_bytes);
  assert.ok(d.host_bytes > 0, 'offloaded activations');
  assert.ok(d.stages[0].stack.framework_buffer_bytes > 0);
  const [cell] = memest.pretrainTable(fsdp, [[8, 1, 1, 1, 2]]);
  assert.equal(cell.ok, true);
  assert.equal(cell.peak_bytes, d.peak_bytes);
  const megatron = memest.request({ ...fsdp, training: { ...fsdp.training, framework: 'megatron',
    recompute: 'selective', loss: 'auto', offload: {} } });
  assert.notEqual(megatron.peak_bytes, d.peak_bytes);
});

test('training stack: the 16-bit loss (1.4) by its library name, and its refusal under autocast', () => {
  assert.ok(memest.enums().loss.includes('unfused_16bit'));
  // GPT2-XL under DeepSpeed fp16, micro-batch 40: 40 * 1024 * 50257 = 2058526720 logits, 6 bytes
  // each (logits, shifted copy, fp16 log-probs) = 12351160320
  const gpt2 = {
    mode: 'pretrain', gpu: 'a100-40gb',
    model: { model_type: 'gpt2', n_embd: 1600, n_layer: 48, n_head: 25, vocab_size: 50257, n_positions: 1024 },
    parallel: { gpus: 4, zero: 3 },
    training: { seq_len: 1024, micro_batch: 40, framework: 'deepspeed', param_dtype: 'fp16', grad_dtype: 'fp16',
                recompute: 'full', flash_attention: false, loss: 'unfused_16bit' },
  };
  const d = memest.request(gpt2);
  assert.equal(d.training.loss, 'unfused_16bit');
  assert.equal(d.stages[0].stack.loss_bytes, 12351160320);
  const bad = memest.answer({ ...gpt2, training: { ...gpt2.training, param_dtype: 'fp32' } });
  assert.equal(bad.ok, false);
  assert.equal(bad.error.field, 'training.loss');
});

test('training stack: op_selective under megatron is refused naming training.recompute, in a table cell too', () => {
  const bad = { ...fsdp, training: { ...fsdp.training, framework: 'megatron', offload: {} } };
  const d = memest.answer(bad);
  assert.equal(d.ok, false);
  assert.equal(d.error.field, 'training.recompute');
  const [cell] = memest.pretrainTable(bad, [[8, 1, 1, 1, 2]]);
  assert.equal(cell.ok, false);
  assert.deepEqual(cell.error, d.error);
});

// ---- 1.6: the peak's error band, the probability of OOM, the margin and the figures a user
// compares with their logs; the precision policy and FSDP1's fields of the training block ----

/** P(Z > z) of the standard normal, computed here independently of the library (W. J. Cody's
 *  rational erfc is what libm uses; Abramowitz and Stegun 7.1.26 is within 1.5e-7 of it). */
function normalTail(z) {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erfc = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    * Math.exp(-x * x);
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/** The CLI's JSON answer to a request (`memest request`; JSON text is sent as it is), or null
 *  without MEMEST_CLI. */
async function cliAnswer(request) {
  const cli = process.env.MEMEST_CLI;
  if (!cli) return null;
  const { execFileSync } = await import('node:child_process');
  try {
    return JSON.parse(execFileSync(cli, ['request'], {
      input: typeof request === 'string' ? request : JSON.stringify(request), encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'] }));
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw e;
  }
}

// Llama-3.1-8B on 8 x H100 under FSDP1 (accelerate's FullyShardedDataParallel) with gradient
// accumulation: no_sync keeps unsharded gradients over the micro-batches.
const fsdp1 = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, zero: 3 },
  training: { seq_len: 4096, micro_batch: 1, global_batch: 64, framework: 'fsdp1', no_sync: true },
};

test('1.6 enums: fsdp1, adamw_foreach, paged_adamw_32bit; peakErrorSigma() and searchMaxOomProbability() are the enums mode\'s', () => {
  const e = memest.enums();
  assert.ok(e.framework.includes('fsdp1'), e.framework.join());
  for (const o of ['adamw_foreach', 'paged_adamw_32bit']) assert.ok(e.optimizer.includes(o), o);
  const tables = memest.request({ mode: 'enums' });
  assert.equal(typeof tables.peak_error_sigma, 'number');
  assert.ok(tables.peak_error_sigma > 0 && tables.peak_error_sigma < 1);
  assert.equal(memest.peakErrorSigma(), tables.peak_error_sigma);
  assert.ok(tables.search_max_oom_probability > 0 && tables.search_max_oom_probability <= 1);
  assert.equal(memest.searchMaxOomProbability(), tables.search_max_oom_probability);
  // the headline's fits band is where the probability of OOM is 5 % (rounded down)
  const fits = memest.peakVerdictBands().fits;
  const atFits = normalTail(Math.log(1 / fits) / memest.peakErrorSigma());
  assert.ok(atFits <= 0.05 + 1e-6, `P(OOM) at the fits band: ${atFits}`);
});

test('1.6 pretrain: margin = capacity - peak, the 90 % band around the peak, the OOM probability from sigma', () => {
  const sigma = memest.peakErrorSigma();
  const tight = { ...oom, parallel: { ...oom.parallel, cp: 1 }, training: { ...oom.training, micro_batch: 1 } };
  const seen = new Set();
  for (const req of [paper, oom, tight, fsdp, fsdp1]) {
    const r = memest.request(req);
    seen.add(r.peak_verdict);
    assert.equal(r.margin_bytes, r.capacity_bytes - r.peak_bytes, req.training.framework ?? 'megatron');
    assert.equal(r.peak_band_bytes.length, 2);
    const [low, high] = r.peak_band_bytes;
    assert.ok(low < r.peak_bytes && r.peak_bytes < high);
    // peak * exp(-/+ 1.645 sigma): the band's ends are symmetric in ln around the peak
    assert.ok(Math.abs(Math.log(high / r.peak_bytes) - Math.log(r.peak_bytes / low)) < 1e-9);
    assert.ok(Math.abs(Math.log(high / r.peak_bytes) / sigma - 1.645) < 0.01, String(Math.log(high / r.peak_bytes) / sigma));
    assert.ok(r.oom_probability >= 0 && r.oom_probability <= 1);
    const want = normalTail(Math.log(r.capacity_bytes / r.peak_bytes) / sigma);
    assert.ok(Math.abs(r.oom_probability - want) < 1e-6, `${r.oom_probability} vs ${want}`);
    // the verdict follows the probability: fits at most 5 %, oom above 50 % (over capacity)
    if (r.peak_verdict === 'fits') assert.ok(r.oom_probability <= 0.05 + 1e-9, String(r.oom_probability));
    if (r.peak_verdict === 'oom') assert.ok(r.oom_probability > 0.5 && r.margin_bytes < 0);
    if (r.peak_verdict === 'tight') assert.ok(r.oom_probability > 0.05 && r.oom_probability <= 0.5);
  }
  assert.deepEqual([...seen].sort(), ['fits', 'oom', 'tight'], 'the requests cover every verdict');
});

test('1.6 pretrain: torch max_memory_allocated / max_memory_reserved and nvidia-smi, per stage and for the peak stage', () => {
  for (const req of [paper, fsdp, fsdp1]) {
    const r = memest.request(req);
    const s = r.stages.find((x) => x.stage === r.peak_stage);
    for (const k of ['torch_max_memory_allocated_bytes', 'torch_max_memory_reserved_bytes', 'nvidia_smi_bytes']) {
      assert.equal(typeof s[k], 'number', k);
      assert.equal(r[k], s[k], `${k}: the response's is the peak stage's`);
    }
    // allocated <= reserved <= what nvidia-smi shows (it adds the CUDA context and paged memory)
    assert.ok(r.torch_max_memory_allocated_bytes <= r.torch_max_memory_reserved_bytes);
    assert.ok(r.torch_max_memory_reserved_bytes < r.nvidia_smi_bytes);
    // the torch figures leave the CUDA context out of the overhead model's allocated / reserved
    const context = s.overheads.context_bytes;
    assert.ok(Math.abs(r.peak_reserved_bytes - context - r.torch_max_memory_reserved_bytes) < 1, req.training.framework);
    assert.ok(Math.abs(r.peak_allocated_bytes - context - r.torch_max_memory_allocated_bytes) < 1, req.training.framework);
    assert.equal(typeof s.overheads.optimizer_step_bytes, 'number');
    assert.equal(typeof s.stack.unsharded_root_bytes, 'number');
  }
  // FSDP1 keeps its root unit unsharded between forward and backward; FSDP2 does not
  const one = memest.request(fsdp1);
  assert.ok(one.stages[0].stack.unsharded_root_bytes > 0);
  assert.equal(memest.request({ ...fsdp1, training: { ...fsdp1.training, framework: 'fsdp' } }).stages[0].stack.unsharded_root_bytes, 0);
});

test('1.6 training fields: each changes the answer where it applies, and pretrainTable() reads them as request() does', () => {
  const fs = { ...fsdp1, training: { seq_len: 4096, micro_batch: 1, global_batch: 64, framework: 'fsdp' } };
  const peak = (training, parallel = {}) => memest.request({ ...fs, parallel: { ...fs.parallel, ...parallel },
    training: { ...fs.training, ...training } }).peak_bytes;
  const base = peak({});
  assert.notEqual(peak({ framework: 'fsdp1', no_sync: true }), peak({ framework: 'fsdp1', no_sync: false }), 'no_sync under fsdp1');
  assert.equal(memest.request({ ...fsdp1, training: { ...fsdp1.training, no_sync: undefined } }).training.no_sync, 'default');
  // (1.11: without grad_dtype, fsdp's gradients take the bf16 parameters' dtype; fp32 differs)
  assert.notEqual(peak({ reduce_dtype: 'fp32' }), base, 'reduce_dtype fp32');
  assert.notEqual(peak({ loss_parallel: false }, { tp: 2 }), peak({}, { tp: 2 }), 'loss_parallel off under tp 2');
  assert.notEqual(peak({ fp8: true, fp8_all_gather: true }), peak({ fp8: true }), 'fp8 all-gather');
  assert.notEqual(peak({ logits_held: true }), base, 'logits held');
  const echoed = memest.request({ ...fs, training: { ...fs.training, reduce_dtype: 'bf16', autocast: false, logits_held: true } }).training;
  assert.equal(echoed.reduce_dtype, 'bf16');
  assert.equal(echoed.autocast, false);
  assert.equal(echoed.logits_held, true);
  const cells = [[8, 1, 1, 1, 1], [8, 2, 1, 1, 1], [16, 1, 1, 1, 2]];
  for (const training of [{ framework: 'fsdp1', no_sync: true }, { reduce_dtype: 'fp16', loss_parallel: false },
    { fp8: true, fp8_all_gather: true, logits_held: true, autocast: true }]) {
    const req = { ...fs, training: { ...fs.training, ...training } };
    const table = memest.pretrainTable(req, cells);
    cells.forEach(([gpus, tp, cp, pp, mbs], i) => {
      const d = memest.request({ ...req, parallel: { ...req.parallel, gpus, tp, cp, pp },
        training: { ...req.training, micro_batch: mbs } });
      assert.equal(table[i].ok, true, JSON.stringify(table[i].error));
      for (const k of ['peak_bytes', 'oom_probability', 'margin_bytes', 'capacity_bytes']) {
        assert.equal(table[i][k], d[k], `${JSON.stringify(training)} cell ${cells[i]}: ${k}`);
      }
    });
  }
});

test('1.6 training fields: refused where they do not apply, the field named', () => {
  const megatron = { ...paper, gpu: 'h100-80gb' };
  const refusal = (training, base = megatron) => memest.answer({ ...base, training: { ...base.training, ...training } });
  for (const [training, field] of [
    [{ reduce_dtype: 'bf16' }, 'training.reduce_dtype'],
    [{ reduce_dtype: 'fp8' }, 'training.reduce_dtype'],
    [{ autocast: true }, 'training.autocast'],
    [{ logits_held: true }, 'training.logits_held'],
    [{ loss_parallel: false }, 'training.loss_parallel'],
    [{ no_sync: true }, 'training.no_sync'],
    [{ fp8_all_gather: true }, 'training.fp8_all_gather'],
    [{ no_sync: 'yes' }, 'training.no_sync'],
  ]) {
    const d = refusal(training);
    assert.equal(d.ok, false, JSON.stringify(training));
    assert.equal(d.error.field, field, JSON.stringify(training));
  }
  // fp8_all_gather needs fsdp with fp8 and sharded parameters
  const noFp8 = refusal({ fp8_all_gather: true }, fsdp1);
  assert.equal(noFp8.error?.field, 'training.fp8_all_gather');
  // quantize_lm_head: qlora only, and only for an untied LM head
  const qlora = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 1 },
    training: { framework: 'pytorch', seq_len: 2048, param_dtype: 'bf16', adapter: { type: 'qlora' } } };
  const q = memest.request(qlora);
  const qh = memest.request({ ...qlora, training: { ...qlora.training, adapter: { type: 'qlora', quantize_lm_head: true } } });
  assert.equal(qh.training.adapter.quantize_lm_head, true);
  assert.ok(qh.adapter.base_weights_bytes < q.adapter.base_weights_bytes, 'the NF4 head is smaller');
  const lora = memest.answer({ ...qlora, training: { ...qlora.training, adapter: { type: 'lora', quantize_lm_head: true } } });
  assert.equal(lora.error?.field, 'training.adapter.quantize_lm_head');
  const tied = memest.models().find((m) => m.tie_word_embeddings);
  assert.ok(tied, 'a preset with a tied head');
  const t = memest.answer({ ...qlora, model: tied.id, training: { ...qlora.training, adapter: { type: 'qlora', quantize_lm_head: true } } });
  assert.equal(t.error?.field, 'training.adapter.quantize_lm_head', JSON.stringify(t.error ?? {}));
});

// 1.9: loss_chunks and the two chunked losses, fsdp_use_orig_params, fp4 and the GPU's fp4 /
// peak_fp4_tflops, the H100 PCIe preset. The bytes are the hand-derived values of
// tests/unit/test_memory_mechanisms_1_9.cpp.
const chunkedLinear = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 1 },
  training: { seq_len: 4096, micro_batch: 1, framework: 'pytorch', recompute: 'full', loss: 'chunked_linear' },
};
const fsdp1Lora = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8, zero: 3 },
  training: { seq_len: 2048, micro_batch: 1, global_batch: 8, framework: 'fsdp1', adapter: { type: 'lora', dtype: 'bf16' } },
};
const nvfp4 = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'b200-180gb', parallel: { gpus: 8, tp: 1, pp: 1 },
  training: { seq_len: 8192, micro_batch: 1, global_batch: 8, recompute: 'full', fp4: true },
};

test('1.9: the new loss names and the H100 PCIe preset come from the library', () => {
  for (const name of ['chunked', 'chunked_lm_head', 'chunked_linear']) assert.ok(memest.enums().loss.includes(name), name);
  assert.ok(memest.gpus().some((g) => g.id === 'h100-pcie-80gb'), 'h100-pcie-80gb');
  assert.equal(memest.request({ ...chunkedLinear, gpu: 'h100-pcie-80gb' }).gpu.profile.fp4, 0);
});

test('1.9 loss_chunks: echoed as the chunks in effect, the loss term at 8 and 16 chunks, pretrainTable() reads it', () => {
  // 4096 tokens x 128256 = 525336576 logits: x 14 / 8 + the fp32 accumulator 4 x 4096 x 4096 =
  // 986447872 bytes at 8 chunks; 459669504 + 67108864 = 526778368 at 16
  const eight = memest.request(chunkedLinear);
  assert.equal(eight.training.loss, 'chunked_linear');
  assert.equal(eight.training.loss_chunks, 8);
  assert.equal(eight.stages[0].stack.loss_bytes, 986447872);
  const req16 = { ...chunkedLinear, training: { ...chunkedLinear.training, loss_chunks: 16 } };
  const sixteen = memest.request(req16);
  assert.equal(sixteen.training.loss_chunks, 16);
  assert.equal(sixteen.stages[0].stack.loss_bytes, 526778368);
  // without recompute and with the step in backward the loss term reaches the peak: the
  // table's cell is the request's
  const none = (chunks) => ({ ...chunkedLinear,
    training: { ...chunkedLinear.training, recompute: 'none', optimizer_in_backward: true, loss_chunks: chunks } });
  const [cell] = memest.pretrainTable(none(16), [[1, 1, 1, 1, 1]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, memest.request(none(16)).peak_bytes);
  assert.ok(cell.peak_bytes < memest.request(none(8)).peak_bytes, 'fewer bytes at 16 chunks');
  // LitGPT's head chunks: 4096 / 128 = 32; a loss that is not chunked echoes 0
  const lit = memest.request({ ...chunkedLinear, training: { ...chunkedLinear.training, loss: 'chunked_lm_head' } });
  assert.equal(lit.training.loss_chunks, 32);
  assert.equal(memest.request({ ...chunkedLinear, training: { ...chunkedLinear.training, loss: 'unfused' } }).training.loss_chunks, 0);
  for (const training of [{ loss: 'unfused', loss_chunks: 4 }, { loss_chunks: -1 }, { loss_chunks: 4097 }]) {
    const d = memest.answer({ ...chunkedLinear, training: { ...chunkedLinear.training, ...training } });
    assert.equal(d.error?.field, 'training.loss_chunks', JSON.stringify(training));
  }
});

test('1.9 fsdp_use_orig_params: the blocks\' frozen weights share the adapters\' flat gradient', () => {
  // adapters wrapped apart: 3407872 x 2 / 8 = 851968 bytes; mixed with the blocks' 6979584000
  // frozen weights: (6979584000 + 3407872) x 2 / 8 = 1745747968
  const apart = memest.request(fsdp1Lora);
  const mixed = memest.request({ ...fsdp1Lora, training: { ...fsdp1Lora.training, fsdp_use_orig_params: true } });
  assert.equal(apart.training.fsdp_use_orig_params, false);
  assert.equal(mixed.training.fsdp_use_orig_params, true);
  assert.equal(apart.stages[0].adapter.adapter_gradients_bytes, 851968);
  assert.equal(mixed.stages[0].adapter.adapter_gradients_bytes, 1745747968);
  assert.equal(mixed.stages[0].gradients_bytes, 1745747968);
  const fsdp2 = memest.answer({ ...fsdp1Lora, training: { ...fsdp1Lora.training, framework: 'fsdp', fsdp_use_orig_params: true } });
  assert.equal(fsdp2.error?.field, 'training.fsdp_use_orig_params');
});

test('1.9 fp4: NVFP4 linears on a B200 under Megatron, refused on an H100 naming training.fp4', () => {
  const fp4 = memest.request(nvfp4);
  const fp8 = memest.request({ ...nvfp4, training: { ...nvfp4.training, fp4: false, fp8: true } });
  assert.equal(fp4.training.fp4, true);
  assert.equal(fp8.training.fp4, false);
  assert.equal(fp4.gpu.profile.fp4, 1);
  assert.equal(fp4.gpu.profile.peak_fp4_tflops, 2 * fp4.gpu.profile.peak_fp8_tflops);
  // 7504658432 linear parameters x (2 - 2 x 0.5625) bytes = 6566576128 bytes less than fp8's copies
  assert.equal(fp8.stages[0].weights_bytes - fp4.stages[0].weights_bytes, 6566576128);
  assert.ok(fp4.throughput.tokens_per_s > fp8.throughput.tokens_per_s);
  assert.equal(memest.answer({ ...nvfp4, gpu: 'h100-80gb' }).error?.field, 'training.fp4');
  assert.equal(memest.answer({ ...nvfp4, training: { ...nvfp4.training, fp8: true } }).error?.field, 'training.fp4');
  assert.equal(memest.answer({ ...nvfp4, gpu: { preset: 'b200-180gb', fp4: 2 } }).error?.field, 'gpu.fp4');
  // a custom profile's fp4 and peak_fp4_tflops are read
  const custom = memest.request({ ...nvfp4, gpu: { preset: 'h100-80gb', fp4: 1, peak_fp4_tflops: 3958 } });
  assert.equal(custom.gpu.profile.peak_fp4_tflops, 3958);
  assert.equal(custom.training.fp4, true);
});

test('1.9 through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  for (const req of [{ ...chunkedLinear, training: { ...chunkedLinear.training, loss_chunks: 16 } },
    { ...fsdp1Lora, training: { ...fsdp1Lora.training, fsdp_use_orig_params: true } }, nvfp4]) {
    const want = await cliAnswer(req);
    if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
    assert.deepEqual(memest.request(req), want);
  }
});

test('1.6 through WASM equals the CLI\'s `memest request`: an FSDP1 + no_sync answer, field for field (when MEMEST_CLI is set)', async (t) => {
  const want = await cliAnswer(fsdp1);
  if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
  assert.equal(want.ok, true, JSON.stringify(want.error));
  const got = memest.request(fsdp1);
  assert.equal(got.oom_probability, want.oom_probability);
  assert.equal(got.margin_bytes, want.margin_bytes);
  assert.deepEqual(got.peak_band_bytes, want.peak_band_bytes);
  for (const k of ['torch_max_memory_allocated_bytes', 'torch_max_memory_reserved_bytes', 'nvidia_smi_bytes']) {
    assert.equal(got[k], want[k], k);
  }
  assert.deepEqual(got, want, 'the whole answer');
  // and a search under a chosen max_oom_probability
  const search = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 8 },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none' }, search: { top: 5, max_oom_probability: 0.5 } };
  assert.deepEqual(memest.request(search), await cliAnswer(search));
});

test('1.6 search: max_oom_probability (default the library\'s), each entry\'s OOM probability, margin and peak_high', () => {
  const search = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 8 },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none' }, search: { top: 50 } };
  const d = memest.request(search);
  assert.equal(d.max_oom_probability, memest.searchMaxOomProbability());
  assert.ok(d.results.length > 0);
  const sigma = memest.peakErrorSigma();
  for (const e of d.results) {
    assert.ok(e.oom_probability <= d.max_oom_probability, `rank ${e.rank}: ${e.oom_probability}`);
    assert.equal(e.margin_bytes, d.gpu.memory_bytes - e.peak_bytes, `rank ${e.rank}`);
    assert.ok(Math.abs(e.peak_high_bytes / e.peak_bytes - Math.exp(1.645 * sigma)) < 1e-3, `rank ${e.rank}`);
  }
  // a stricter limit ranks fewer layouts, each within it; a looser one more
  const strict = memest.request({ ...search, search: { ...search.search, max_oom_probability: 0.01 } });
  const loose = memest.request({ ...search, search: { ...search.search, max_oom_probability: 1 } });
  assert.equal(strict.max_oom_probability, 0.01);
  assert.ok(strict.ranked < d.ranked && d.ranked < loose.ranked, `${strict.ranked} < ${d.ranked} < ${loose.ranked}`);
  assert.ok(strict.results.every((e) => e.oom_probability <= 0.01));
  // out of (0, 1]: refused, naming the field
  for (const bad of [2, 0, -0.1]) {
    const r = memest.answer({ ...search, search: { top: 5, max_oom_probability: bad } });
    assert.equal(r.ok, false, String(bad));
    assert.equal(r.error.code, 'invalid_argument');
    assert.equal(r.error.field, 'search.max_oom_probability');
    assert.match(r.error.message, /search\.max_oom_probability/);
  }
  assert.throws(() => memest.request({ ...search, search: { max_oom_probability: '0.5' } }),
    (e) => e instanceof MemestError && e.code === 'wrong_type' && e.field === 'search.max_oom_probability');
});

test('1.7 training.ddp: one GPU wrapped in DDP counts its buckets, a bucket size alone does not; pretrainTable() reads it as request() does', () => {
  // Llama-3.1-8B under plain PyTorch, fp32 gradients: 4 bytes of DDP buckets per parameter
  const one = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 1, tp: 1, pp: 1 },
    training: { framework: 'pytorch', param_dtype: 'fp32', grad_dtype: 'fp32', buckets: { bucket_cap_mb: 25 } } };
  const alone = memest.request(one);
  assert.equal(alone.training.ddp, 'default');
  assert.equal(alone.stages[0].stack.framework_buffer_bytes, 0);
  const ddp = { ...one, training: { ...one.training, ddp: true } };
  const wrapped = memest.request(ddp);
  assert.equal(wrapped.training.ddp, true);
  assert.ok(wrapped.model.num_parameters > 8e9);
  assert.equal(wrapped.stages[0].stack.framework_buffer_bytes, 4 * wrapped.model.num_parameters);
  assert.ok(wrapped.peak_bytes > alone.peak_bytes);
  const [cell] = memest.pretrainTable(ddp, [[1, 1, 1, 1, 1]]);
  assert.equal(cell.peak_bytes, memest.answer({ ...ddp, training: { ...ddp.training, micro_batch: 1 } }).peak_bytes);
  // refused by name: ddp false with two data-parallel ranks
  const refused = memest.answer({ ...one, parallel: { gpus: 2, tp: 1, pp: 1 }, training: { ...one.training, ddp: false } });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.ddp');
});

// The tiny Nemotron-H derived by hand in tests/unit/test_hybrid.cpp (88472 parameters, all
// active; mixers "M-A-", MLPs "-D-D"), as its config.json text holds it: Python's bare Infinity
// in time_step_limit, as Nemotron-H's released config writes it.
const tinyNemotronH = '{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4, '
  + '"hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2, '
  + '"head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8, '
  + '"mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, '
  + '"use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false, '
  + '"tie_word_embeddings": false, "time_step_limit": [0.0, Infinity]}';
const hybridText = `{"mode": "pretrain", "model": ${tinyNemotronH}, "gpu": "h100-80gb", `
  + '"parallel": {"gpus": 1, "tp": 1, "cp": 1, "pp": 1}, "training": {"seq_len": 256, "micro_batch": 1, "global_batch": 4}}';

test('1.8 a hybrid config.json (Nemotron-H, a bare Infinity in it): 88472 parameters and its layer patterns; the CLI\'s answer (when MEMEST_CLI is set)', async () => {
  const r = memest.request(hybridText);
  assert.equal(r.model.num_parameters, 88472);
  assert.equal(r.model.active_parameters, 88472);
  assert.equal(r.model.mixer_pattern, 'M-A-');
  assert.equal(r.model.mlp_pattern, '-D-D');
  assert.equal(r.model.mamba_num_heads, 8);
  assert.equal(r.stages.length, 1);
  assert.equal(r.stages[0].layers, 4);
  // the page's route: the config as an object (its Infinity read as null), and the model echo
  // given back as the model, are the same model
  const asObject = JSON.parse(hybridText.replace('Infinity', 'null'));
  assert.deepEqual(memest.request(asObject), r);
  assert.equal(memest.request({ ...asObject, model: r.model }).peak_bytes, r.peak_bytes);
  // one table cell per layout, as the page's layouts table asks; cp 2 over the Mamba-2 scan is
  // Megatron-Core's all-to-all head split (the single estimate's peak), and under FSDP the
  // library's refusal, naming parallel.cp
  const [one, cp2] = memest.pretrainTable(asObject, [[1, 1, 1, 1, 1], [2, 1, 2, 1, 1]]);
  assert.equal(one.ok, true);
  assert.equal(one.peak_bytes, r.peak_bytes);
  assert.equal(cp2.ok, true);
  const split = memest.answer({ ...asObject, parallel: { gpus: 2, tp: 1, cp: 2, pp: 1 } });
  assert.equal(split.ok, true);
  assert.equal(cp2.peak_bytes, split.peak_bytes);
  assert.ok(split.throughput.step.cp_comm > 0);
  const fsdp = { ...asObject, training: { ...asObject.training, framework: 'fsdp' } };
  const [, cpFsdp] = memest.pretrainTable(fsdp, [[1, 1, 1, 1, 1], [2, 1, 2, 1, 1]]);
  assert.equal(cpFsdp.ok, false);
  assert.equal(cpFsdp.error.field, 'parallel.cp');
  assert.equal(cpFsdp.error.code, 'unsupported');
  const refused = memest.answer({ ...fsdp, parallel: { gpus: 2, cp: 2 } });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'parallel.cp');
  const want = await cliAnswer(hybridText);
  if (want) assert.deepEqual(r, want, 'the CLI\'s whole answer');
});

test('1.14 LoRA on the mixers: in_proj and out_proj are library targets; on the tiny Nemotron-H\'s Mamba-2 mixer 4672 adapter parameters, 13376 with Megatron-Bridge\'s targets; the CLI\'s answer (when MEMEST_CLI is set)', async () => {
  assert.deepEqual(memest.enums().lora_target.slice(10, 12), ['in_proj', 'out_proj']);
  const asObject = JSON.parse(hybridText.replace('Infinity', 'null'));
  const with_ = (training) => ({ ...asObject, training: { ...asObject.training, ...training } });
  // in_proj 64 -> 328 at rank 8: 3136; out_proj 128 -> 64: 1536 (tests/unit/test_hybrid.cpp)
  const peft = with_({ framework: 'pytorch', adapter: { type: 'lora', rank: 8, targets: ['in_proj', 'out_proj'] } });
  const r = memest.request(peft);
  assert.equal(r.ok, true);
  assert.equal(r.trainable_parameters, 4672);
  const bridge = memest.request(with_({ framework: 'megatron', adapter: { type: 'lora', rank: 8, dtype: 'bf16',
    targets: ['q_proj', 'o_proj', 'up_proj', 'down_proj', 'in_proj', 'out_proj'] } }));
  assert.equal(bridge.trainable_parameters, 13376);
  const dense = memest.answer({ ...peft, model: 'llama-3.1-8b' });
  assert.equal(dense.ok, false);
  assert.equal(dense.error.field, 'training.adapter.targets');
  const want = await cliAnswer(peft);
  if (want) assert.deepEqual(r, want, 'the CLI\'s whole answer');
});

// 1.10: flash-attn's cross-entropy (loss flash_attn), fp8 parameters and LoRA under Megatron. The
// bytes are the hand-derived values of tests/unit/test_memory_mechanisms_1_10.cpp and
// tests/unit/test_megatron_lora.cpp.
const mpt7b = {
  mode: 'pretrain',
  model: { model_type: 'gpt_neox', hidden_size: 4096, num_hidden_layers: 32, num_attention_heads: 32,
    intermediate_size: 16384, vocab_size: 50368, max_position_embeddings: 65536, hidden_act: 'gelu',
    attention_bias: false, mlp_bias: false, tie_word_embeddings: true, use_parallel_residual: false },
  gpu: 'a100-80gb', parallel: { gpus: 8, tp: 1, pp: 1, zero: 3, sp: false },
  training: { framework: 'fsdp', seq_len: 4096, micro_batch: 16, global_batch: 256, recompute: 'full',
    param_dtype: 'fp32', grad_dtype: 'fp32', optimizer: 'adamw', loss: 'flash_attn' },
};
const megatronLora = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8, tp: 2, pp: 1, zero: 1 },
  training: { seq_len: 4096, micro_batch: 1, global_batch: 64, framework: 'megatron',
    adapter: { type: 'lora', rank: 16, dtype: 'bf16',
      targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] } },
};

test('1.10 flash_attn: the library\'s loss name, 4 bytes per bf16 logit, refused under megatron', () => {
  assert.ok(memest.enums().loss.includes('flash_attn'), 'flash_attn in enums().loss');
  assert.equal(memest.enums().loss[8], 'flash_attn', 'MEMEST_LOSS_FLASH_ATTN = 8');
  // 16 x 4096 tokens x 50368 = 3300917248 bf16 logits: 4 bytes each + 4 x 65536 = 13203931136
  const r = memest.request(mpt7b);
  assert.equal(r.training.loss, 'flash_attn');
  assert.equal(r.stages[0].stack.loss_bytes, 13203931136);
  const [cell] = memest.pretrainTable(mpt7b, [[8, 1, 1, 1, 16]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, r.peak_bytes, 'pretrainTable() reads the loss as request() does');
  const megatron = memest.answer({ ...mpt7b, parallel: { ...mpt7b.parallel, zero: 1 },
    training: { ...mpt7b.training, framework: 'megatron', param_dtype: 'bf16' } });
  assert.equal(megatron.error?.field, 'training.loss', JSON.stringify(megatron.error ?? {}));
});

test('1.10 LoRA under Megatron: the adapters as one tensor-parallel rank holds them', () => {
  // tp 2 (dp 4): 32 layers x 688128 = 22020096 adapter parameters a rank; bf16 weights 44040192,
  // fp32 main gradients 88080384, main copy and moments 12 B over dp 4 = 66060288; the whole
  // model 32 x 1114112 = 35651584
  const r = memest.request(megatronLora);
  const ad = r.stages[0].adapter;
  assert.equal(ad.trainable_parameters, 22020096);
  assert.equal(ad.adapter_weights_bytes, 44040192);
  assert.equal(ad.adapter_gradients_bytes, 88080384);
  assert.equal(ad.adapter_optimizer_bytes, 66060288);
  assert.equal(r.trainable_parameters, 35651584);
  const [cell] = memest.pretrainTable(megatronLora, [[8, 2, 1, 1, 1]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, r.peak_bytes, 'pretrainTable() reads the adapter as request() does');
  // peft's fp32 adapters are refused: Megatron builds them in params_dtype
  const fp32 = memest.answer({ ...megatronLora, training: { ...megatronLora.training,
    adapter: { ...megatronLora.training.adapter, dtype: 'fp32' } } });
  assert.equal(fp32.error?.field, 'training.adapter.dtype', JSON.stringify(fp32.error ?? {}));
});

test('1.10 fp8 parameters under Megatron: one transposed fp8 copy beside the Float8Tensor', () => {
  const fp8 = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8, tp: 1, pp: 1, zero: 1 },
    training: { framework: 'megatron', seq_len: 4096, micro_batch: 1, global_batch: 64, fp8: true, param_dtype: 'bf16' } };
  assert.equal(memest.request(fp8).stages[0].weights_bytes, 31069839360);
  assert.equal(memest.request({ ...fp8, training: { ...fp8.training, param_dtype: 'fp8' } }).stages[0].weights_bytes,
    16585859072);
});

test('1.10 through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  for (const req of [mpt7b, megatronLora]) {
    const want = await cliAnswer(req);
    if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
    assert.deepEqual(memest.request(req), want);
  }
});

// 1.11: Megatron-Core's recompute modules (training.recompute_modules) on the hand-derived values
// of tests/unit/test_recompute_modules.cpp: a small qwen3_moe (h 64, 4 MoE layers, 8 experts of
// 32, top-2) at s 16, tp 2 with SP, selective recomputation. Per layer the routed parts 320 +
// 4096 + 3072 + 2112 = 9600 bytes and the pre-MLP norm's output 1024.
const smallQwen3Moe = {
  model_type: 'qwen3_moe', hidden_size: 64, num_hidden_layers: 4, num_attention_heads: 4, num_key_value_heads: 4,
  head_dim: 16, intermediate_size: 256, moe_intermediate_size: 32, num_experts: 8, num_experts_per_tok: 2,
  vocab_size: 100, max_position_embeddings: 64, decoder_sparse_step: 1, mlp_only_layers: [], tie_word_embeddings: false,
};
const recomputeModules = (modules) => ({
  mode: 'pretrain', model: smallQwen3Moe, gpu: 'h100-80gb', parallel: { gpus: 2, tp: 2, pp: 1, zero: 1, sp: true },
  training: { framework: 'megatron', seq_len: 16, micro_batch: 1, global_batch: 4, recompute: 'selective',
    ...(modules ? { recompute_modules: modules } : {}) },
});
// LLMem's Algorithm 1 on Llama-3.1-8B, 8 x A100 80GB, 2048 tokens: 98.8 % of capacity
const finetuneTight = { mode: 'finetune', model: 'llama-3.1-8b', gpu: 'a100-80gb', parallel: { gpus: 8 },
  training: { seq_len: 2048 }, finetune: { method: 'auto' } };

test('1.11 recompute_modules: the library\'s names, what each drops, the echo, pretrainTable() reads them', () => {
  assert.deepEqual(memest.enums().recompute_module,
    ['core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp', 'moe', 'shared_experts']);
  const plain = memest.request(recomputeModules(null));
  assert.deepEqual(plain.training.recompute_modules, ['core_attn']);
  assert.equal(plain.stages[0].experts.activations_bytes, 4 * 9600);
  const moe = memest.request(recomputeModules(['moe']));
  assert.deepEqual(moe.training.recompute_modules, ['moe']);
  assert.equal(plain.stages[0].activations_bytes - moe.stages[0].activations_bytes, 4 * 9600);
  const both = memest.request(recomputeModules(['layernorm', 'moe']));
  assert.equal(plain.stages[0].activations_bytes - both.stages[0].activations_bytes, 4 * (9600 + 1024));
  assert.ok(both.peak_bytes < plain.peak_bytes);
  const [cell] = memest.pretrainTable(recomputeModules(['layernorm', 'moe']), [[2, 2, 1, 1, 1]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, both.peak_bytes, 'pretrainTable() reads recompute_modules as request() does');
  assert.equal(memest.answer(recomputeModules(['moe', 'attn'])).error?.field, 'training.recompute_modules[1]');
  assert.equal(memest.answer(recomputeModules([])).error?.field, 'training.recompute_modules');
  assert.equal(memest.answer(recomputeModules(['mla_up_proj'])).error?.field, 'training.recompute_modules');
});

test('1.12 finetune answers a mixture-of-experts model (Mixtral-8x7B, by hand as the C++ test)', () => {
  const r = memest.request({ mode: 'finetune', model: 'mixtral-8x7b', gpu: 'v100-16gb', parallel: { gpus: 8 },
    training: { seq_len: 512 },
    finetune: { method: 'cdp', batch: 1, page_bytes: 1, chunk_bytes: 2 * 64 * 1048576,
                flash_attention: true, gradient_checkpointing: false } });
  assert.equal(r.ok, true);
  assert.equal(r.model.num_parameters, 46702792704);
  // LLMem's block keeps 13 h-wide bytes per token, the sparse block 262244 bytes per token
  assert.equal(r.parts.m_out, (13 * 4096 + 262244) * 512 * 32 + 512 * 4096 * 2);
});

test('1.11 finetune: peak_verdict beside LLMem\'s verdict (98.8 % of capacity is tight)', () => {
  const r = memest.request(finetuneTight);
  assert.equal(r.verdict, 'fits');
  assert.equal(r.peak_verdict, 'tight');
  assert.ok(r.peak_bytes / r.capacity_bytes > 0.98 && r.peak_bytes / r.capacity_bytes < 0.99);
});

test('1.11 through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  for (const req of [recomputeModules(['layernorm', 'moe']), finetuneTight]) {
    const want = await cliAnswer(req);
    if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
    assert.deepEqual(memest.request(req), want);
  }
});

// 1.12: Liger-Kernel (training.use_liger_kernel) on the hand-derived values of
// tests/unit/test_liger.cpp: Llama-3.1-8B on one H100, seq 2048, micro batch 1, global batch 8,
// no recomputation, ZeRO 0. Under pytorch 32 layers save 61440 B per token less (200840 ->
// 139400): 32 * 61440 * 2048 = 4026531840 B; under fsdp (torchtitan's block) only the SiLU
// output, 32 * 2 * 14336 * 2048 = 1879048192 B.
const liger = (framework, on, model = 'llama-3.1-8b') => ({
  mode: 'pretrain', model, gpu: 'h100-80gb', parallel: { gpus: 1, tp: 1, pp: 1, zero: 0 },
  training: { framework, seq_len: 2048, micro_batch: 1, global_batch: 8, recompute: 'none',
    ...(on === undefined ? {} : { use_liger_kernel: on }) },
});

test('1.12 use_liger_kernel: what it drops, the echo, pretrainTable() reads it, refusals by field', () => {
  const plain = memest.request(liger('pytorch'));
  const on = memest.request(liger('pytorch', true));
  assert.equal(plain.training.use_liger_kernel, false);
  assert.equal(on.training.use_liger_kernel, true);
  assert.equal(plain.stages[0].activations_bytes - on.stages[0].activations_bytes, 4026531840);
  const fsdp = memest.request(liger('fsdp', false));
  const fsdpOn = memest.request(liger('fsdp', true));
  assert.equal(fsdp.stages[0].activations_bytes - fsdpOn.stages[0].activations_bytes, 1879048192);
  const [cell] = memest.pretrainTable(liger('pytorch', true), [[1, 1, 1, 1, 1]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, on.peak_bytes, 'pretrainTable() reads use_liger_kernel as request() does');
  assert.equal(memest.answer(liger('megatron', true)).error?.field, 'training.use_liger_kernel');
  assert.equal(memest.answer(liger('pytorch', true, 'gpt2')).error?.field, 'training.use_liger_kernel');
  assert.equal(memest.answer(liger('pytorch', 1)).error?.field, 'training.use_liger_kernel');
});

test('1.12 through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  for (const req of [liger('pytorch', true), liger('fsdp', true)]) {
    const want = await cliAnswer(req);
    if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
    assert.deepEqual(memest.request(req), want);
  }
});

// 1.15: how the optimizer stores what it updates (training.master_weights and
// training.optimizer_state_dtype, the parts of a derived K) on the hand-derived values of
// tests/unit/test_optimizer_storage.cpp: Llama-3.1-8B (8,030,261,248 parameters) on 8 x H100
// under megatron, zero 1 (the distributed optimizer shards K over 8: 1,003,782,656 parameters'
// worth each), seq 2048, micro batch 1, global batch 8, no recomputation. By default an fp32
// master beside the bf16 weights and fp32 moments: 4 + 2 * 4 = 12 B per parameter,
// 12 * 1003782656 = 12045391872 B; the remainders over bf16 weights: 2 + 8 = 10 B, 10037826560 B
// (the master 2 * 1003782656 = 2007565312 B); no master and bf16 moments: 2 * 2 = 4 B,
// 4015130624 B.
const storage = (training = {}, framework = 'megatron') => ({
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8, tp: 1, pp: 1, zero: 1 },
  training: { framework, seq_len: 2048, micro_batch: 1, global_batch: 8, recompute: 'none', ...training },
});

test('1.15 master_weights and optimizer_state_dtype: the hand values, the echoes, pretrainTable() reads them', () => {
  const base = memest.request(storage());
  assert.equal(base.stages[0].optimizer_bytes, 12045391872);
  assert.equal(base.stages[0].stack.master_weights_bytes, 4015130624);
  assert.equal(base.training.master_weights, 'fp32');
  assert.equal(base.training.optimizer_state_dtype, 'fp32');
  const rem = memest.request(storage({ master_weights: 'remainder' }));
  assert.equal(rem.stages[0].optimizer_bytes, 10037826560);
  assert.equal(rem.stages[0].stack.master_weights_bytes, 2007565312);
  assert.equal(rem.training.master_weights, 'remainder');
  assert.equal(rem.training.optimizer_state_dtype, 'fp32');
  assert.equal(rem.stages[0].weights_bytes, base.stages[0].weights_bytes, 'the weights do not move');
  assert.equal(rem.stages[0].activations_bytes, base.stages[0].activations_bytes, 'the activations do not move');
  assert.ok(base.peak_bytes - rem.peak_bytes >= 2007565312, 'the peak falls by at least the 2 bytes');
  const none = memest.request(storage({ master_weights: 'none', optimizer_state_dtype: 'bf16' }));
  assert.equal(none.stages[0].optimizer_bytes, 4015130624);
  assert.equal(none.stages[0].stack.master_weights_bytes, 0);
  assert.equal(none.training.master_weights, 'none');
  assert.equal(none.training.optimizer_state_dtype, 'bf16');
  // deepspeed keeps a master too: the remainders there are 10 B as well
  assert.equal(memest.request(storage({ master_weights: 'remainder' }, 'deepspeed')).stages[0].optimizer_bytes, 10037826560);
  // the layouts table reads both as request() does (cell: gpus, tp, cp, pp, micro batch)
  const [cell] = memest.pretrainTable(storage({ master_weights: 'none', optimizer_state_dtype: 'bf16' }), [[8, 1, 1, 1, 1]]);
  assert.equal(cell.ok, true, JSON.stringify(cell.error));
  assert.equal(cell.peak_bytes, none.peak_bytes, 'pretrainTable() reads master_weights and optimizer_state_dtype');
});

test('1.15 the master_weights names: the C enumeration and the field registry\'s choices agree', () => {
  const want = ['auto', 'fp32', 'bf16', 'fp16', 'remainder', 'none'];
  const core = memest.core;
  const which = 18;  // MEMEST_ENUM_MASTER_WEIGHTS
  assert.equal(core._memest_enum_count(which), want.length);
  want.forEach((name, v) => assert.equal(core.UTF8ToString(core._memest_enum_name(which, v)), name, `master_weights[${v}]`));
  assert.equal(core._memest_enum_name(which, want.length), 0, 'NULL past the end');
  const fields = memest.request({ mode: 'fields' }).fields;
  const master = fields.find((f) => f.path === 'training.master_weights');
  assert.equal(master.kind, 'enum');
  assert.equal(master.default, 'auto');
  assert.deepEqual(master.choices, want);
  const moments = fields.find((f) => f.path === 'training.optimizer_state_dtype');
  assert.equal(moments.kind, 'dtype');
  for (const d of ['fp32', 'bf16', 'fp16', 'fp8']) assert.ok(moments.choices.includes(d), d);
});

test('1.15 master_weights and optimizer_state_dtype: refusals by field', () => {
  const field = (req) => {
    const d = memest.answer(req);
    assert.equal(d.ok, false, `refused: ${JSON.stringify(req.training)}`);
    return d.error.field;
  };
  // only megatron and deepspeed take a master other than auto
  for (const fw of ['fsdp', 'fsdp1', 'pytorch']) {
    assert.equal(field(storage({ master_weights: 'fp32' }, fw)), 'training.master_weights', fw);
  }
  // K given whole beside them
  assert.equal(field(storage({ master_weights: 'remainder', optimizer_bytes: 12 })), 'training.master_weights');
  assert.equal(field(storage({ optimizer_state_dtype: 'bf16', optimizer_bytes: 12 })), 'training.optimizer_state_dtype');
  // moments the optimizer stores its own way
  for (const optimizer of ['adamw_8bit', 'sgd']) {
    assert.equal(field(storage({ optimizer_state_dtype: 'bf16', optimizer })), 'training.optimizer_state_dtype', optimizer);
  }
  // remainders need bf16 weights; fp32 weights are their own master
  assert.equal(field(storage({ master_weights: 'remainder', fp8: true, param_dtype: 'fp8' })), 'training.master_weights');
  assert.equal(field(storage({ master_weights: 'fp32', param_dtype: 'fp32' })), 'training.master_weights');
  // not a name, not a string
  assert.equal(field(storage({ master_weights: 'fp64' })), 'training.master_weights');
  assert.equal(field(storage({ master_weights: 1 })), 'training.master_weights');
  assert.equal(field(storage({ optimizer_state_dtype: 'int4' })), 'training.optimizer_state_dtype');
  // the search reads them too, and refuses them under fsdp as pretraining does
  const search = { mode: 'search', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8 },
    training: { framework: 'fsdp', seq_len: 2048, global_batch: 8, master_weights: 'fp32' }, search: { top: 3 } };
  assert.equal(field(search), 'training.master_weights');
});

test('1.15 through WASM equals the CLI\'s `memest request` (when MEMEST_CLI is set)', async (t) => {
  const reqs = [storage(), storage({ master_weights: 'remainder' }),
    storage({ master_weights: 'none', optimizer_state_dtype: 'bf16' }),
    storage({ master_weights: 'remainder' }, 'deepspeed'),
    storage({ master_weights: 'fp32' }, 'fsdp'), storage({ optimizer_state_dtype: 'bf16', optimizer: 'sgd' })];
  const refused = ['training.master_weights', 'training.optimizer_state_dtype'];
  for (const [i, req] of reqs.entries()) {
    const want = await cliAnswer(req);
    if (!want) { t.skip('MEMEST_CLI not set (scripts/test.d/30-web.sh sets it)'); return; }
    if (i < 4) {
      assert.equal(want.ok, true, JSON.stringify(want.error));
      assert.deepEqual(memest.request(req), want, JSON.stringify(req.training));
    } else {
      // a refusal: the same error document (answer() adds its status, which the CLI does not write)
      assert.equal(want.ok, false);
      assert.equal(want.error.field, refused[i - 4]);
      const { status, ...got } = memest.answer(req);
      assert.equal(typeof status, 'number');
      assert.deepEqual(got, want, JSON.stringify(req.training));
    }
  }
});
