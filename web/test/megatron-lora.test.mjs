// End-to-end tests of LoRA under Megatron and flash-attn's loss (1.10) on the built page
// (web/dist) in Debian's headless Chromium, against the memest CLI for the same requests.
// Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI (MEMEST_CLI).
//
// The form is driven through its own controls (framework, tp, the LoRA fieldset, the loss
// select); the library alone decides what is refused, and the page shows its answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { change, cli, expectResult, g2, hashOf, page, RESULTS, show, usePage } from './harness.mjs';

const ALL_LINEAR = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

// Llama-3.1-8B on 8 x H100, tp 1 under FSDP2 (the starting point, a framework that is not
// Megatron), 4096 tokens, micro-batch 1, global batch 64: the page's state keys, written here
// independently of the page.
const START = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1',
  zero: '1', seq: '4096', mbs: '1', gbs: '64', fw: 'fsdp', pd: 'bf16' };
/** The request the page sends for the form's Megatron LoRA run (its defaults for what the
 *  form leaves alone): tests/unit/test_megatron_lora.cpp's run. */
const megatronLora = {
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 2, cp: 1, pp: 1, vpp: 1, sp: true, zero: 1, ep: 1, etp: 0 },
  training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true,
    framework: 'megatron', param_dtype: 'bf16',
    adapter: { type: 'lora', rank: 16, targets: ALL_LINEAR, dtype: 'bf16' } },
};

usePage();

const peakText = (r) => `${g2(r.peak_bytes)} GiB (stage ${r.peak_stage})`;
const adapterParts = () => page.$$eval('#adapter-parts li',
  (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));
const stackParts = () => page.$$eval('#stack-parts li',
  (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));

test('LoRA under Megatron set through the form (tp 2, bf16 adapters, rank 16, seven targets): the page shows the CLI\'s peak and adapter parts', async () => {
  const want = cli(megatronLora);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  // the hand-derived values of tests/unit/test_megatron_lora.cpp: one tp rank's adapters
  const stage = want.stages.find((s) => s.stage === want.peak_stage);
  assert.equal(stage.adapter.trainable_parameters, 22020096);
  assert.equal(stage.adapter.adapter_weights_bytes, 44040192);
  assert.equal(stage.adapter.adapter_gradients_bytes, 88080384);
  assert.equal(stage.adapter.adapter_optimizer_bytes, 66060288);
  assert.equal(want.trainable_parameters, 35651584);

  await show(hashOf(START));
  await expectResult('fsdp, no adapter');
  await change(() => page.selectOption('#framework', 'megatron'));
  await change(() => page.fill('#tp', '2'));
  await expectResult('megatron, tp 2, no adapter');
  await change(() => page.selectOption('#adapter-type', 'lora'));
  // the adapter dtype left at its default: the library derives the model's param_dtype under
  // megatron (ABI 1.16); an explicit fp32 is refused under the adapter dtype
  await expectResult('megatron lora, the default adapter dtype');
  const fp32 = cli({ ...megatronLora, training: { ...megatronLora.training, adapter: { type: 'lora', dtype: 'fp32' } } });
  assert.equal(fp32.ok, false);
  assert.equal(fp32.error.field, 'training.adapter.dtype');
  await change(() => page.selectOption('#adapter-dtype', 'fp32'));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-adapter-dtype'), fp32.error.message);
  await change(() => page.selectOption('#adapter-dtype', 'bf16'));
  await expectResult('megatron lora, bf16, peft\'s defaults');
  await change(() => page.fill('#lora-rank', '16'));
  for (const t of ALL_LINEAR.filter((x) => !['q_proj', 'v_proj'].includes(x))) {
    await change(() => page.check(`#lora-target-${t}`));
  }
  await expectResult('megatron lora through the form');

  assert.equal(await page.inputValue('#framework'), 'megatron');
  assert.equal(await page.inputValue('#tp'), '2');
  assert.equal(await page.textContent('#peak'), peakText(want));
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  assert.equal(await page.getAttribute('#total-params', 'data-value'), String(want.model.num_parameters));
  assert.equal(await page.isVisible('#adapter-box'), true);
  assert.deepEqual(await adapterParts(), Object.entries(stage.adapter)
    .filter(([k, v]) => k.endsWith('_bytes') && typeof v === 'number').map(([k, v]) => [k, `${g2(v)} GiB`]));
  // the URL holds the run: a shared link restores the same answer
  const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));
  assert.equal(hash.get('fw'), null, 'megatron is the default framework');
  assert.equal(hash.get('tp'), '2');
  assert.equal(hash.get('ad'), 'lora');
  assert.equal(hash.get('adt'), 'bf16');
  assert.equal(hash.get('lr'), '16');
  assert.deepEqual(hash.get('lt')?.split(','), ALL_LINEAR);
  // not the answer without the adapter, nor at tp 1 (the figures would otherwise prove nothing)
  const full = cli({ ...megatronLora, training: { ...megatronLora.training, adapter: undefined } });
  assert.notEqual(g2(full.peak_bytes), g2(want.peak_bytes));
  const tp1 = cli({ ...megatronLora, parallel: { ...megatronLora.parallel, tp: 1 } });
  assert.equal(tp1.ok, true, JSON.stringify(tp1.error));
  assert.notEqual(g2(tp1.peak_bytes), g2(want.peak_bytes));
  await page.screenshot({ path: `${RESULTS}megatron-lora.png`, fullPage: true });
});

