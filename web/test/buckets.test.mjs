// End-to-end tests of the framework buffer sizes in the "Training stack" section
// (training.buckets, README "Training stack"): the built page (web/dist) in Debian's headless
// Chromium, against the memest CLI for the same requests (its own options, `memest pretrain
// --reduce-bucket-size ...`, and `memest request`). Needs what e2e.test.mjs needs: web/dist
// (vite build) and the CLI (MEMEST_CLI).
//
// A test that expects a result fails when the page shows an error instead (expectResult); one
// that expects the library's refusal fails unless the page shows that very message, no figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browser, change, cli, cliPretrain, expectResult, g2, hashOf, page, RESULTS, show,
  usePage } from './harness.mjs';
import { BUCKETS } from '../src/state.js';

// Llama-3.1-8B on 8 x H100 under DeepSpeed ZeRO-1: the page's state (URL hash keys, written here
// independently of the page) and the same run as `memest pretrain` options.
const DS = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1',
  zero: '1', seq: '4096', mbs: '1', gbs: '64', fw: 'deepspeed' };
const DS_ARGS = ['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '8', '--tp', '1', '--cp', '1',
  '--pp', '1', '--zero', '1', '--seq-len', '4096', '--micro-batch', '1', '--global-batch', '64',
  '--framework', 'deepspeed'];
// Gemma-3-1B (small enough for replicated states) on 8 x H100 under plain PyTorch DDP.
const DDP = { m: 'gemma-3-1b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1',
  zero: '0', seq: '2048', mbs: '1', gbs: '64', fw: 'pytorch' };
const ddpArgs = (gpus = '8', gbs = '64') => ['-m', 'gemma-3-1b', '-g', 'h100-80gb', '--gpus', gpus, '--tp', '1',
  '--cp', '1', '--pp', '1', '--zero', '0', '--seq-len', '2048', '--micro-batch', '1', '--global-batch', gbs,
  '--framework', 'pytorch'];
usePage();

/** The bucket controls the page shows, by id. */
const shownBuckets = () => page.$$eval(BUCKETS.map((b) => `#${b.id}`).join(','),
  (inputs) => inputs.filter((i) => i.checkVisibility()).map((i) => i.id));

/** The peak stage's framework buffers as the page shows them. */
const pageBuffers = () => page.textContent('#stack-parts li[data-part="framework_buffer_bytes"] .part-value');

/** Fails unless the page shows the CLI's figures for `want` (a pretrain answer). */
async function expectFigures(want, what) {
  assert.equal(want.ok, true, `${what}: the CLI answers: ${JSON.stringify(want.error)}`);
  await expectResult(what);
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`, what);
  assert.equal(await page.textContent('#peak-allocated'), `${g2(want.peak_allocated_bytes)} GiB`, what);
  assert.equal(await page.textContent('#peak-reserved'), `${g2(want.peak_reserved_bytes)} GiB`, what);
  const stage = want.stages[want.peak_stage];
  assert.equal(await pageBuffers(), `${g2(stage.stack.framework_buffer_bytes)} GiB`, what);
}

test('the bucket controls are those the form\'s framework reads; their frameworks are the library\'s', async () => {
  const frameworks = cli({ mode: 'enums' }).enums.framework;
  for (const b of BUCKETS) {
    for (const fw of b.frameworks) assert.ok(frameworks.includes(fw), `${b.field}: ${fw} is a library framework`);
  }
  const ddp = ['bucket-cap-mb', 'bucket-view'];
  const ds = ['reduce-bucket-size', 'allgather-bucket-size', 'prefetch-bucket-size', 'max-live-parameters',
    'persistence-threshold'];
  const want = { megatron: [], pytorch: ddp, fsdp: ddp, deepspeed: ds };
  for (const [fw, ids] of Object.entries(want)) {
    await show(hashOf({ ...DS, fw, zero: fw === 'pytorch' ? '0' : '1' }));
    await expectResult(fw);
    assert.deepEqual((await shownBuckets()).sort(), [...ids].sort(), fw);
    assert.equal(await page.isVisible('#buckets-hint'), ids.length > 0, `${fw}: the hint`);
    // empty: the framework's default (the library's), not a number of the page's
    for (const id of ids.filter((i) => i !== 'bucket-view')) assert.equal(await page.inputValue(`#${id}`), '', `${fw} ${id}`);
  }
});

