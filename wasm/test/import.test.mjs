// The launch-file import (mode "import") in the WebAssembly build: yaml-cpp (compiled from
// Debian's source package) and toml++ (header-only) inside the module. Real files from
// tests/data/launch/; a bad file must be refused with the field and the library's message.
// Run: node --test wasm/test/   (after wasm/build.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadMemest, MemestError } from '../node.mjs';

const memest = await loadMemest();
const launch = (p) => readFileSync(fileURLToPath(new URL(`../../tests/data/launch/${p}`, import.meta.url)), 'utf8');

const TOML = 'torchtitan/llama3-8b-64xa100-op-sac/llama3_8b.toml';

test('import: a torchtitan TOML (toml++) becomes a pretrain request, each field with its origin', () => {
  const r = memest.request({ mode: 'import', files: [{ name: 'llama3_8b.toml', text: launch(TOML) }],
    gpu: 'a100-80gb', gpus: 64 });
  assert.equal(r.ok, true);
  assert.equal(r.mode, 'import');
  assert.equal(r.format, 'torchtitan');
  assert.deepEqual(r.files, [{ name: 'llama3_8b.toml', format: 'torchtitan' }]);
  const q = r.request;
  assert.equal(q.mode, 'pretrain');
  assert.equal(q.gpu, 'a100-80gb');
  assert.equal(q.model, 'llama-3.1-8b');
  assert.equal(q.parallel.gpus, 64);
  assert.equal(q.parallel.tp, 1);
  assert.equal(q.parallel.pp, 1);
  assert.equal(q.training.micro_batch, 1);
  assert.equal(q.training.seq_len, 8192);
  assert.equal(q.training.recompute, 'op_selective');
  assert.equal(q.training.framework, 'fsdp');
  // origins: the file's line 33 (training.seq_len = 8192), line 41 (tensor_parallel_degree), the
  // flags, a framework default with the file that defines it
  assert.deepEqual(r.origins['training.seq_len'],
    { from: 'file', file: 'llama3_8b.toml', line: 33, key: 'training.seq_len' });
  assert.equal(r.origins['parallel.tp'].from, 'file');
  assert.equal(r.origins['parallel.tp'].line, 41);
  assert.equal(r.origins['parallel.tp'].key, 'parallelism.tensor_parallel_degree');
  assert.deepEqual(r.origins.gpu, { from: 'flag', flag: '--gpu' });
  assert.equal(r.origins['parallel.gpus'].from, 'flag');
  const defaults = Object.values(r.origins).filter((o) => o.from === 'default');
  assert.ok(defaults.length > 0, 'some fields are torchtitan defaults');
  for (const o of defaults) {
    assert.equal(o.framework, 'torchtitan');
    assert.match(o.defined_in, /\.py$/);
  }
  // every request field has an origin
  const flat = [];
  const walk = (o, p) => {
    for (const [k, v] of Object.entries(o)) {
      if (v && typeof v === 'object' && !Array.isArray(v)) walk(v, `${p}${k}.`);
      else flat.push(`${p}${k}`);
    }
  };
  walk(q, '');
  for (const f of flat) assert.ok(r.origins[f], `an origin for ${f}`);
  assert.ok(Array.isArray(r.warnings));
  for (const w of r.warnings) assert.equal(typeof w.message, 'string');
  assert.equal(r.estimate, undefined, 'no estimate unless asked');
});

test('import with estimate: the same answer as mode pretrain on the imported request', () => {
  const doc = { mode: 'import', files: [{ name: 'llama3_8b.toml', text: launch(TOML) }], gpu: 'a100-80gb', gpus: 64 };
  const r = memest.request({ ...doc, estimate: true });
  assert.equal(r.estimate.mode, 'pretrain');
  const p = memest.request(r.request);
  assert.equal(r.estimate.peak_bytes, p.peak_bytes);
  assert.ok(p.peak_bytes > 1e9 && p.peak_bytes < p.capacity_bytes * 2, String(p.peak_bytes));
  // a field given beside the file wins over it, and says so
  const set = memest.request({ ...doc, seq_len: 4096 });
  assert.equal(set.request.training.seq_len, 4096);
  assert.equal(set.origins['training.seq_len'].from, 'flag');
});

