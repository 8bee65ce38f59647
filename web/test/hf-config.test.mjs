// End-to-end tests of a model loaded by its Hugging Face id (web/src/hf-config.js): the built page
// (web/dist) in Debian's headless Chromium, with the Hub intercepted (page.route: there is no
// network here) and served a real config.json of the repository's test data, against the memest
// CLI (`memest request`) for the same config pasted as the model. Needs what e2e.test.mjs needs:
// web/dist (vite build) and the CLI (MEMEST_CLI).
//
// A test that expects a result fails when the page shows an error instead (expectResult); one
// that expects a refusal fails unless the page shows that message and no figures at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { change, cli, expectResult, g2, hashOf, page, pageErrors, probe, RESULTS, show, usePage } from './harness.mjs';

const data = (p) => readFileSync(fileURLToPath(new URL(`../../tests/data/configs/${p}`, import.meta.url)), 'utf8');
/** Qwen3-30B-A3B's config.json as the Hub serves it (tests/data/configs, a verbatim copy). */
const QWEN_TEXT = data('qwen3-30b-a3b.json');
const QWEN = JSON.parse(QWEN_TEXT);
const QWEN_ID = 'Qwen/Qwen3-30B-A3B';
const HUB_URL = (repo, rev = 'main') => `https://huggingface.co/${repo}/resolve/${rev}/config.json`;

// 8 x H100 80GB, tp 2, ZeRO-1, 4096 tokens: the page's state (URL hash keys, written here
// independently of the page) and the same request as the page sends it, its model left to fill.
const BASE = { g: 'h100-80gb', gpus: '8', tp: '2', cp: '1', pp: '1', vpp: '1', zero: '1', seq: '4096',
  mbs: '1', gbs: '64' };
const request = (model, seq = 4096) => ({
  mode: 'pretrain', model, gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 2, cp: 1, pp: 1, vpp: 1, sp: true, zero: 1, ep: 1, etp: 0 },
  training: { seq_len: seq, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true },
});

usePage();

/** What the Hub answers, per URL: a function of the request (route.fulfill / route.abort). The
 *  URLs asked, in order, in `asked`. Any URL not listed: 599 (the test then fails on it). */
const hub = new Map();
const asked = [];
let routed = false;
async function routeHub() {
  if (routed) return;
  routed = true;
  await page.route('https://huggingface.co/**', async (route) => {
    const url = route.request().url();
    asked.push(url);
    const answer = hub.get(url);
    if (answer) await answer(route);
    else await route.fulfill({ status: 599, body: `not expected by the test: ${url}` });
  });
}
const json = (text) => (route) => route.fulfill({ status: 200, contentType: 'application/json',
  headers: { 'access-control-allow-origin': '*' }, body: text });
const status = (code, body) => (route) => route.fulfill({ status: code, contentType: 'text/plain',
  headers: { 'access-control-allow-origin': '*' }, body });

/** Types an id into the field and presses Load; waits for the Hub's answer and its update. */
async function load(id, how = 'click') {
  await routeHub();
  const before = await probe();
  await page.fill('#hf-id', id);
  if (how === 'enter') await page.press('#hf-id', 'Enter');
  else await page.click('#hf-load');
  await page.waitForFunction((n) => window.__memest.hubAnswers > n, before.hubAnswers);
  await page.waitForFunction(() => document.querySelector('#status').dataset.state !== 'pending');
}

const peakText = (answer) => `${g2(answer.peak_bytes)} GiB (stage ${answer.peak_stage})`;

/** The page shows the CLI's answer: the peak (as shown), and the margin and the allocator's
 *  peak exactly (data-value). */
async function expectAnswer(want, what) {
  await expectResult(what);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.equal(await page.textContent('#peak'), peakText(want), `${what}: the peak`);
  assert.equal(await page.getAttribute('#margin', 'data-value'), String(want.margin_bytes), `${what}: the margin`);
  assert.equal(await page.getAttribute('#torch-allocated', 'data-value'),
    String(want.torch_max_memory_allocated_bytes), `${what}: the allocator's peak`);
}

/** The page shows `message` next to the model and in the status line, and no figures. */
async function expectRefusal(message, what) {
  const s = await page.evaluate(() => ({
    state: document.querySelector('#status').dataset.state,
    status: document.querySelector('#status').textContent,
    model: document.querySelector('#err-model').textContent,
    peak: document.querySelector('#peak').textContent,
    margin: document.querySelector('#margin').dataset.value,
    chart: document.querySelector('#chart-box').hidden,
    stages: document.querySelector('#stages-table').tBodies[0].rows.length,
    invalid: document.querySelector('#hf-id').getAttribute('aria-invalid'),
  }));
  assert.equal(s.state, 'error', `${what}: the status line says it is not computed: ${s.status}`);
  assert.ok(s.model.includes(message), `${what}: next to the model, "${message}" in: ${s.model}`);
  assert.ok(s.status.includes(message), `${what}: in the status line: ${s.status}`);
  assert.equal(s.peak, '—', `${what}: no peak left from before`);
  assert.equal(s.margin, '', `${what}: no margin left from before`);
  assert.equal(s.chart, true, `${what}: no chart`);
  assert.equal(s.stages, 0, `${what}: no stages`);
  assert.equal(s.invalid, 'true', `${what}: the id field is marked invalid`);
  dropFetchErrors();
  assert.deepEqual(pageErrors, [], `${what}: console errors`);
}

