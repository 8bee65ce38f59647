// End-to-end tests of the Import tab (README "Browser calculator"): launch files pasted or chosen
// in the built page (web/dist, Debian's headless Chromium) go through the library's "import"
// mode; what the page shows must be what `memest request` answers for the same import document.
// Needs what e2e.test.mjs needs: web/dist (vite build) and the CLI (MEMEST_CLI).
//
// A test that expects a result fails when the page shows an error instead (expectResult); one
// that expects the library's refusal fails unless the page shows that very message, and nothing
// of the last good import is left on the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cli, expectResult, g2, page, pageErrors, probe, RESULTS, settle, usePage } from './harness.mjs';

const launchDir = (p) => fileURLToPath(new URL(`../../tests/data/launch/${p}`, import.meta.url));
const TOML_NAME = 'llama3_8b.toml';
const TOML_PATH = launchDir(`torchtitan/llama3-8b-64xa100-op-sac/${TOML_NAME}`);
const TOML = readFileSync(TOML_PATH, 'utf8');
/** The import document the page should send for the TOML with the GPU and GPU count set. */
const DOC = { mode: 'import', files: [{ name: TOML_NAME, text: TOML }], gpu: 'a100-80gb', gpus: 64 };

usePage();

/** One change on the page (a callback), then its answer. */
async function change(act) {
  const before = await probe();
  await act();
  await settle(before);
}

/** What the Import tab shows. */
async function shown() {
  return page.evaluate(() => {
    const $ = (id) => document.getElementById(id);
    return {
      status: $('status').dataset.state, statusText: $('status').textContent,
      error: $('import-error').textContent, format: $('import-format').textContent,
      request: $('import-request').textContent, rows: $('import-origins').tBodies[0].rows.length,
      peak: $('import-peak').textContent, verdict: $('import-verdict').textContent,
      estimateDisabled: $('import-estimate').disabled, invalid: document.body.classList.contains('invalid'),
      warnings: [...document.querySelectorAll('#import-warnings li')].map((li) => li.textContent),
      formHidden: $('inputs').hidden,
    };
  });
}

/** The origins table's row of a request field: its cells' texts. */
async function originRow(field) {
  return page.$$eval(`#import-origins tbody tr[data-field="${field}"] > *`, (cells) => cells.map((c) => c.textContent));
}

