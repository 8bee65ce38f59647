// End-to-end tests of the "Training stack" section (README "Training stack"): the built page
// (web/dist) in Debian's headless Chromium, against the memest CLI for the same requests.
// Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI (MEMEST_CLI).
//
// A test that expects a result fails when the page shows an error instead (expectResult); one
// that expects the library's refusal fails unless the page shows that very message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browser, cli, cliPretrain, expectResult, g2, page, probe, RESULTS, settle, show,
  usePage } from './harness.mjs';

// Llama-3.1-8B on 8 x H100 under FSDP2 zero 3 with torchtitan's per-op recomputation and an
// unfused loss: the page's state (URL hash keys, written here independently of the page) and
// the same run as `memest pretrain` options.
const FSDP_HASH = new URLSearchParams({ m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1',
  pp: '1', vpp: '1', zero: '3', seq: '4096', mbs: '2', gbs: '16', rc: 'op_selective', fw: 'fsdp',
  loss: 'unfused' }).toString();
const FSDP_ARGS = ['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '8', '--tp', '1', '--cp', '1',
  '--pp', '1', '--zero', '3', '--seq-len', '4096', '--micro-batch', '2', '--global-batch', '16',
  '--recompute', 'op_selective', '--framework', 'fsdp', '--loss', 'unfused'];

usePage();

const recomputeOptions = () => page.$$eval('#recompute option', (os) => os.map((o) => ({ value: o.value, hidden: o.hidden })));

test('an FSDP request: the page shows the CLI\'s peak, allocated, reserved, host memory and named parts', async () => {
  const want = cliPretrain(FSDP_ARGS);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.equal(want.training.framework, 'fsdp');
  await show(`#${FSDP_HASH}`);
  await expectResult('fsdp');
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.textContent('#peak-allocated'), `${g2(want.peak_allocated_bytes)} GiB`);
  assert.equal(await page.textContent('#peak-reserved'), `${g2(want.peak_reserved_bytes)} GiB`);
  assert.equal(await page.textContent('#host-memory'), `${g2(want.host_bytes)} GiB`);
  assert.notEqual(want.peak_allocated_bytes, want.peak_reserved_bytes);
  const parts = await page.$$eval('#stack-parts li', (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));
  const stage = want.stages[want.peak_stage];
  assert.deepEqual(parts, Object.entries(stage.stack).map(([k, v]) => [k, `${g2(v)} GiB`]));
  assert.ok(stage.stack.framework_buffer_bytes > 0, 'FSDP buffers');
  // the form holds the stack, and the request differs from megatron's (the figures would not match)
  assert.equal(await page.inputValue('#framework'), 'fsdp');
  assert.equal(await page.inputValue('#loss'), 'unfused');
  assert.equal(await page.inputValue('#recompute'), 'op_selective');
  const megatron = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, zero: 3 }, training: { seq_len: 4096, micro_batch: 2, global_batch: 16 } });
  assert.notEqual(g2(megatron.peak_bytes), g2(want.peak_bytes));
  await page.screenshot({ path: `${RESULTS}stack-fsdp.png`, fullPage: true });
});

test('op_selective is offered only where the library takes it; chosen in the form, the page equals the CLI', async () => {
  await show('#m=llama-3.1-8b&g=h100-80gb&gpus=8&tp=1&pp=1&zero=3&seq=4096&mbs=2&gbs=16');
  await expectResult('megatron');
  const tables = cli({ mode: 'enums' });
  // every recompute name is the library's; under megatron op_selective is hidden
  let options = await recomputeOptions();
  assert.deepEqual(options.map((o) => o.value), tables.enums.recompute);
  assert.deepEqual(options.filter((o) => o.hidden).map((o) => o.value), ['op_selective']);
  assert.deepEqual(await page.$$eval('#framework option', (os) => os.map((o) => o.value)), tables.enums.framework);
  assert.deepEqual(await page.$$eval('#optimizer option', (os) => os.map((o) => o.value)), tables.enums.optimizer);
  assert.deepEqual(await page.$$eval('#loss option', (os) => os.map((o) => o.value)), tables.enums.loss);
  // choose FSDP: op_selective is offered; choose it and an unfused loss
  let before = await probe();
  await page.selectOption('#framework', 'fsdp');
  await settle(before);
  await expectResult('fsdp chosen');
  options = await recomputeOptions();
  assert.deepEqual(options.filter((o) => o.hidden), []);
  before = await probe();
  await page.selectOption('#recompute', 'op_selective');
  await settle(before);
  before = await probe();
  await page.selectOption('#loss', 'unfused');
  await settle(before);
  await page.waitForFunction(() => location.hash.includes('fw=fsdp') && location.hash.includes('rc=op_selective')
    && location.hash.includes('loss=unfused'));
  await expectResult('typed fsdp');
  const want = cliPretrain(FSDP_ARGS);
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  assert.equal(await page.textContent('#peak-allocated'), `${g2(want.peak_allocated_bytes)} GiB`);
});

