// End-to-end tests of the "LoRA / QLoRA" section (README "LoRA and QLoRA"): the built page
// (web/dist) in Debian's headless Chromium, against the memest CLI for the same requests.
// Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI (MEMEST_CLI).
//
// A test that expects a result fails when the page shows an error instead (expectResult); one
// that expects the library's refusal fails unless the page shows that very message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { browser, cli, cliPretrain, expectResult, g2, page, probe, RESULTS, settle, show,
  usePage } from './harness.mjs';

// Llama-3.1-8B on one H100 under plain PyTorch with a bf16 base: the layout part of the page's
// state (URL hash keys, written here independently of the page), and the same request in full as
// the page sends it (its defaults for what the hash leaves out).
const BASE = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '1', tp: '1', cp: '1', pp: '1', vpp: '1',
  zero: '0', seq: '2048', mbs: '1', gbs: '8', fw: 'pytorch', pd: 'bf16' };
const BASE_HASH = new URLSearchParams(BASE).toString();
const baseRequest = (training = {}) => ({
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 1, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 0, ep: 1, etp: 0 },
  training: { seq_len: 2048, micro_batch: 1, global_batch: 8, recompute: 'none', flash_attention: true,
    framework: 'pytorch', param_dtype: 'bf16', ...training },
});
const ALL_LINEAR = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
/** The README's QLoRA example. */
const QLORA = { type: 'qlora', rank: 16, alpha: 32, dropout: 0.05, targets: ALL_LINEAR, dtype: 'fp32',
  double_quant: true };

usePage();

/** One form change (a callback), then its answer. */
async function change(act) {
  const before = await probe();
  await act();
  await settle(before);
}

const checkedTargets = (p = page) => p.$$eval('#lora-targets input:checked', (bs) => bs.map((b) => b.value));

test('peft\'s defaults are what the form starts with; the names are the library\'s', async () => {
  const tables = cli({ mode: 'enums' });
  assert.ok(tables.enums.adapter?.includes('qlora'), 'the CLI lists the adapters');
  await show('#');
  await expectResult('defaults');
  assert.deepEqual(await page.$$eval('#adapter-type option', (os) => os.map((o) => o.value)), tables.enums.adapter);
  assert.deepEqual(await page.$$eval('#lora-targets input', (bs) => bs.map((b) => b.value)), tables.enums.lora_target);
  assert.equal(await page.inputValue('#adapter-type'), 'none');
  assert.equal(await page.isVisible('#lora-rank'), false, 'no adapter: its fields are hidden');
  assert.equal(await page.isVisible('#adapter-box'), false, 'no adapter: no adapter figures');
  // choose LoRA on a layout the library takes it for: peft's LoraConfig defaults
  await show(`#${BASE_HASH}`);
  await expectResult('pytorch, no adapter');
  await change(() => page.selectOption('#adapter-type', 'lora'));
  await expectResult('lora with the defaults');
  assert.equal(await page.inputValue('#lora-rank'), '8');
  assert.equal(await page.inputValue('#lora-alpha'), '8');
  assert.equal(await page.inputValue('#lora-dropout'), '0');
  assert.equal(await page.inputValue('#adapter-dtype'), '', 'the library\'s default (peft\'s fp32 here)');
  assert.deepEqual(await checkedTargets(), ['q_proj', 'v_proj']);
  assert.equal(await page.isVisible('#double-quant'), false, 'double quantisation is qlora\'s');
  // the URL holds only the type (defaults are not sent), and the figures are the library's
  assert.equal(new URLSearchParams((await page.evaluate(() => location.hash)).slice(1)).get('ad'), 'lora');
  assert.doesNotMatch(await page.evaluate(() => location.hash), /lr=|la=|ldo=|lt=|adt=|dq=/);
  const want = cli(baseRequest({ adapter: { type: 'lora' } }));
  assert.equal(want.ok, true, JSON.stringify(want.error));
  const peft = cli(baseRequest({ adapter: { type: 'lora', rank: 8, alpha: 8, dropout: 0,
    targets: ['q_proj', 'v_proj'], dtype: 'fp32', double_quant: false } }));
  assert.equal(peft.trainable_parameters, want.trainable_parameters, 'the library\'s defaults are peft\'s');
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
});