/** Drops the browser's own console lines for a refused fetch of the Hub (401, 404, no network):
 *  expected in these tests, which check the page's own messages; any other stays (expectResult
 *  fails on it). */
function dropFetchErrors() {
  const other = pageErrors.filter((e) => !/^Failed to load resource/.test(e));
  pageErrors.splice(0, pageErrors.length, ...other);
}

/** A result on screen first (Llama-3.1-8B, the preset), so that a refusal must clear it. */
async function startFromResult(seq = 4096) {
  dropFetchErrors();  // of a test before that stopped early
  await show(hashOf({ ...BASE, m: 'llama-3.1-8b', seq: String(seq) }));
  await expectAnswer(cli(request('llama-3.1-8b', seq)), 'the preset before');
}

const hashParams = async () => new URLSearchParams((await page.evaluate(() => location.hash)).slice(1));

test('a Hugging Face id loads its config.json from the Hub: the page\'s peak is memest request\'s for that config; a link reloads it', async () => {
  hub.set(HUB_URL(QWEN_ID), json(QWEN_TEXT));
  const want = cli(request(QWEN));
  assert.equal(want.ok, true, JSON.stringify(want.error));
  assert.notEqual(peakText(want), peakText(cli(request('llama-3.1-8b'))), 'another model, another peak');
  await startFromResult();
  asked.length = 0;
  await load(QWEN_ID);
  assert.deepEqual(asked, [HUB_URL(QWEN_ID)], 'one fetch, of the repository\'s config.json at main');
  await expectAnswer(want, 'Qwen3-30B-A3B from the Hub');
  assert.equal(await page.inputValue('#model-preset'), 'custom');
  assert.equal(await page.inputValue('#model-config'), QWEN_TEXT, 'the config as the Hub sent it, in the form');
  assert.equal(await page.textContent('#hf-status'), `Loaded ${HUB_URL(QWEN_ID)}`);
  assert.match(await page.textContent('#model-line'), new RegExp(`^${want.model.name} `));
  await page.screenshot({ path: `${RESULTS}hf-config.png`, fullPage: true });
  // the URL holds the id, not the config's text; the link loads it again
  const params = await hashParams();
  assert.equal(params.get('hf'), QWEN_ID);
  assert.equal(params.get('m'), 'custom');
  assert.equal(params.has('cfg'), false, 'the config itself is not in the link');
  const link = await page.evaluate(() => location.href);
  asked.length = 0;
  await page.goto('about:blank');
  await page.goto(link);
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForFunction(() => window.__memest.hubAnswers >= 1);
  assert.deepEqual(asked, [HUB_URL(QWEN_ID)], 'the link fetched the config again');
  await expectAnswer(want, 'the shared link');
  assert.equal(await page.inputValue('#hf-id'), QWEN_ID, 'the id field shows the link\'s id');
  // another field changed: the config stays the Hub's, the id stays in the URL, no new fetch
  await change(() => page.fill('#gbs', '128'));
  await expectResult('global batch 128');
  assert.equal((await hashParams()).get('hf'), QWEN_ID);
  assert.deepEqual(asked, [HUB_URL(QWEN_ID)]);
  // a preset chosen: the id goes
  await change(() => page.selectOption('#model-preset', 'llama-3.1-8b'));
  await expectResult('back to a preset');
  assert.equal((await hashParams()).has('hf'), false, 'a preset drops the id from the URL');
});

test('an id with @revision, a huggingface.co or hf.co URL, a bare name: each fetches config.json at its revision', async () => {
  const cases = [
    ['Qwen/Qwen3-30B-A3B@v1.0', HUB_URL(QWEN_ID, 'v1.0'), 'enter'],
    ['Qwen/Qwen3-30B-A3B@refs/pr/7', HUB_URL(QWEN_ID, 'refs%2Fpr%2F7')],
    ['https://huggingface.co/Qwen/Qwen3-30B-A3B', HUB_URL(QWEN_ID)],
    ['https://huggingface.co/Qwen/Qwen3-30B-A3B/tree/0123abcd', HUB_URL(QWEN_ID, '0123abcd')],
    ['hf.co/Qwen/Qwen3-30B-A3B/blob/main/config.json', HUB_URL(QWEN_ID)],
    ['gpt2', HUB_URL('gpt2'), 'click', 1024],  // GPT-2 learned 1024 positions
  ];
  const gpt2 = data('gpt2.json');
  for (const [, url] of cases) hub.set(url, json(url.includes('/gpt2/') ? gpt2 : QWEN_TEXT));
  for (const [id, url, how, seq = 4096] of cases) {
    await startFromResult(seq);
    asked.length = 0;
    await load(id, how);
    assert.deepEqual(asked, [url], `${id}: the URL fetched`);
    const want = cli(request(url.includes('/gpt2/') ? JSON.parse(gpt2) : QWEN, seq));
    await expectAnswer(want, id);
  }
});