test('DeepSpeed reduce_bucket_size typed into the form: the page equals memest pretrain --reduce-bucket-size', async () => {
  const base = cliPretrain(DS_ARGS);
  const want = cliPretrain([...DS_ARGS, '--reduce-bucket-size', '1e8']);
  // the bucket changes the answer (else the comparison below would prove nothing)
  assert.notEqual(g2(want.stages[want.peak_stage].stack.framework_buffer_bytes),
    g2(base.stages[base.peak_stage].stack.framework_buffer_bytes));
  assert.notEqual(g2(want.peak_bytes), g2(base.peak_bytes));
  await show(hashOf(DS));
  await expectFigures(base, 'deepspeed, default buckets');
  await change(() => page.fill('#reduce-bucket-size', '1e8'));
  await page.waitForFunction(() => location.hash.includes('rbs=1e8'));
  await expectFigures(want, 'deepspeed, reduce_bucket_size 1e8');
  await page.screenshot({ path: `${RESULTS}buckets-deepspeed.png`, fullPage: true });

  // the state travels in the URL: a fresh page restores the bucket and its figures
  const other = await browser.context.newPage();
  await other.goto(page.url());
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.equal(await other.inputValue('#reduce-bucket-size'), '1e8');
  assert.equal(await other.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  await other.close();

  // ZeRO-3's prefetch bucket and live parameters, from the URL: the page equals memest request
  const z3 = { ...DS, zero: '3', pbs: '1e6', mlp: '2e7', ppt: '1' };
  await show(hashOf(z3));
  const request = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3 },
    training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true,
      framework: 'deepspeed' } };
  const z3Default = cli(request);
  const z3Want = cli({ ...request, training: { ...request.training,
    buckets: { stage3_prefetch_bucket_size: 1e6, stage3_max_live_parameters: 2e7, stage3_param_persistence_threshold: 1 } } });
  assert.notEqual(g2(z3Want.stages[0].stack.framework_buffer_bytes), g2(z3Default.stages[0].stack.framework_buffer_bytes));
  await expectFigures(z3Want, 'deepspeed zero 3 buckets');
});

test('the layout search sends the buckets too: its best layout\'s peak is memest request\'s', async () => {
  const search = (buckets) => cli({ mode: 'search', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, sp: true },
    training: { seq_len: 4096, global_batch: 64, recompute: 'none', flash_attention: true, framework: 'deepspeed',
      ...(buckets ? { buckets } : {}) }, search: { top: 10 } });
  const base = search();
  const want = search({ reduce_bucket_size: 1e8 });
  assert.equal(want.ok, true, JSON.stringify(want.error));
  assert.notEqual(g2(want.results[0].peak_bytes), g2(base.results[0].peak_bytes));
  await show(hashOf({ ...DS, rbs: '1e8', tab: 'search' }));
  await expectResult('search with a bucket');
  assert.equal(await page.isVisible('#reduce-bucket-size'), true);
  const status = await page.textContent('#status');
  assert.ok(status.includes(`peak ${g2(want.results[0].peak_bytes)} GiB of`), status);
});