test('a refused combination shows the library\'s message next to its field, and no figures', async () => {
  // op_selective under megatron (a shared link can hold it): the message under Recomputation
  await show('#m=llama-3.1-8b&g=h100-80gb&gpus=8&tp=1&pp=1&zero=3&seq=4096&mbs=2&gbs=16&rc=op_selective');
  const want = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3 },
    training: { seq_len: 4096, micro_batch: 2, global_batch: 16, recompute: 'op_selective', flash_attention: true } });
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'training.recompute');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-recompute'), want.error.message);
  assert.equal(await page.getAttribute('#recompute', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#status'), `Not computed: ${want.error.message}`);
  assert.equal(await page.textContent('#peak'), '—');
  assert.equal(await page.textContent('#peak-allocated'), '—');
  // the option the form holds stays visible, so the reader sees what the message is about
  assert.equal((await recomputeOptions()).find((o) => o.value === 'op_selective').hidden, false);
  await page.screenshot({ path: `${RESULTS}stack-refused.png` });

  // fp8 on an A100 (no fp8 tensor cores): the message under the fp8 checkbox
  await show(`#${new URLSearchParams({ m: 'llama-3.1-8b', g: 'a100-80gb', gpus: '8', tp: '1', pp: '1', fw: 'fsdp', fp8: '1' })}`);
  const fp8 = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-80gb',
    parallel: { gpus: 8, tp: 1, pp: 1 }, training: { framework: 'fsdp', fp8: true } });
  assert.equal(fp8.ok, false);
  assert.equal(fp8.error.field, 'training.fp8');
  assert.equal(await page.textContent('#err-fp8'), fp8.error.message);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');

  // offloading parameters without sharded ones: the message under the offload checkboxes
  await show(`#${new URLSearchParams({ m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', pp: '1', zero: '1', fw: 'deepspeed', op: '1' })}`);
  const off = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, pp: 1, zero: 1 }, training: { framework: 'deepspeed', offload: { params: true } } });
  assert.equal(off.ok, false);
  assert.equal(off.error.field, 'training.offload.params');
  assert.equal(await page.textContent('#err-offload-params'), off.error.message);

  // back to a valid stack: the error clears and the result is the CLI's
  const before = await probe();
  await page.selectOption('#zero', '3');
  await settle(before);
  await expectResult('deepspeed zero 3 offloading parameters');
  // the page's request in full (its defaults for what the hash leaves out)
  const ok = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3 },
    training: { seq_len: 8192, micro_batch: 1, global_batch: 1024, recompute: 'none', flash_attention: true,
      framework: 'deepspeed', offload: { params: true } } });
  assert.equal(ok.ok, true);
  assert.ok(ok.host_bytes > 0);
  assert.equal(await page.textContent('#host-memory'), `${g2(ok.host_bytes)} GiB`);
});

test('the stack travels in the URL: a fresh page restores it', async () => {
  await show(`#${FSDP_HASH}&oo=1&opt=adamw&pd=bf16`);
  await expectResult('fsdp with offload');
  const other = await browser.context.newPage();
  await other.goto(page.url());
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.equal(await other.inputValue('#framework'), 'fsdp');
  assert.equal(await other.inputValue('#optimizer'), 'adamw');
  assert.equal(await other.inputValue('#param-dtype'), 'bf16');
  assert.equal(await other.isChecked('#offload-optimizer'), true);
  assert.equal(await other.textContent('#host-memory'), await page.textContent('#host-memory'));
  assert.notEqual(await other.textContent('#host-memory'), '0.00 GiB');
  await other.close();
});

test('torch.compile parts: the library\'s names; an old link\'s cmp=1 is "all"; "model" equals the CLI', async () => {
  // Llama-3.1-8B on one H100 under plain PyTorch, accumulating 1024 sequences (the gradients are
  // alive at the loss's backward, the peak, where "model" and "all" differ): a link of before 1.4
  // (the checkbox, cmp=1)
  const hash = new URLSearchParams({ m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '1', tp: '1', cp: '1', pp: '1',
    vpp: '1', seq: '2048', mbs: '1', gbs: '1024', fw: 'pytorch', cmp: '1' }).toString();
  const args = ['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '1', '--tp', '1', '--cp', '1', '--pp', '1',
    '--seq-len', '2048', '--micro-batch', '1', '--global-batch', '1024', '--framework', 'pytorch'];
  await show(`#${hash}`);
  await expectResult('compile all');
  const tables = cli({ mode: 'enums' });
  assert.deepEqual(await page.$$eval('#compile option', (os) => os.map((o) => o.value)), tables.enums.compile);
  assert.equal(await page.inputValue('#compile'), 'all');
  const all = cliPretrain([...args, '--compile']);
  assert.equal(all.ok, true, `the CLI answers: ${JSON.stringify(all.error)}`);
  assert.equal(all.training.compile_components, 'all');
  assert.equal(await page.textContent('#peak-allocated'), `${g2(all.peak_allocated_bytes)} GiB`);
  // choose "model": the blocks compiled, the loss eager
  const before = await probe();
  await page.selectOption('#compile', 'model');
  await settle(before);
  await page.waitForFunction(() => location.hash.includes('cmp=model'));
  await expectResult('compile model');
  const model = cliPretrain([...args, '--compile-components', 'model']);
  assert.equal(model.ok, true, `the CLI answers: ${JSON.stringify(model.error)}`);
  assert.equal(model.training.compile_components, 'model');
  assert.notEqual(g2(model.peak_allocated_bytes), g2(all.peak_allocated_bytes));
  assert.equal(await page.textContent('#peak'), `${g2(model.peak_bytes)} GiB (stage ${model.peak_stage})`);
  assert.equal(await page.textContent('#peak-allocated'), `${g2(model.peak_allocated_bytes)} GiB`);
  assert.equal(await page.textContent('#peak-reserved'), `${g2(model.peak_reserved_bytes)} GiB`);
  const parts = await page.$$eval('#stack-parts li', (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));
  assert.deepEqual(parts, Object.entries(model.stages[model.peak_stage].stack).map(([k, v]) => [k, `${g2(v)} GiB`]));
});