test('an id that is not one: the message names the field, and nothing is fetched', async () => {
  for (const [id, why] of [
    ['meta llama/Llama-3.1-8B', 'it contains spaces'],
    ['a/b/c', 'more than one "/" (owner/name)'],
    ['-meta/Llama', 'the owner "-meta" starts or ends with \'-\' or \'.\''],
    ['meta-llama/Llama@', 'nothing after @ (a branch, tag or commit)'],
    ['https://example.com/meta-llama/Llama-3.1-8B', 'a URL of a site other than huggingface.co'],
    ['https://huggingface.co/datasets/allenai/c4', 'a dataset is not a model'],
  ]) {
    await startFromResult();
    asked.length = 0;
    await load(id);
    await expectRefusal(`model: Hugging Face id "${id}": ${why}`, id);
    assert.deepEqual(asked, [], `${id}: nothing fetched`);
  }
});

test('a gated repository (401, 403): the page says to paste its config.json, and shows no figures; the pasted config then answers', async () => {
  const gated = 'model: the Hugging Face Hub refuses meta-llama/Llama-3.1-8B\'s config.json';
  const advice = 'If gated: paste its config.json, or log in on the Hub and download it';
  for (const code of [401, 403]) {
    hub.set(HUB_URL('meta-llama/Llama-3.1-8B'), status(code, 'Access to model meta-llama/Llama-3.1-8B is restricted.'));
    await startFromResult();
    await load('meta-llama/Llama-3.1-8B');
    await expectRefusal(gated, `HTTP ${code}`);
    await expectRefusal(`(HTTP ${code}): the model is gated or private. ${advice}`, `HTTP ${code}`);
  }
  assert.equal((await hashParams()).get('hf'), 'meta-llama/Llama-3.1-8B', 'the link keeps the id');
  // the user pastes the config.json instead: the library answers, the id leaves the URL
  const llama = data('llama-3.1-8b.json');
  await change(() => page.fill('#model-config', llama));
  await expectAnswer(cli(request(JSON.parse(llama))), 'the pasted config after a gated id');
  assert.equal((await hashParams()).has('hf'), false);
  assert.equal(await page.textContent('#hf-status'), '');
});

test('no config.json (404): the page says so, with no figures', async () => {
  hub.set(HUB_URL('TheBloke/Llama-2-7B-GGUF'), status(404, 'Entry not found'));
  await startFromResult();
  await load('TheBloke/Llama-2-7B-GGUF');
  await expectRefusal('model: the Hugging Face Hub has no config.json for TheBloke/Llama-2-7B-GGUF (HTTP 404)', '404');
});

test('a body that is not JSON (a login page), or JSON that is not an object: the page says so, with no figures', async () => {
  hub.set(HUB_URL('acme/html'), (route) => route.fulfill({ status: 200, contentType: 'text/html',
    headers: { 'access-control-allow-origin': '*' }, body: '<!doctype html><html><body>Log in</body></html>' }));
  await startFromResult();
  await load('acme/html');
  await expectRefusal(`model: ${HUB_URL('acme/html')} is not JSON (`, 'HTML');
  hub.set(HUB_URL('acme/list'), json('[1, 2, 3]'));
  await startFromResult();
  await load('acme/list');
  await expectRefusal(`model: ${HUB_URL('acme/list')} is JSON but not a config.json object`, 'a list');
});

// A CORS refusal reaches the page as the same failed fetch (a TypeError) as no network: the
// route cannot leave out CORS headers (Playwright's answers bypass the browser's check).
test('no network (the fetch fails, as a CORS refusal does): the page says so, with no figures', async () => {
  hub.set(HUB_URL('acme/offline'), (route) => route.abort('internetdisconnected'));
  await startFromResult();
  await load('acme/offline');
  await expectRefusal(`model: could not fetch ${HUB_URL('acme/offline')} (`, 'no network');
});

test('a config the library refuses: its own message, naming the field, and no figures', async () => {
  const broken = { ...QWEN, num_hidden_layers: 0 };
  const refused = cli(request(broken));
  assert.equal(refused.ok, false, 'the CLI refuses it too');
  assert.match(refused.error.field, /^model/);
  hub.set(HUB_URL('acme/broken'), json(JSON.stringify(broken, null, 2)));
  await startFromResult();
  await load('acme/broken');
  await expectRefusal(refused.error.message, 'no layers');
});
