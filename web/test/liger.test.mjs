// End-to-end test of the C ABI 1.12 request field training.use_liger_kernel in the "Training
// stack" section (state.js FIELDS_19: the checkbox "Liger-Kernel", URL key lgr): Liger-Kernel's
// fused RMSNorm and SwiGLU in the Hugging Face blocks. The built page (web/dist) in Debian's
// headless Chromium, against the memest CLI (`memest request`) for the same requests, written
// here independently of the page. Needs what e2e.test.mjs needs: web/dist (vite build) and the
// CLI (MEMEST_CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { change, cli, expectResult, g2, hashOf, page, RESULTS, show, usePage } from './harness.mjs';

usePage();

/** The pretrain request the page sends (sp on, no recomputation, FlashAttention: the page's
 *  defaults), with `training` extras. */
function request({ model = 'llama-3.1-8b', gpu = 'h100-80gb', gpus = 1, zero = 0, seq = 2048, gbs = 8 }, training = {}) {
  return {
    mode: 'pretrain', model, gpu,
    parallel: { gpus, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero, ep: 1, etp: 0 },
    training: { seq_len: seq, micro_batch: 1, global_batch: gbs, recompute: 'none', flash_attention: true, ...training },
  };
}

const peakText = (answer) => `${g2(answer.peak_bytes)} GiB (stage ${answer.peak_stage})`;

async function expectPeak(answer, what) {
  await expectResult(what);
  assert.equal(await page.textContent('#peak'), peakText(answer), what);
}

test('Liger-Kernel: shown for Hugging Face frameworks; checked is the CLI\'s answer, the URL key lgr', async () => {
  // Llama-3.1-8B on one H100, seq 2048, no recomputation (tests/unit/test_liger.cpp): under
  // pytorch the stage saves 32 * 61440 * 2048 = 4026531840 bytes less
  const state = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '1', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '0',
    seq: '2048', mbs: '1', gbs: '8', fw: 'pytorch' };
  const base = request({}, { framework: 'pytorch' });
  const without = cli(base);
  const withIt = cli({ ...base, training: { ...base.training, use_liger_kernel: true } });
  assert.equal(without.ok, true, JSON.stringify(without.error));
  assert.equal(withIt.ok, true, JSON.stringify(withIt.error));
  assert.equal(withIt.training.use_liger_kernel, true);
  assert.equal(without.stages[0].activations_bytes - withIt.stages[0].activations_bytes, 4026531840);
  await show(hashOf(state));
  await expectPeak(without, 'pytorch without Liger');
  assert.equal(await page.isVisible('#use-liger-kernel'), true, 'shown under pytorch');
  assert.equal(await page.isChecked('#use-liger-kernel'), false);
  await change(() => page.check('#use-liger-kernel'));
  await page.waitForFunction(() => location.hash.includes('lgr=1'));
  await expectPeak(withIt, 'pytorch with Liger');
  // the link round-trips
  await show(hashOf({ ...state, lgr: '1' }));
  await expectPeak(withIt, 'the link with lgr=1');
  assert.equal(await page.isChecked('#use-liger-kernel'), true);
  await page.screenshot({ path: `${RESULTS}liger.png`, fullPage: true });
  // a LayerNorm model: the library refuses the field, its message next to the checkbox
  const refused = cli(request({ model: 'gpt2' }, { framework: 'pytorch', use_liger_kernel: true }));
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.use_liger_kernel');
  await show(hashOf({ ...state, m: 'gpt2', lgr: '1' }));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-use-liger-kernel'), refused.error.message);
  // under megatron it is hidden and not sent
  await show(hashOf({ ...state, lgr: '1' }));
  await expectPeak(withIt, 'back on Llama with lgr=1');
  await change(() => page.selectOption('#framework', 'megatron'));
  assert.equal(await page.isVisible('#use-liger-kernel'), false, 'hidden under megatron');
  await expectResult('megatron with lgr still in the state');
});
