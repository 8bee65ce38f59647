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

test('gpus() lists the GPU presets with capacities', () => {
  const gpus = memest.gpus();
  const a100 = gpus.find((g) => g.id === 'a100-40gb');
  assert.equal(a100.memory_bytes, 40 * GiB);
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
  assert.equal(r.capacity_bytes, 40 * GiB);
  const s0 = r.stages[0];
  assert.ok(Math.abs(s0.weights_bytes + s0.gradients_bytes + s0.optimizer_bytes + s0.activations_bytes - s0.total_bytes) < 1);
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