test('a pasted torchtitan TOML: the request, format, origins and warnings are the CLI\'s', async () => {
  await change(() => page.click('#tab-import'));
  assert.equal(await page.getAttribute('#tab-import', 'aria-selected'), 'true');
  let s = await shown();
  assert.equal(s.formHidden, true, 'the pretraining form is not read by the import tab');
  assert.equal(s.rows, 0);
  assert.equal(s.request, '');

  // the GPU and model pickers are the library's presets, "from the files" first
  const gpuOptions = await page.$$eval('#import-gpu option', (os) => os.map((o) => o.value));
  const presets = cli({ mode: 'presets' });
  assert.deepEqual(gpuOptions, ['', ...presets.gpus.map((g) => g.id)]);
  assert.deepEqual(await page.$$eval('#import-model option', (os) => os.map((o) => o.value)),
    ['', ...presets.models.map((m) => m.id)]);

  await change(() => page.fill('#import-name-0', TOML_NAME));
  await change(() => page.fill('#import-text-0', TOML));
  await change(() => page.selectOption('#import-gpu', 'a100-80gb'));
  await change(() => page.fill('#import-gpus', '64'));

  const want = cli(DOC);
  assert.equal(want.ok, true, JSON.stringify(want.error));
  // what the file says (written here from the file, not from either answer)
  assert.equal(want.request.parallel.tp, 1);
  assert.equal(want.request.training.seq_len, 8192);

  await expectResult('import of llama3_8b.toml');
  s = await shown();
  assert.equal(s.status, 'result');
  assert.equal(s.error, '');
  assert.deepEqual(JSON.parse(s.request), want.request, 'the request shown is the CLI\'s');
  assert.equal(s.format, 'torchtitan');
  assert.equal(s.format, want.format);
  assert.match(await page.textContent('#import-file-formats'), /llama3_8b\.toml: torchtitan/);
  assert.equal(s.estimateDisabled, false);
  assert.equal(s.peak, '—', 'no estimate before Estimate');

  // the origins: one row per request field, each with the library's origin
  assert.equal(s.rows, Object.keys(want.origins).length);
  const seq = await originRow('training.seq_len');
  assert.equal(seq[0], 'training.seq_len');
  assert.equal(seq[1], '8192');
  assert.equal(seq[2], 'file');
  assert.ok(seq[3].includes('llama3_8b.toml:33'), seq[3]);
  assert.ok(seq[3].includes(want.origins['training.seq_len'].key), seq[3]);
  const tp = await originRow('parallel.tp');
  assert.ok(tp[3].includes(`llama3_8b.toml:${want.origins['parallel.tp'].line}`), tp[3]);
  const gpu = await originRow('gpu');
  assert.deepEqual(gpu.slice(1, 3), ['a100-80gb', 'flag']);
  assert.ok(gpu[3].includes('--gpu'), gpu[3]);
  const [field, def] = Object.entries(want.origins).find(([, o]) => o.from === 'default');
  const defRow = await originRow(field);
  assert.equal(defRow[2], 'default');
  assert.ok(defRow[3].includes(def.defined_in) && defRow[3].includes(def.framework), defRow[3]);
  const [dfield, derived] = Object.entries(want.origins).find(([, o]) => o.from === 'derived');
  assert.ok((await originRow(dfield))[3].includes(derived.rule));

  // the warnings: the library's, with file and line
  assert.equal(s.warnings.length, want.warnings.length);
  want.warnings.forEach((w, i) => {
    assert.ok(s.warnings[i].includes(w.message), s.warnings[i]);
    if (w.line != null) assert.ok(s.warnings[i].includes(`${w.file}:${w.line}`), s.warnings[i]);
  });
  await page.screenshot({ path: `${RESULTS}import.png`, fullPage: true });
});

test('Estimate: the peak of the imported request, as the CLI\'s estimate.peak_bytes', async () => {
  const want = cli({ ...DOC, estimate: true });
  assert.equal(want.ok, true, JSON.stringify(want.error));
  const pretrain = cli(want.request);
  assert.equal(pretrain.peak_bytes, want.estimate.peak_bytes, 'import + estimate is the pretrain answer');
  await change(() => page.click('#import-estimate'));
  await expectResult('Estimate');
  const s = await shown();
  assert.equal(s.peak, `${g2(want.estimate.peak_bytes)} GiB (stage ${want.estimate.peak_stage})`);
  assert.equal(s.verdict, want.estimate.peak_verdict === 'oom' ? 'out of memory' : want.estimate.peak_verdict);
  assert.equal(Number(await page.getAttribute('#import-peak', 'data-bytes')), want.estimate.peak_bytes);
  assert.ok(s.statusText.includes(`peak ${g2(want.estimate.peak_bytes)} GiB`), s.statusText);
  assert.deepEqual(JSON.parse(s.request), want.request);

  // an edit drops the estimate (it was of the previous request) and imports again
  await change(() => page.fill('#import-gpus', '32'));
  await expectResult('gpus 32');
  const again = await shown();
  assert.equal(again.peak, '—');
  assert.deepEqual(JSON.parse(again.request), cli({ ...DOC, gpus: 32 }).request);
  assert.equal(JSON.parse(again.request).parallel.gpus, 32);
  await change(() => page.fill('#import-gpus', '64'));
});

