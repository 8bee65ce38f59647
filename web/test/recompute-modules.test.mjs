// End-to-end tests of C ABI 1.11's training.recompute_modules in the "Training stack" section
// (state.js RECOMPUTE_MODULES): Megatron-Core's recompute modules, one checkbox per name of the
// library, shown where the library reads them (framework megatron, recompute selective). The
// built page (web/dist) in Debian's headless Chromium, against the memest CLI (`memest request`)
// for the same requests, written here independently of the page. Needs what e2e.test.mjs needs:
// web/dist (vite build) and the CLI (MEMEST_CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { change, cli, expectResult, g2, hashOf, page, RESULTS, show, usePage } from './harness.mjs';

usePage();

/** Qwen3-30B-A3B on 8 x H100, tp 2, ep 4, 4096 tokens, selective recomputation: the page's state
 *  and the pretrain request it sends for it (sp on, FlashAttention: the page's defaults). */
const STATE = { m: 'qwen3-30b-a3b', g: 'h100-80gb', gpus: '8', tp: '2', cp: '1', pp: '1', vpp: '1', zero: '1',
  ep: '4', etp: '0', seq: '4096', mbs: '1', gbs: '64', rc: 'selective' };
function request(training = {}) {
  return {
    mode: 'pretrain', model: 'qwen3-30b-a3b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 2, cp: 1, pp: 1, vpp: 1, sp: true, zero: 1, ep: 4, etp: 0 },
    training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'selective', flash_attention: true, ...training },
  };
}

/** The peak as the page shows it for a CLI answer: bytes and stage. */
const peakText = (answer) => `${g2(answer.peak_bytes)} GiB (stage ${answer.peak_stage})`;

async function expectPeak(answer, what) {
  await expectResult(what);
  assert.equal(await page.textContent('#peak'), peakText(answer), what);
}

const boxes = () => page.$$eval('#recompute-modules input[type="checkbox"]', (bs) => bs.map((b) => [b.value, b.checked]));

test('recompute modules: the library\'s names, shown under megatron with selective recomputation only', async () => {
  const names = cli({ mode: 'enums' }).enums.recompute_module;
  await show(hashOf({ ...STATE, rc: 'none' }));
  await expectResult('recompute none');
  // one checkbox per name of the library, in its order; its default (the first) checked
  assert.deepEqual(await boxes(), names.map((n, i) => [n, i === 0]));
  assert.equal(await page.isVisible('#recompute-modules'), false, 'hidden without selective recomputation');
  await change(() => page.selectOption('#recompute', 'selective'));
  assert.equal(await page.isVisible('#recompute-modules'), true, 'shown for selective under megatron');
  await change(() => page.selectOption('#framework', 'fsdp'));
  assert.equal(await page.isVisible('#recompute-modules'), false, 'hidden under fsdp');
});

test('recompute modules: checked layernorm + moe is the CLI\'s answer with the field, the URL key rcm, the link round-trips', async () => {
  const without = cli(request());
  const withIt = cli(request({ recompute_modules: ['core_attn', 'layernorm', 'moe'] }));
  const onlyThose = cli(request({ recompute_modules: ['layernorm', 'moe'] }));
  for (const a of [without, withIt, onlyThose]) assert.equal(a.ok, true, JSON.stringify(a.error));
  assert.deepEqual(without.training.recompute_modules, ['core_attn']);
  assert.deepEqual(withIt.training.recompute_modules, ['core_attn', 'layernorm', 'moe']);
  assert.notEqual(peakText(withIt), peakText(without), 'the modules change the peak');
  await show(hashOf(STATE));
  await expectPeak(without, 'selective, Megatron\'s default modules');
  assert.equal(new URL(page.url()).hash.includes('rcm='), false, 'the default is not in the URL');
  await change(() => page.check('#recompute-module-layernorm'));
  await change(() => page.check('#recompute-module-moe'));
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('rcm') === 'core_attn,layernorm,moe');
  await expectPeak(withIt, 'core_attn + layernorm + moe');
  // core_attn unchecked: the two modules alone
  await change(() => page.uncheck('#recompute-module-core_attn'));
  await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('rcm') === 'layernorm,moe');
  await expectPeak(onlyThose, 'layernorm + moe');
  await page.screenshot({ path: `${RESULTS}recompute-modules.png`, fullPage: true });
  // a link with the key shows the boxes checked and the same figures
  await show(hashOf({ ...STATE, rcm: 'layernorm,moe' }));
  await expectPeak(onlyThose, 'the link with rcm=layernorm,moe');
  assert.deepEqual((await boxes()).filter(([, on]) => on).map(([n]) => n), ['layernorm', 'moe']);
  // recompute none: hidden and not sent (the page's answer is the CLI's without the field)
  await change(() => page.selectOption('#recompute', 'none'));
  await expectPeak(cli(request({ recompute: 'none' })), 'recompute none with rcm still in the state');
});

test('recompute modules: none checked, or a module the model lacks, shows the library\'s refusal at the field', async () => {
  const empty = cli(request({ recompute_modules: [] }));
  assert.equal(empty.ok, false);
  assert.equal(empty.error.field, 'training.recompute_modules');
  await show(hashOf({ ...STATE, rcm: 'core_attn' }));
  await change(() => page.uncheck('#recompute-module-core_attn'));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-recompute-modules'), empty.error.message);
  // latent attention's up projections on a model without it
  const mla = cli(request({ recompute_modules: ['mla_up_proj'] }));
  assert.equal(mla.error?.field, 'training.recompute_modules');
  await show(hashOf({ ...STATE, rcm: 'mla_up_proj' }));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-recompute-modules'), mla.error.message);
  await show(hashOf(STATE));
  await expectResult('back to the default modules');
});