test('a QLoRA request set through the form: the page shows the CLI\'s peak, trainable count and adapter parts', async () => {
  const want = cli(baseRequest({ adapter: QLORA }));
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  // the same run through the CLI's own options
  const opts = cliPretrain(['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '1', '--tp', '1', '--cp', '1',
    '--pp', '1', '--zero', '0', '--seq-len', '2048', '--micro-batch', '1', '--global-batch', '8',
    '--framework', 'pytorch', '--param-dtype', 'bf16', '--adapter', 'qlora', '--lora-rank', '16',
    '--lora-alpha', '32', '--lora-dropout', '0.05', '--lora-targets', ALL_LINEAR.join(','), '--double-quant']);
  assert.equal(opts.peak_bytes, want.peak_bytes);
  assert.equal(opts.trainable_parameters, want.trainable_parameters);

  await show(`#${BASE_HASH}`);
  await expectResult('pytorch, no adapter');
  await change(() => page.selectOption('#adapter-type', 'qlora'));
  await change(() => page.fill('#lora-rank', '16'));
  await change(() => page.fill('#lora-alpha', '32'));
  await change(() => page.fill('#lora-dropout', '0.05'));
  for (const t of ALL_LINEAR.filter((x) => !['q_proj', 'v_proj'].includes(x))) {
    await change(() => page.check(`#lora-target-${t}`));
  }
  await change(() => page.check('#double-quant'));
  await expectResult('qlora through the form');
  assert.deepEqual(await checkedTargets(), ALL_LINEAR);
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  assert.equal(await page.getAttribute('#total-params', 'data-value'), String(want.model.num_parameters));
  assert.ok(want.trainable_parameters > 0 && want.trainable_parameters < want.model.num_parameters);
  const parts = await page.$$eval('#adapter-parts li', (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));
  const stage = want.stages.find((s) => s.stage === want.peak_stage);
  assert.deepEqual(parts, Object.entries(stage.adapter).filter(([k, v]) => k.endsWith('_bytes') && typeof v === 'number').map(([k, v]) => [k, `${g2(v)} GiB`]));
  assert.ok(stage.adapter.quant_metadata_bytes > 0, 'NF4 metadata');
  assert.ok(stage.adapter.dequant_bytes > 0, 'the dequantised weight');
  // not the full-training answer (the figures would otherwise prove nothing)
  const full = cli(baseRequest());
  assert.notEqual(g2(full.peak_bytes), g2(want.peak_bytes));
  await page.screenshot({ path: `${RESULTS}lora-qlora.png`, fullPage: true });
});

test('a bad adapter shows the library\'s message next to its field, and no figures', async () => {
  // rank 0: under Rank
  await show(`#${BASE_HASH}&ad=lora&lr=0`);
  const rank = cli(baseRequest({ adapter: { type: 'lora', rank: 0 } }));
  assert.equal(rank.ok, false);
  assert.equal(rank.error.field, 'training.adapter.rank');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-lora-rank'), rank.error.message);
  assert.equal(await page.getAttribute('#lora-rank', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#status'), `Not computed: ${rank.error.message}`);
  assert.equal(await page.textContent('#peak'), '—');
  assert.equal(await page.isVisible('#adapter-box'), false);

  // qlora on an fp32 base: under Parameter dtype
  await show(`#${new URLSearchParams({ ...BASE, pd: 'fp32', ad: 'qlora' })}`);
  const fp32 = cli(baseRequest({ param_dtype: 'fp32', adapter: { type: 'qlora' } }));
  assert.equal(fp32.ok, false);
  assert.equal(fp32.error.field, 'training.param_dtype');
  assert.equal(await page.textContent('#err-param-dtype'), fp32.error.message);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  await page.screenshot({ path: `${RESULTS}lora-refused.png` });

  // back to bf16 through the form: the error clears and the result is the CLI's
  await change(() => page.selectOption('#param-dtype', 'bf16'));
  await expectResult('qlora on bf16');
  const ok = cli(baseRequest({ adapter: { type: 'qlora' } }));
  assert.equal(ok.ok, true);
  assert.equal(await page.textContent('#peak'), `${g2(ok.peak_bytes)} GiB (stage ${ok.peak_stage})`);
});

test('the adapter travels in the URL: a fresh page restores it', async () => {
  const hash = new URLSearchParams({ ...BASE, ad: 'qlora', lr: '16', la: '32', ldo: '0.05',
    lt: ALL_LINEAR.join(','), dq: '1' }).toString();
  await show(`#${hash}`);
  await expectResult('qlora by URL');
  const want = cli(baseRequest({ adapter: QLORA }));
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  const other = await browser.context.newPage();
  await other.goto(page.url());
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.equal(await other.inputValue('#adapter-type'), 'qlora');
  assert.equal(await other.inputValue('#lora-rank'), '16');
  assert.equal(await other.inputValue('#lora-alpha'), '32');
  assert.equal(await other.inputValue('#lora-dropout'), '0.05');
  assert.equal(await other.isChecked('#double-quant'), true);
  assert.deepEqual(await checkedTargets(other), ALL_LINEAR);
  assert.equal(await other.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  assert.equal(await other.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  await other.close();
});
