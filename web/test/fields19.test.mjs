// End-to-end tests of the C ABI 1.9 request fields in the "Training stack" section (state.js
// FIELDS_19): training.loss_chunks (a chunked loss), training.fsdp_use_orig_params (fsdp1 with a
// LoRA adapter) and training.fp4 (megatron). The built page (web/dist) in Debian's headless
// Chromium, against the memest CLI (`memest request`) for the same requests, written here
// independently of the page. Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI
// (MEMEST_CLI).
//
// For each field: its control is hidden where the library does not read it; set in the form, the
// page's peak (and its stage) is the CLI's for the request with the field, which differs from the
// CLI's without it; the URL key carries it, and a link with the key shows it set, with the same
// figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { change, cli, expectResult, g2, hashOf, page, RESULTS, show, usePage } from './harness.mjs';

usePage();

/** The pretrain request the page sends for a state of these keys (sp on, no recomputation,
 *  FlashAttention: the page's defaults), with `training` extras. */
function request({ model = 'llama-3.1-8b', gpu, gpus, tp = 1, pp = 1, zero, seq = 4096, mbs = 1, gbs }, training = {}) {
  return {
    mode: 'pretrain', model, gpu,
    parallel: { gpus, tp, cp: 1, pp, vpp: 1, sp: true, zero, ep: 1, etp: 0 },
    training: { seq_len: seq, micro_batch: mbs, global_batch: gbs, recompute: 'none', flash_attention: true, ...training },
  };
}

/** The peak as the page shows it for a CLI answer: bytes and stage. */
const peakText = (answer) => `${g2(answer.peak_bytes)} GiB (stage ${answer.peak_stage})`;

/** The CLI's answers with and without a field: both computed, the peak (as shown) differs. */
function withAndWithout(base, extra, field, want) {
  const without = cli(base);
  const withIt = cli({ ...base, training: { ...base.training, ...extra } });
  assert.equal(without.ok, true, `without ${field}: ${JSON.stringify(without.error)}`);
  assert.equal(withIt.ok, true, `with ${field}: ${JSON.stringify(withIt.error)}`);
  assert.deepEqual(withIt.training[field], want, `the response echoes training.${field}`);
  assert.notEqual(peakText(withIt), peakText(without), `${field} changes the peak`);
  return { without, withIt };
}

async function expectPeak(answer, what) {
  await expectResult(what);
  assert.equal(await page.textContent('#peak'), peakText(answer), what);
}

test('loss chunks: shown for a chunked loss; 16 chunks of chunked_linear is the CLI\'s answer, the URL key lc', async () => {
  const state = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '1', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '0',
    seq: '4096', mbs: '1', gbs: '8', fw: 'pytorch' };
  const base = request({ gpu: 'h100-80gb', gpus: 1, zero: 0, gbs: 8 }, { framework: 'pytorch', loss: 'chunked_linear' });
  const { without, withIt } = withAndWithout(base, { loss_chunks: 16 }, 'loss_chunks', 16);
  // the loss list is the library's, the 1.9 chunked losses among them
  const losses = await page.$$eval('#loss option', (os) => os.map((o) => o.value));
  assert.deepEqual(losses, cli({ mode: 'enums' }).enums.loss);
  for (const name of ['chunked_lm_head', 'chunked_linear']) assert.ok(losses.includes(name), name);
  // an unchunked loss: no control
  await show(hashOf(state));
  await expectResult('pytorch, the default loss');
  assert.equal(await page.isVisible('#loss-chunks'), false, 'hidden for the default loss');
  await change(() => page.selectOption('#loss', 'chunked_linear'));
  await expectPeak(without, 'chunked_linear, its own chunks');
  assert.equal(await page.isVisible('#loss-chunks'), true, 'shown for chunked_linear');
  for (const name of ['chunked', 'chunked_lm_head']) {
    await change(() => page.selectOption('#loss', name));
    assert.equal(await page.isVisible('#loss-chunks'), true, `shown for ${name}`);
  }
  await change(() => page.selectOption('#loss', 'chunked_linear'));
  await change(() => page.fill('#loss-chunks', '16'));
  await page.waitForFunction(() => location.hash.includes('lc=16'));
  await expectPeak(withIt, 'chunked_linear, 16 chunks');
  // the link round-trips
  await show(hashOf({ ...state, loss: 'chunked_linear', lc: '16' }));
  await expectPeak(withIt, 'the link with lc=16');
  assert.equal(await page.inputValue('#loss-chunks'), '16');
  // another loss: hidden, not sent (the library would refuse chunks for it)
  await change(() => page.selectOption('#loss', 'auto'));
  assert.equal(await page.isVisible('#loss-chunks'), false);
  await expectResult('the default loss with lc still in the state');
});