test('without a GPU: the library\'s message naming gpu / --gpu, and nothing of the last import left', async () => {
  await change(() => page.click('#import-estimate'));
  assert.notEqual((await shown()).peak, '—');
  await change(() => page.selectOption('#import-gpu', ''));
  const { gpu, ...noGpu } = DOC;
  const want = cli(noGpu);
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'gpu');
  const s = await shown();
  assert.equal(s.status, 'error');
  assert.equal(s.error, want.error.message, 'the library\'s message, verbatim');
  assert.match(s.error, /gpu/);
  assert.match(s.error, /--gpu/);
  assert.ok(s.statusText.includes(want.error.message), s.statusText);
  assert.equal(s.invalid, true);
  assert.equal(s.request, '', 'no stale request');
  assert.equal(s.rows, 0, 'no stale origins');
  assert.equal(s.format, '—');
  assert.equal(s.peak, '—', 'no stale estimate');
  assert.deepEqual(s.warnings, []);
  assert.equal(s.estimateDisabled, true);
  assert.deepEqual(pageErrors, []);
  // the GPU again: a result again
  await change(() => page.selectOption('#import-gpu', 'a100-80gb'));
  await expectResult('GPU again');
  assert.deepEqual(JSON.parse((await shown()).request), cli(DOC).request);
});

test('a bad file (100 brackets deep): the library\'s refusal, field and message', async () => {
  const bad = { name: 'deep.yaml', text: `${'['.repeat(100)}\n` };
  const want = cli({ ...DOC, files: [bad] });
  assert.equal(want.ok, false);
  assert.ok(want.error.field.startsWith('files'), want.error.field);
  await change(() => page.fill('#import-name-0', bad.name));
  await change(() => page.fill('#import-text-0', bad.text));
  const s = await shown();
  assert.equal(s.status, 'error');
  assert.equal(s.error, want.error.message);
  assert.equal(await page.getAttribute('#import-error', 'data-field'), want.error.field);
  assert.equal(s.request, '');
  assert.equal(s.rows, 0);
});

test('two files of one run chosen from disk, with the model and sequence fields: the CLI\'s request', async () => {
  const dir = 'accelerate/deepspeed-zero1-fp16-2gpu';
  const names = ['deepspeed.yaml', 'zero_stage1_config.json'];
  // back to one empty entry, then choose both files at once
  await change(() => page.fill('#import-name-0', ''));
  await change(() => page.fill('#import-text-0', ''));
  assert.equal((await shown()).status, 'idle');
  await change(() => page.setInputFiles('#import-file-input', names.map((n) => launchDir(`${dir}/${n}`))));
  await change(() => page.selectOption('#import-gpu', 'h100-80gb'));
  await change(() => page.fill('#import-gpus', ''));
  await change(() => page.selectOption('#import-model', 'phi-3.5-mini'));
  await change(() => page.fill('#import-seq', '2048'));
  const doc = { mode: 'import', gpu: 'h100-80gb', model: 'phi-3.5-mini', seq_len: 2048,
    files: names.map((n) => ({ name: n, text: readFileSync(launchDir(`${dir}/${n}`), 'utf8') })) };
  const want = cli(doc);
  assert.equal(want.ok, true, JSON.stringify(want.error));
  await expectResult('accelerate + DeepSpeed JSON');
  const s = await shown();
  assert.deepEqual(JSON.parse(s.request), want.request);
  assert.equal(s.format, want.format);
  assert.deepEqual(await page.$$eval('#import-files .import-name', (is) => is.map((i) => i.value)), names);
  assert.equal((await originRow('model'))[2], 'flag');
  assert.equal((await originRow('training.seq_len'))[1], '2048');
  // the JSON download is the import answer
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-json')]);
  const saved = JSON.parse(readFileSync(await download.path(), 'utf8'));
  assert.equal(saved.mode, 'import');
  assert.deepEqual(saved.request, want.request);
});

test('leaving the Import tab shows the form again; the pretraining tab answers as before', async () => {
  await change(() => page.click('#tab-pretrain'));
  assert.equal(await page.isVisible('#inputs'), true);
  assert.equal(await page.isVisible('#panel-import'), false);
  await expectResult('back to pretraining');
});
