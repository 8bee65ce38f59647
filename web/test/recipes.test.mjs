// End-to-end tests of the recipe picker (docs/adapters.md "Recipes"): the built page (web/dist)
// in Debian's headless Chromium against `memest request` with the same "recipe". Needs what
// e2e.test.mjs needs: web/dist (vite build) and the CLI (MEMEST_CLI).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { change, cli, expectResult, g2, hashOf, page, show, usePage } from './harness.mjs';

usePage();

// The page's state apart from the recipe: Llama-3.1-8B on H100s, a short run (URL hash keys,
// written here independently of the page), and what the page sends for it beside the recipe's
// fields (its defaults for what the hash leaves out).
const BASE = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '2', seq: '2048', mbs: '1', gbs: '8' };
const withRecipe = (recipe, gpus = 2) => ({
  mode: 'pretrain', recipe, model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus, cp: 1, vpp: 1, sp: true, ep: 1, etp: 0 },
  training: { seq_len: 2048, micro_batch: 1, global_batch: 8, flash_attention: true },
});

const checkedTargets = () => page.$$eval('#lora-targets input:checked', (bs) => bs.map((b) => b.value));
const urlState = async () => new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));

test('the picker lists the library\'s recipes', async () => {
  const names = cli({ mode: 'enums' }).recipes;
  assert.ok(names.includes('answerai-fsdp-qlora'), 'the library lists the Answer.AI recipe');
  await show(hashOf(BASE));
  await expectResult('no recipe');
  assert.deepEqual(await page.$$eval('#recipe option', (os) => os.map((o) => o.value)), ['', ...names]);
  assert.equal(await page.inputValue('#recipe'), '');
  assert.equal(await page.isVisible('#recipe-note'), false);
});

test('answerai-fsdp-qlora: the form takes its fields and the page shows memest request\'s peak', async () => {
  await show(hashOf(BASE));
  await expectResult('before the recipe');
  await change(() => page.selectOption('#recipe', 'answerai-fsdp-qlora'));
  await expectResult('answerai-fsdp-qlora');
  // the recipe's values, in the form (train.py: lora_rank 64, lora_alpha 16, lora_dropout 0.1,
  // the six projections of lora_target_modules "all", FSDP1 full shard)
  assert.equal(await page.inputValue('#adapter-type'), 'qlora');
  assert.equal(await page.inputValue('#lora-rank'), '64');
  assert.equal(await page.inputValue('#lora-alpha'), '16');
  assert.equal(await page.inputValue('#lora-dropout'), '0.1');
  assert.deepEqual(await checkedTargets(), ['q_proj', 'k_proj', 'v_proj', 'gate_proj', 'up_proj', 'down_proj']);
  assert.equal(await page.inputValue('#framework'), 'fsdp1');
  assert.equal(await page.inputValue('#zero'), '3');
  assert.equal(await page.inputValue('#tp'), '1');
  assert.equal(await page.isChecked('#offload-params'), true);
  assert.match(await page.textContent('#recipe-note'), /AnswerDotAI\/fsdp_qlora/);
  // the link keeps the recipe's name
  assert.equal((await urlState()).get('rcp'), 'answerai-fsdp-qlora');
  // the same peak as the library's recipe through the CLI; r 64 on q, k, v (in + out = 8192,
  // 5120, 5120) and gate/up/down (3 x 18432): 64 x 73728 = 4718592 a layer, x 32 = 150994944
  const want = cli(withRecipe('answerai-fsdp-qlora'));
  assert.equal(want.ok, true, JSON.stringify(want.error));
  assert.equal(want.trainable_parameters, 150994944);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  // a field changed after the recipe is the user's: rank 16, as the request's own field wins
  await change(() => page.fill('#lora-rank', '16'));
  await expectResult('rank 16 over the recipe');
  const mine = withRecipe('answerai-fsdp-qlora');
  mine.training.adapter = { rank: 16 };
  const want16 = cli(mine);
  assert.equal(want16.trainable_parameters, 37748736);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want16.trainable_parameters));
  assert.equal(await page.textContent('#peak'), `${g2(want16.peak_bytes)} GiB (stage ${want16.peak_stage})`);
});

test('torchtune-lora-single-device by link: one GPU, and the CLI\'s peak', async () => {
  // choose it on the form, then reload its link as a shared one would be
  await show(hashOf(BASE));
  await change(() => page.selectOption('#recipe', 'torchtune-lora-single-device'));
  await expectResult('torchtune-lora-single-device');
  assert.equal(await page.inputValue('#gpus'), '1');
  assert.equal(await page.inputValue('#recompute'), 'full');
  assert.equal(await page.inputValue('#loss'), 'chunked');
  const link = await page.evaluate(() => location.hash);
  await show('#');
  assert.equal(await page.isVisible('#recipe-note'), false, 'no recipe: no note');
  await show(link);
  await expectResult('the link');
  assert.equal(await page.inputValue('#recipe'), 'torchtune-lora-single-device');
  assert.match(await page.textContent('#recipe-note'), /8B_lora_single_device\.yaml/);
  const want = cli(withRecipe('torchtune-lora-single-device', 1));
  assert.equal(want.ok, true, JSON.stringify(want.error));
  // r 8 on q, v, o and the MLP: tests/unit/test_recipes.cpp works out 19660800
  assert.equal(want.trainable_parameters, 19660800);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
});
