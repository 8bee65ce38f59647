// End-to-end tests of the fine-tuning user's rough edges (the tracker's "Hardening ... a
// fine-tuning flow that works end to end", part 2): the built page (web/dist) in Debian's
// headless Chromium, each figure and message checked against the memest CLI (`memest request`)
// for the same request. Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI.
//
//  1. the GPU count said is the one asked for (never "0 ×"), also when LLMem offloads to the CPU
//  2. the ZeRO stage shown is the one the library ran (the response's layout.zero)
//  3. the fine-tuning verdict is the library's (LLMem's), not a threshold of the page
//  4. a layouts-table cell is the library's answer for that layout (mbs 2 may peak below mbs 1)
//  5. one GPU: the default layout falls back to tp = cp = pp = 1 unless set
//  6. the form's own problems are listed together
//  7. file:// says how to serve the page instead of "Loading…"
//  8. a refused request: the library's message, no empty chart, no inert buttons
//  9. axe-core: no serious or critical finding on the default page and the fine-tuning tab
// 10. "Which GPUs would fit this": one library request per GPU preset, smallest that fits first
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { browser, cli, expectResult, g2, page, pageErrors, probe, RESULTS, settle, show,
  usePage } from './harness.mjs';

const require = createRequire(import.meta.url);

usePage();

/** The page's default pretrain request (state.js DEFAULTS), written here independently. */
const DEFAULT_REQUEST = Object.freeze({
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb',
  parallel: { gpus: 8, tp: 4, cp: 1, pp: 2, vpp: 1, sp: true, zero: 1, ep: 1, etp: 0 },
  training: { seq_len: 8192, micro_batch: 1, global_batch: 1024, recompute: 'none', flash_attention: true },
});
const request = (parallel = {}, training = {}, top = {}) => ({ ...DEFAULT_REQUEST, ...top,
  parallel: { ...DEFAULT_REQUEST.parallel, ...parallel }, training: { ...DEFAULT_REQUEST.training, ...training } });
const finetune = (model, gpu, gpus, seq, options = {}) => ({ mode: 'finetune', model, gpu, parallel: { gpus },
  training: { seq_len: seq }, finetune: { method: 'auto', gradient_checkpointing: true, ...options } });
const pct = (f) => `${Math.round(f * 1000) / 10} %`;

/** Loads a fine-tuning state by URL and waits for its (debounced) answer. */
async function showFinetune(hash) {
  const before = await probe();
  await show(hash);
  await page.waitForFunction((n) => !window.__memest.finetunePending && window.__memest.finetuneRuns > n.finetuneRuns, before);
}

/** One form change, then its answer. */
async function change(act) {
  const before = await probe();
  await act();
  await settle(before);
}

const layoutInputs = () => page.evaluate(() => ['gpus', 'tp', 'cp', 'pp'].map((id) => document.getElementById(id).value));
const errorTexts = () => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('.field-error')]
  .filter((e) => e.textContent).map((e) => [e.id, e.textContent])));

test('1. the GPU count is the one asked for, also when LLMem selects CPU offloading', async () => {
  const want = cli(finetune('llama-3.1-8b', 'rtx4090-24gb', 1, 8192));
  assert.equal(want.ok, true);
  assert.equal(want.selected, 'cpu_offload');
  // since 1.9's merge the offloading answer carries layout.gpus (the count asked for); before, it
  // had no layout: either way the page shows the count asked for, never 0
  if (want.layout !== undefined) assert.equal(want.layout.gpus, 1, 'the offloading answer\'s layout counts the GPUs asked for');
  await showFinetune('#tab=finetune&g=rtx4090-24gb&gpus=1');
  const status = await page.textContent('#status');
  assert.ok(status.startsWith('Llama-3.1-8B on 1 × NVIDIA GeForce RTX 4090 24GB, fine-tuning (LLMem): out of memory'), status);
  assert.doesNotMatch(status, /\b0 ×/);
  assert.equal(await page.textContent('#ft-method-batch'), 'CPU offloading');
  // a method that fits: the layout's count
  await showFinetune('#tab=finetune&g=a100-80gb&gpus=2&m=opt-1.3b&seq=512');
  assert.ok((await page.textContent('#status')).startsWith('OPT-1.3B on 2 × NVIDIA A100 SXM 80GB'));
});

test('2. the ZeRO stage shown is the response\'s layout.zero (what the library ran), next to the layout', async () => {
  for (const [fw, zero] of [['megatron', 1], ['fsdp', 1], ['fsdp', 3], ['deepspeed', 2]]) {
    const req = request({ tp: 1, pp: 1, zero }, { framework: fw });
    if (fw === 'megatron') delete req.training.framework;
    const want = cli(req);
    assert.equal(want.ok, true, JSON.stringify(want.error));
    await show(`#fw=${fw}&tp=1&cp=1&pp=1&zero=${zero}`);
    await expectResult(`${fw} zero ${zero}`);
    assert.equal(await page.getAttribute('#ran-zero', 'data-value'), String(want.layout.zero), `${fw} zero ${zero}`);
    assert.ok((await page.textContent('#model-line')).includes(`ZeRO ${want.layout.zero}`), fw);
  }
});