test('DDP gradient_as_bucket_view checked in the form: the buffers go, as memest pretrain --gradient-as-bucket-view', async () => {
  const base = cliPretrain(ddpArgs());
  const want = cliPretrain([...ddpArgs(), '--gradient-as-bucket-view']);
  assert.ok(base.stages[base.peak_stage].stack.framework_buffer_bytes > 0, 'DDP keeps a second copy of the gradients');
  assert.equal(want.stages[want.peak_stage].stack.framework_buffer_bytes, 0);
  await show(hashOf(DDP));
  await expectFigures(base, 'ddp');
  await change(() => page.check('#bucket-view'));
  await page.waitForFunction(() => location.hash.includes('gbv=1'));
  await expectFigures(want, 'ddp, gradient_as_bucket_view');
  // one process (1.7): a bucket size alone wraps nothing (no buckets: the figures are the CLI's
  // for that request); "DDP on one GPU" checked is `--ddp on`: DDP's buckets appear
  const single = cliPretrain(ddpArgs('1', '8'));
  const capped = cliPretrain([...ddpArgs('1', '8'), '--bucket-cap-mb', '50']);
  const wrapped = cliPretrain([...ddpArgs('1', '8'), '--bucket-cap-mb', '50', '--ddp', 'on']);
  assert.equal(single.stages[0].stack.framework_buffer_bytes, 0);
  assert.equal(capped.stages[0].stack.framework_buffer_bytes, 0, 'a bucket size alone wraps no process');
  assert.equal(capped.training.ddp, 'default');
  assert.equal(capped.stages[0].gradients_bytes, single.stages[0].gradients_bytes);
  assert.equal(wrapped.training.ddp, true);
  assert.ok(wrapped.stages[0].stack.framework_buffer_bytes > 0, 'DDP on one GPU: buckets counted');
  assert.ok(wrapped.peak_bytes > capped.peak_bytes);
  await show(hashOf({ ...DDP, gpus: '1', gbs: '8' }));
  await expectFigures(single, 'one process');
  assert.equal(await page.isVisible('#ddp-one-gpu'), true, 'the DDP checkbox is shown under pytorch');
  assert.equal(await page.isChecked('#ddp-one-gpu'), false);
  await change(() => page.fill('#bucket-cap-mb', '50'));
  await page.waitForFunction(() => location.hash.includes('bcm=50'));
  await expectFigures(capped, 'one process, bucket_cap_mb 50 alone');
  assert.equal(await pageBuffers(), `${g2(0)} GiB`, 'no buckets without DDP');
  await change(() => page.check('#ddp-one-gpu'));
  await page.waitForFunction(() => location.hash.includes('ddp=1'));
  await expectFigures(wrapped, 'one process, bucket_cap_mb 50, DDP on one GPU');
  assert.notEqual(await pageBuffers(), `${g2(0)} GiB`);
  // a shared link carries the box; under megatron it is hidden and not sent
  await show(hashOf({ ...DDP, gpus: '1', gbs: '8', bcm: '50', ddp: '1' }));
  await expectFigures(wrapped, 'the link with ddp=1');
  assert.equal(await page.isChecked('#ddp-one-gpu'), true);
  await change(() => page.selectOption('#framework', 'megatron'));
  assert.equal(await page.isVisible('#ddp-one-gpu'), false, 'hidden under megatron');
  await expectResult('megatron with the box still set in the state');
});

test('a refused bucket shows the library\'s message next to it, and no figures; another framework\'s is not sent', async () => {
  await show(hashOf(DS));
  await expectResult('deepspeed');
  await change(() => page.fill('#reduce-bucket-size', '-5'));
  const want = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 1 },
    training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true,
      framework: 'deepspeed', buckets: { reduce_bucket_size: -5 } } });
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'training.buckets.reduce_bucket_size');
  assert.match(want.error.message, /reduce_bucket_size/);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-reduce-bucket-size'), want.error.message);
  assert.equal(await page.getAttribute('#reduce-bucket-size', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#status'), `Not computed: ${want.error.message}`);
  for (const id of ['#peak', '#peak-allocated', '#peak-reserved', '#capacity']) assert.equal(await page.textContent(id), '—', id);
  assert.equal(await page.locator('#stack-parts li').count(), 0);
  assert.equal(await page.locator('#stages-table tbody tr').count(), 0);
  // nor in the layouts table, once it is computed for the refused request
  await page.waitForFunction(() => !window.__memest.gridPending);
  assert.equal(await page.locator('#layout-table td.cell').count(), 0);
  await page.screenshot({ path: `${RESULTS}buckets-refused.png` });

  // under pytorch DeepSpeed's buckets are hidden and not sent: the answer is pytorch's own
  await change(() => page.selectOption('#framework', 'pytorch'));
  await page.waitForFunction(() => location.hash.includes('rbs=-5') && location.hash.includes('fw=pytorch'));
  const pytorch = cliPretrain(['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '8', '--tp', '1', '--cp', '1',
    '--pp', '1', '--zero', '1', '--seq-len', '4096', '--micro-batch', '1', '--global-batch', '64',
    '--framework', 'pytorch']);
  await expectFigures(pytorch, 'pytorch with a hidden deepspeed bucket');
  assert.equal(await page.isVisible('#reduce-bucket-size'), false);
  // back to deepspeed: the value the form holds is refused again, then cleared: the default
  await change(() => page.selectOption('#framework', 'deepspeed'));
  assert.equal(await page.textContent('#err-reduce-bucket-size'), want.error.message);
  await change(() => page.fill('#reduce-bucket-size', ''));
  await expectFigures(cliPretrain(DS_ARGS), 'deepspeed, bucket cleared');
  assert.ok(!page.url().includes('rbs='), page.url());
});