test('use_orig_params: shown under fsdp1 with a LoRA adapter; checked is the CLI\'s answer, the URL key uop', async () => {
  const state = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '3',
    seq: '4096', mbs: '1', gbs: '8', fw: 'fsdp1' };
  const base = request({ gpu: 'h100-80gb', gpus: 8, zero: 3, gbs: 8 },
    { framework: 'fsdp1', adapter: { type: 'lora', dtype: 'bf16' } });
  const { without, withIt } = withAndWithout(base, { fsdp_use_orig_params: true }, 'fsdp_use_orig_params', true);
  await show(hashOf(state));
  await expectResult('fsdp1 without an adapter');
  assert.equal(await page.isVisible('#use-orig-params'), false, 'hidden without an adapter');
  await show(hashOf({ ...state, ad: 'lora', adt: 'bf16' }));
  await expectPeak(without, 'fsdp1, LoRA bf16');
  assert.equal(await page.isVisible('#use-orig-params'), true, 'shown under fsdp1 with LoRA');
  assert.equal(await page.isChecked('#use-orig-params'), false);
  await change(() => page.check('#use-orig-params'));
  await page.waitForFunction(() => location.hash.includes('uop=1'));
  await expectPeak(withIt, 'fsdp1, LoRA bf16, use_orig_params');
  await show(hashOf({ ...state, ad: 'lora', adt: 'bf16', uop: '1' }));
  await expectPeak(withIt, 'the link with uop=1');
  assert.equal(await page.isChecked('#use-orig-params'), true);
  // under FSDP2 it is hidden and not sent
  await change(() => page.selectOption('#framework', 'fsdp'));
  assert.equal(await page.isVisible('#use-orig-params'), false, 'hidden under fsdp');
  await expectResult('fsdp with uop still in the state');
});

test('NVFP4: shown under megatron; checked on a B200 is the CLI\'s answer, the URL key fp4', async () => {
  const state = { m: 'llama-3.1-8b', g: 'b200-180gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '1',
    seq: '4096', mbs: '1', gbs: '64' };
  const base = request({ gpu: 'b200-180gb', gpus: 8, zero: 1, gbs: 64 });
  const { without, withIt } = withAndWithout(base, { fp4: true }, 'fp4', true);
  await show(hashOf(state));
  await expectPeak(without, 'megatron on B200');
  assert.equal(await page.isVisible('#fp4'), true, 'shown under megatron');
  assert.equal(await page.isChecked('#fp4'), false);
  await change(() => page.check('#fp4'));
  await page.waitForFunction(() => location.hash.includes('fp4=1'));
  await expectPeak(withIt, 'megatron on B200, fp4');
  await show(hashOf({ ...state, fp4: '1' }));
  await expectPeak(withIt, 'the link with fp4=1');
  assert.equal(await page.isChecked('#fp4'), true);
  await page.screenshot({ path: `${RESULTS}fields19-fp4.png`, fullPage: true });
  // on a GPU without fp4 the library refuses the field: its message next to the checkbox
  const refused = cli(request({ gpu: 'h100-80gb', gpus: 8, zero: 1, gbs: 64 }, { fp4: true }));
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.fp4');
  await show(hashOf({ ...state, g: 'h100-80gb', fp4: '1' }));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-fp4'), refused.error.message);
  await show(hashOf({ ...state, fp4: '1' }));
  await expectPeak(withIt, 'back on B200 with fp4=1');
  // under another framework it is hidden and not sent
  await change(() => page.selectOption('#framework', 'fsdp'));
  assert.equal(await page.isVisible('#fp4'), false, 'hidden under fsdp');
  await expectResult('fsdp with fp4 still in the state');
});

test('suggestions that know adapters: "offload parameters" shows its host memory, and Use applies the nested field', async () => {
  // QLoRA Llama-3.1-70B on 2 x RTX 4090 under fsdp1 with full recomputation: the NF4 base leaves
  // no room; the library suggests offloading the base's parameters (training.offload.params, a
  // nested field of the suggestion's set) and says how much host memory that needs.
  const state = { m: 'llama-3.1-70b', g: 'rtx4090-24gb', gpus: '2', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '3',
    seq: '2048', mbs: '1', gbs: '2', fw: 'fsdp1', rc: 'full', ad: 'qlora' };
  const base = request({ model: 'llama-3.1-70b', gpu: 'rtx4090-24gb', gpus: 2, zero: 3, seq: 2048, gbs: 2 },
    { framework: 'fsdp1', recompute: 'full', adapter: { type: 'qlora' } });
  const want = cli(base);
  assert.equal(want.ok, true, JSON.stringify(want.error));
  assert.equal(want.peak_verdict, 'oom');
  const offload = want.suggestions.find((s) => s.change === 'offload parameters');
  assert.ok(offload, 'the library suggests offloading the parameters');
  assert.deepEqual(offload.set, { training: { offload: { params: true } } });
  assert.ok(offload.host_bytes > 0);
  await show(hashOf(state));
  await expectPeak(want, 'QLoRA 70B on 2 x RTX 4090');
  const rows = await page.$$eval('#suggestions li', (lis) => lis.map((li) => ({
    change: li.querySelector('.change').textContent, figures: li.querySelector('.figures').textContent,
    set: li.querySelector('.set').textContent, use: !li.querySelector('button.use').disabled })));
  const row = rows.find((r) => r.change === 'offload parameters');
  assert.ok(row, JSON.stringify(rows));
  assert.equal(row.set, 'training.offload.params = true');
  assert.ok(row.figures.includes(`host ${g2(offload.host_bytes)} GiB`), row.figures);
  assert.equal(row.use, true, 'Use is enabled for a nested field the form has');
  // Use: the form takes the change and the page answers as the CLI does for the changed request
  const applied = cli({ ...base, training: { ...base.training, offload: { params: true } } });
  assert.equal(applied.peak_bytes, offload.peak_bytes);
  const index = rows.indexOf(row);
  await change(() => page.click(`#suggestions li:nth-child(${index + 1}) button.use`));
  await expectPeak(applied, 'after Use');
  assert.equal(await page.isChecked('#offload-params'), true);
});