test('loss flash_attn, chosen in the library-filled loss select: the CLI\'s answer; under megatron the library\'s refusal next to the field', async () => {
  const tables = cli({ mode: 'enums' });
  assert.ok(tables.enums.loss.includes('flash_attn'), 'the CLI lists flash_attn');
  const fsdp = { ...START, zero: '3', mbs: '2', gbs: '16' };
  await show(hashOf(fsdp));
  await expectResult('fsdp');
  assert.deepEqual(await page.$$eval('#loss option', (os) => os.map((o) => o.value)), tables.enums.loss);
  await change(() => page.selectOption('#loss', 'flash_attn'));
  await expectResult('fsdp, flash_attn');
  const request = {
    mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3, ep: 1, etp: 0 },
    training: { seq_len: 4096, micro_batch: 2, global_batch: 16, recompute: 'none', flash_attention: true,
      framework: 'fsdp', param_dtype: 'bf16', loss: 'flash_attn' },
  };
  const want = cli(request);
  assert.equal(want.ok, true, JSON.stringify(want.error));
  assert.equal(want.training.loss, 'flash_attn');
  const stage = want.stages.find((s) => s.stage === want.peak_stage);
  assert.equal(await page.textContent('#peak'), peakText(want));
  assert.deepEqual(await stackParts(), Object.entries(stage.stack).map(([k, v]) => [k, `${g2(v)} GiB`]));
  assert.equal(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('loss'), 'flash_attn');
  // 4 bytes per bf16 logit against the default loss's: the loss term differs (else the
  // comparison would prove nothing)
  const auto = cli({ ...request, training: { ...request.training, loss: undefined } });
  assert.notEqual(g2(auto.stages[want.peak_stage].stack.loss_bytes), g2(stage.stack.loss_bytes));

  // Megatron has its own vocab-parallel loss: the library's message under Loss
  await change(() => page.selectOption('#framework', 'megatron'));
  await change(() => page.selectOption('#zero', '1'));
  const refused = cli({ ...request, parallel: { ...request.parallel, zero: 1 },
    training: { ...request.training, framework: 'megatron' } });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.loss');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-loss'), refused.error.message);
  assert.equal(await page.getAttribute('#loss', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#peak'), '—');
  await page.screenshot({ path: `${RESULTS}megatron-flash-attn-refused.png` });
  // back to the library's default loss: a result again
  await change(() => page.selectOption('#loss', 'auto'));
  await expectResult('megatron, loss auto');
});