test('import: YAML and JSON through yaml-cpp (two files of one run: axolotl YAML + DeepSpeed JSON)', () => {
  const dir = 'axolotl/mixtral-8x7b-qlora-deepspeed-zero2';
  const r = memest.request({ mode: 'import', gpu: 'a100-80gb', gpus: 2, files: [
    { name: 'mixtral.yml', text: launch(`${dir}/mixtral.yml`) }, { name: 'zero2.json', text: launch(`${dir}/zero2.json`) }] });
  assert.equal(r.files.length, 2);
  assert.equal(r.request.parallel.gpus, 2);
  const fromFiles = new Set(Object.values(r.origins).filter((o) => o.from === 'file').map((o) => o.file));
  assert.ok(fromFiles.has('mixtral.yml'), [...fromFiles].join(', '));
  // a key read from a YAML or JSON file carries its line (yaml-cpp's marks)
  const keyed = Object.values(r.origins).filter((x) => x.from === 'file' && x.key);
  assert.ok(keyed.some((o) => o.file === 'mixtral.yml'), 'keys of the YAML file');
  for (const o of keyed) {
    assert.ok(Number.isInteger(o.line) && o.line >= 1, `a line mark from yaml-cpp: ${JSON.stringify(o)}`);
    const lines = launch(`${dir}/${o.file}`).split('\n');
    assert.ok(o.line <= lines.length, `${o.file}:${o.line} is inside the file`);
  }
});

test('import: no GPU in the files and none given: the library names gpu and --gpu', () => {
  const d = memest.answer({ mode: 'import', files: [{ name: 'llama3_8b.toml', text: launch(TOML) }], gpus: 64 });
  assert.equal(d.ok, false);
  assert.equal(d.error.field, 'gpu');
  assert.match(d.error.message, /^gpu: .*--gpu/);
  assert.throws(() => memest.request({ mode: 'import', files: [{ name: 'llama3_8b.toml', text: launch(TOML) }] }),
    (e) => e instanceof MemestError && e.field === 'gpu');
});

test('import: a bad file is refused with its field and a message, not a crash', () => {
  const bad = [
    { name: 'deep.toml', text: `${'['.repeat(100)}\n` },
    { name: 'deep.yaml', text: `${'['.repeat(100)}\n` },
    { name: 'deep.json', text: `${'{"a":'.repeat(100)}1${'}'.repeat(100)}` },
    { name: 'blob.bin', text: Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0xff, 0xfe, 0x80, 0x90, 0x01]).toString('latin1') },
    { name: 'broken.yaml', text: 'a: [1, 2\nb: {' },
  ];
  for (const file of bad) {
    const d = memest.answer({ mode: 'import', files: [file], gpu: 'a100-80gb', gpus: 8 });
    assert.equal(d.ok, false, `${file.name}: refused`);
    assert.equal(typeof d.error.code, 'string');
    assert.ok(d.error.field.startsWith('files'), `${file.name}: field ${d.error.field}`);
    assert.ok(d.error.message.startsWith(`${d.error.field}: `), `${file.name}: ${d.error.message}`);
    assert.ok(d.error.message.length > d.error.field.length + 10, d.error.message);
  }
  const deep = memest.answer({ mode: 'import', files: [bad[0]], gpu: 'a100-80gb', gpus: 8 });
  assert.match(deep.error.message, /deep\.toml/);
  // the module is still healthy after the refusals
  assert.equal(memest.request({ mode: 'import', files: [{ name: 'llama3_8b.toml', text: launch(TOML) }],
    gpu: 'a100-80gb', gpus: 64 }).request.training.seq_len, 8192);
});

test('emit: a layout written back as torchtitan TOML keys', () => {
  const r = memest.request({ mode: 'emit', format: 'torchtitan', request: {
    mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb', parallel: { gpus: 8, tp: 2 }, training: { seq_len: 4096, framework: 'fsdp' } } });
  assert.equal(r.format, 'torchtitan');
  assert.ok(Array.isArray(r.settings) && r.settings.length > 0);
  const tp = r.settings.find((s) => s.key.endsWith('tensor_parallel_degree'));
  assert.ok(tp, JSON.stringify(r.settings));
  assert.equal(Number(tp.value), 2);
  assert.match(r.text, /tensor_parallel_degree\s*=\s*2/);
});