test('2b. fsdp asked for ZeRO 1 runs ZeRO 3: the library\'s response says 3', () => {
  const one = cli(request({ tp: 1, pp: 1, zero: 1 }, { framework: 'fsdp' }));
  const three = cli(request({ tp: 1, pp: 1, zero: 3 }, { framework: 'fsdp' }));
  assert.equal(one.peak_bytes, three.peak_bytes, 'fsdp at zero 1 computes zero 3');
  assert.equal(one.layout.zero, 3);
});

test('3. the fine-tuning verdict is the library\'s, with the product\'s margin (98.8 % is tight), its share the library\'s usage_fraction', async () => {
  // Llama-3.1-8B on 8 x A100 80GB at 2048 tokens: Algorithm 1's largest batch peaks at 98.8 %
  const want = cli(finetune('llama-3.1-8b', 'a100-80gb', 8, 2048));
  assert.equal(want.ok, true);
  assert.equal(pct(want.usage_fraction), '98.8 %');
  const enums = cli({ mode: 'enums' });
  assert.ok(want.usage_fraction > enums.peak_verdict_bands.fits, 'above the pretraining peak\'s fits band');
  // LLMem's own test (verdict: peak <= capacity) picks the batch; the headline keeps the
  // margin of every mode (peak_verdict, 1.11)
  assert.equal(want.verdict, 'fits');
  assert.equal(want.peak_verdict, 'tight');
  await showFinetune('#tab=finetune&g=a100-80gb&gpus=8&seq=2048');
  assert.equal(await page.getAttribute('#ft-verdict', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.getAttribute('#status', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.textContent('#ft-peak-share'), `${pct(want.usage_fraction)} of ${g2(want.capacity_bytes)} GiB`);
  assert.equal(await page.textContent('#ft-method-batch'), `${want.selected} · batch ${want.max_batch}`);
});

test('4. each layouts-table cell is the library\'s answer for that layout: FSDP1 with 2 micro-batches per step peaks above 1', async () => {
  // 4 x H100, FSDP1, global batch 8, full recompute: micro-batch 1 is 2 micro-batches per step
  // (gradient accumulation, accelerate's no_sync: unsharded gradients), micro-batch 2 is one
  const base = { gpu: 'h100-80gb' };
  const req = (mbs) => request({ gpus: 4, tp: 1, pp: 1 }, { framework: 'fsdp1', seq_len: 4096, global_batch: 8,
    recompute: 'full', micro_batch: mbs }, base);
  const one = cli(req(1));
  const two = cli(req(2));
  assert.equal(one.ok && two.ok, true);
  assert.ok(two.peak_bytes < one.peak_bytes, 'the library: micro-batch 2 peaks below micro-batch 1 here');
  assert.equal(one.training.num_microbatches, 2);
  assert.equal(two.training.num_microbatches, 1);
  assert.ok(one.stages[0].gradients_bytes > two.stages[0].gradients_bytes, 'unsharded gradients over accumulation');
  const before = await probe();
  await show('#fw=fsdp1&g=h100-80gb&gpus=4&tp=1&cp=1&pp=1&seq=4096&gbs=8&rc=full');
  await page.waitForFunction((n) => window.__memest.gridRenders > n.gridRenders, before);
  const cell = (layout) => page.$eval(`#layout-table td[data-layout="${layout}"]`, (td) => [td.textContent, td.dataset.verdict]);
  assert.deepEqual(await cell('1,1,1,1,4'), [g2(one.peak_bytes), one.peak_verdict]);
  assert.deepEqual(await cell('1,1,1,2,4'), [g2(two.peak_bytes), two.peak_verdict]);
});

test('5. one GPU: the default layout falls back to tp = cp = pp = 1; set values stay, and follow the GPUs back', async () => {
  const want = cli(request({ gpus: 1, tp: 1, pp: 1 }));
  assert.equal(want.ok, true);
  // a link with one GPU and no layout
  await show('#gpus=1');
  await expectResult('#gpus=1');
  assert.deepEqual(await layoutInputs(), ['1', '1', '1', '1']);
  assert.ok((await page.textContent('#status')).startsWith('Llama-3.1-8B on 1 × NVIDIA A100 SXM 40GB: '));
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  // typed: 8 -> 1 -> 8 GPUs, the layout follows while it is not set
  await show('#');
  await change(() => page.fill('#gpus', '1'));
  await expectResult('typed 1 GPU');
  assert.deepEqual(await layoutInputs(), ['1', '1', '1', '1']);
  await change(() => page.fill('#gpus', '8'));
  await expectResult('back to 8 GPUs');
  assert.deepEqual(await layoutInputs(), ['8', '4', '1', '2']);
  // a value set (typed, or in the link) is the user's: kept, and the library says why not
  await show('#gpus=1');
  await change(() => page.fill('#tp', '4'));
  assert.deepEqual(await layoutInputs(), ['1', '4', '1', '1']);
  const refused = cli(request({ gpus: 1, tp: 4, pp: 1 }));
  assert.equal(refused.ok, false);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#status'), `Not computed: ${refused.error.message}`);
  await show('#gpus=1&tp=2');
  assert.deepEqual(await layoutInputs(), ['1', '2', '1', '1']);
  const two = cli(request({ gpus: 1, tp: 2, pp: 1 }));
  assert.equal(await page.textContent('#status'), `Not computed: ${two.error.message}`);
});

test('6. the form\'s own problems are listed together (the library refuses one field at a time)', async () => {
  // no config.json and no device profile: both said at once
  await show('#m=custom&g=profile');
  let errors = await errorTexts();
  assert.match(errors['err-model'] ?? '', /^model: paste a Hugging Face config\.json/);
  assert.match(errors['err-gpu'] ?? '', /^gpu: paste a device profile/);
  let status = await page.textContent('#status');
  assert.ok(status.includes(errors['err-model']) && status.includes(errors['err-gpu']), status);
  assert.equal(await page.getAttribute('#model-config', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#gpu-profile', 'aria-invalid'), 'true');
  // empty fields: each one named next to its input
  await show('#');
  await change(() => page.fill('#seq', ''));
  await change(() => page.fill('#mbs', ''));
  await change(() => page.fill('#gbs', ''));
  errors = await errorTexts();
  for (const id of ['seq', 'mbs', 'gbs']) {
    assert.ok(errors[`err-${id}`], `#err-${id}: ${JSON.stringify(errors)}`);
    assert.equal(await page.getAttribute(`#${id}`, 'aria-invalid'), 'true', id);
  }
  status = await page.textContent('#status');
  assert.ok(status.startsWith('Not computed: 3 problems'), status);
  assert.equal(await page.textContent('#verdict'), '—');
  // the library's own refusals come one field at a time: the first it meets
  await show('#tp=3&seq=0');
  errors = await errorTexts();
  assert.equal(Object.keys(errors).length, 1, JSON.stringify(errors));
});

test('7. opened from file://, the page says to serve it (scripts/serve-web.sh) instead of "Loading…"', async () => {
  const file = browser.context.newPage();
  const p = await file;
  try {
    await p.goto(`file://${fileURLToPath(new URL('../dist/index.html', import.meta.url))}`);
    await p.waitForFunction(() => document.querySelector('#status').dataset.state !== 'loading', null, { timeout: 5000 });
    const s = await p.evaluate(() => ({ state: document.querySelector('#status').dataset.state,
      text: document.querySelector('#status').textContent, ready: document.body.dataset.ready }));
    assert.equal(s.state, 'error');
    assert.equal(s.ready, 'error');
    assert.match(s.text, /file:\/\//);
    assert.match(s.text, /scripts\/serve-web\.sh/);
    assert.doesNotMatch(s.text, /Loading/);
    // nothing to press that would do nothing
    const enabled = await p.$$eval('button', (bs) => bs.filter((b) => !b.disabled && b.getClientRects().length).map((b) => b.id));
    assert.deepEqual(enabled, []);
    await p.screenshot({ path: `${RESULTS}file-protocol.png` });
  } finally {
    await p.close();
  }
});

test('8. a refused request: the library\'s message, no empty chart, no inert buttons; a result brings them back', async () => {
  const refused = cli(request({ tp: 3 }));
  assert.equal(refused.ok, false);
  await show('#tp=3');
  assert.equal(await page.textContent('#status'), `Not computed: ${refused.error.message}`);
  assert.equal(await page.textContent('#err-tp'), refused.error.message);
  assert.equal(await page.isVisible('.chart-box'), false, 'no empty chart');
  assert.equal(await page.isVisible('#stages-table'), false, 'no empty stages table');
  for (const id of ['download-json', 'download-csv', 'gpu-fit-run']) assert.equal(await page.isDisabled(`#${id}`), true, id);
  await page.screenshot({ path: `${RESULTS}refused.png`, fullPage: true });
  await show('#');
  await expectResult('defaults');
  assert.equal(await page.isVisible('.chart-box'), true);
  assert.equal(await page.isVisible('#stages-table'), true);
  for (const id of ['download-json', 'download-csv', 'gpu-fit-run']) assert.equal(await page.isDisabled(`#${id}`), false, id);
  // the fine-tuning tab: the library's message, no empty terms table, no downloads
  const ft = cli(finetune('llama-3.1-8b', 'a100-40gb', 8, 0));
  assert.equal(ft.ok, false);
  await showFinetune('#tab=finetune&seq=0');
  assert.equal(await page.textContent('#status'), `Not computed: ${ft.error.message}`);
  assert.equal(await page.textContent('#finetune-error'), ft.error.message);
  assert.equal(await page.isVisible('#finetune-terms'), false, 'no empty terms table');
  for (const id of ['download-json', 'download-csv']) assert.equal(await page.isDisabled(`#${id}`), true, id);
  await showFinetune('#tab=finetune');
  assert.equal(await page.isVisible('#finetune-terms'), true);
  for (const id of ['download-json', 'download-csv']) assert.equal(await page.isDisabled(`#${id}`), false, id);
});

/** axe-core's serious and critical findings on the page as it is (WCAG 2.x A and AA, 2.2's
 *  24 px targets, best practices). */
async function axeFindings() {
  if (!(await page.evaluate(() => Boolean(window.axe)))) {
    await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  }
  const r = await page.evaluate(() => window.axe.run(document, { runOnly: { type: 'tag',
    values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } }));
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

test('9. axe-core: no serious or critical finding on the default page and the fine-tuning tab, light and dark', async () => {
  try {
    for (const scheme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: scheme });
      await show('#');
      await expectResult('defaults');
      assert.deepEqual(await axeFindings(), [], `default page, ${scheme}`);
      await page.click('#gpu-fit-run');
      await page.waitForSelector('#gpu-fit-table tbody tr');
      assert.deepEqual(await axeFindings(), [], `the GPU list, ${scheme}`);
      await showFinetune('#tab=finetune');
      assert.deepEqual(await axeFindings(), [], `fine-tuning tab, ${scheme}`);
    }
  } finally {
    await page.emulateMedia({ colorScheme: null });
  }
});

test('10. "Which GPUs would fit this": one library request per GPU preset, at the form\'s GPU count, smallest that fits first', async () => {
  const presets = cli({ mode: 'presets' }).gpus;
  await show('#');
  await expectResult('defaults');
  assert.equal(await page.locator('#gpu-fit-table tbody tr').count(), 0, 'asked for, not computed on every keystroke');
  await page.click('#gpu-fit-run');
  await page.waitForSelector('#gpu-fit-table tbody tr');
  const rows = await page.$$eval('#gpu-fit-table tbody tr', (trs) => trs.map((tr) => ({
    gpu: tr.dataset.gpu, verdict: tr.dataset.verdict, peak: tr.querySelector('[data-peak]')?.textContent ?? '',
    text: tr.textContent })));
  assert.equal(rows.length, presets.length, 'every preset of the library');
  const answers = new Map(presets.map((g) => [g.id, cli({ ...DEFAULT_REQUEST, gpu: g.id })]));
  const fits = (a) => a.ok && !a.oom_predicted;
  const order = [...presets].sort((a, b) => {
    const fa = fits(answers.get(a.id)) ? 0 : 1;
    const fb = fits(answers.get(b.id)) ? 0 : 1;
    return fa - fb || a.memory_bytes - b.memory_bytes;
  }).map((g) => g.id);
  assert.deepEqual(rows.map((r) => r.gpu), order);
  for (const r of rows) {
    const a = answers.get(r.gpu);
    if (a.ok) {
      assert.equal(r.verdict, a.peak_verdict, r.gpu);
      assert.equal(r.peak, `${g2(a.peak_bytes)} GiB`, r.gpu);
    } else {
      assert.equal(r.verdict, 'refused', r.gpu);
      assert.ok(r.text.includes(a.error.message), r.gpu);
    }
  }
  // some fit and some do not at 8 GPUs, tp 4, pp 2: both groups are there
  assert.ok(rows.some((r) => r.verdict === 'oom') && rows.some((r) => r.verdict === 'fits'));
  assert.match(await page.textContent('#gpu-fit-summary'), new RegExp(`smallest that fits: ${presets.find((g) => g.id === order[0]).name}`));
  await page.screenshot({ path: `${RESULTS}gpu-fit.png`, fullPage: true });
  // a change to the form drops the list (it answered another request)
  await change(() => page.fill('#seq', '4096'));
  assert.equal(await page.locator('#gpu-fit-table tbody tr').count(), 0);
  // "Use" loads the GPU into the form
  await page.click('#gpu-fit-run');
  await page.waitForSelector('#gpu-fit-table tbody tr');
  const first = await page.getAttribute('#gpu-fit-table tbody tr:first-child', 'data-gpu');
  await change(() => page.click('#gpu-fit-table tbody tr:first-child button.use'));
  await expectResult('the first GPU used');
  assert.equal(await page.inputValue('#gpu-preset'), first);
  assert.deepEqual(pageErrors, []);
});
