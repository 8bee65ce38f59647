// End-to-end tests: the built page (web/dist) in real headless Chromium (Debian's, driven by
// playwright-core), served on 127.0.0.1, against the memest CLI for the same requests.
// Needs: web/dist (vite build), the CLI (MEMEST_CLI, default build-web-cli/bindings/cli/memest).
// Screenshots go to web/test-results/ (git-ignored; CI artifacts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, copyFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { serve } from './server.mjs';
import { launch } from './browser.mjs';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const CLI = process.env.MEMEST_CLI ?? here('../../build-web-cli/bindings/cli/memest');
const RESULTS = here('../test-results/');
const GiB = 1024 ** 3;
const cases = JSON.parse(readFileSync(here('./cross-check.json'), 'utf8')).cases;
mkdirSync(RESULTS, { recursive: true });

/** The CLI's answer to a JSON request (`memest request`): exit 0 with {ok: true}, 2 with {ok: false}. */
function cli(request) {
  try {
    return JSON.parse(execFileSync(CLI, ['request'], { input: JSON.stringify(request), encoding: 'utf8' }));
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw e;
  }
}

/** The page state (URL hash) that sets the form to a request, written independently of the page. */
function hashFor(req) {
  const p = new URLSearchParams();
  if (typeof req.model === 'string') p.set('m', req.model);
  else {
    p.set('m', 'custom');
    p.set('cfg', Buffer.from(JSON.stringify(req.model)).toString('base64url'));
  }
  if (typeof req.gpu === 'string') p.set('g', req.gpu);
  else { p.set('g', 'custom'); p.set('mem', String(req.gpu.memory_gib)); }
  const par = req.parallel;
  const tr = req.training;
  for (const [k, v] of [['gpus', par.gpus], ['tp', par.tp], ['cp', par.cp], ['pp', par.pp], ['vpp', par.vpp],
    ['zero', par.zero], ['sp', par.sp ? '1' : '0'], ['seq', tr.seq_len], ['mbs', tr.micro_batch],
    ['gbs', tr.global_batch], ['rc', tr.recompute], ['fa', tr.flash_attention ? '1' : '0']]) p.set(k, String(v));
  return `#${p.toString()}`;
}

let server;
let browser;
let page;
const pageErrors = [];

before(async () => {
  assert.ok(existsSync(CLI), `the memest CLI is built at ${CLI}`);
  assert.ok(existsSync(here('../dist/index.html')), 'web/dist is built (npx vite build)');
  server = await serve(here('../dist/'));
  browser = await launch();
  page = await browser.context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="1"]');
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Sets the page's state through its URL (as a shared link does) and waits for the render. */
async function show(hash) {
  const before = await page.evaluate(() => window.__memest.updates);
  await page.evaluate((h) => {
    if ((location.hash || '#') === h) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = h;
  }, hash);
  await page.waitForFunction((n) => window.__memest.updates > n, before);
}

/** Waits for the form's pending update (inputs render on the next animation frame). */
async function settle() {
  const before = await page.evaluate(() => window.__memest.updates);
  await page.waitForFunction((n) => window.__memest.updates > n, before);
}

async function texts(selector) {
  return page.$$eval(selector, (els) => els.map((e) => e.textContent.trim()));
}

test('the default page shows the README example (27.20 GiB, fits) with no console errors', async () => {
  assert.equal(await page.textContent('#estimate'), '27.20 GiB');
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), 'fits');
  // the verdict's band, the table's legend and the recompute options are the library's
  const tables = cli({ mode: 'enums' });
  assert.equal(tables.ok, true);
  const pct = (f) => `${Math.round(f * 1000) / 10} %`;
  assert.equal(await page.textContent('#verdict'), `fits (≤ ${pct(tables.verdict_bands.fits)})`);
  assert.deepEqual(await texts('#band-legend .band'),
    [...Object.entries(tables.verdict_bands).map(([v, f]) => `${v} ≤ ${pct(f)}`), 'OOM']);
  assert.deepEqual(await page.$$eval('#recompute option', (os) => os.map((o) => o.value)), tables.enums.recompute);
  assert.equal(await page.locator('#stages-table tbody tr').count(), 2);
  assert.ok(await page.locator('#stage-chart').isVisible());
  await page.screenshot({ path: `${RESULTS}default.png`, fullPage: true });
  if (process.env.MEMEST_UPDATE_SCREENSHOT) {
    await page.screenshot({ path: `${RESULTS}web-calculator.png` });
    copyFileSync(`${RESULTS}web-calculator.png`, here('../../docs/web-calculator.png'));
  }
  assert.deepEqual(pageErrors, []);
});

test('20 cross-checked requests: the page shows the CLI\'s GiB figures', async () => {
  assert.equal(cases.length, 20);
  for (const [i, c] of cases.entries()) {
    const want = cli(c.request);
    assert.equal(want.ok, true, `${c.name}: CLI answers ok`);
    await show(hashFor(c.request));
    const g = (b) => (b / GiB).toFixed(2);
    assert.equal(await page.textContent('#estimate'), `${g(want.estimate_bytes)} GiB`, c.name);
    assert.equal(await page.textContent('#peak'), `${g(want.peak_bytes)} GiB (stage ${want.peak_stage})`, c.name);
    assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.verdict, c.name);
    if (c.paper_estimate_gib != null) assert.equal(g(want.estimate_bytes), c.paper_estimate_gib.toFixed(2), c.name);
    const rows = await page.$$eval('#stages-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    assert.equal(rows.length, want.stages.length, c.name);
    want.stages.forEach((s, k) => {
      assert.deepEqual(rows[k].slice(3), [s.weights_bytes, s.gradients_bytes, s.optimizer_bytes, s.activations_bytes, s.total_bytes].map(g),
        `${c.name}: stage ${k}`);
    });
    if (i === 16) await page.screenshot({ path: `${RESULTS}case-custom-gpu.png`, fullPage: true });
  }
});

test('a configuration typed into the form equals the CLI', async () => {
  await show('#');
  await page.selectOption('#model-preset', 'llama-3.1-70b');
  await page.selectOption('#gpu-preset', 'h100-80gb');
  for (const [id, v] of [['#gpus', '128'], ['#tp', '8'], ['#pp', '4'], ['#seq', '4096'], ['#mbs', '2'], ['#gbs', '512']]) {
    await page.fill(id, v);
  }
  await page.selectOption('#recompute', 'selective');
  await page.waitForFunction(() => location.hash.includes('tp=8') && location.hash.includes('rc=selective'));
  const want = cli({ mode: 'pretrain', model: 'llama-3.1-70b', gpu: 'h100-80gb',
    parallel: { gpus: 128, tp: 8, cp: 1, pp: 4, vpp: 1, sp: true, zero: 1 },
    training: { seq_len: 4096, micro_batch: 2, global_batch: 512, recompute: 'selective', flash_attention: true } });
  assert.equal(await page.textContent('#estimate'), `${(want.estimate_bytes / GiB).toFixed(2)} GiB`);
});

test('band colours: verdict badge and table cells are green / yellow / red by the library\'s verdict', async () => {
  const colours = {};
  for (const c of cases) {
    const want = cli(c.request);
    if (colours[want.verdict]) continue;
    await show(hashFor(c.request));
    colours[want.verdict] = await page.$eval('#verdict', (e) => getComputedStyle(e).backgroundColor);
  }
  const rgb = (s) => s.match(/\d+/g).slice(0, 3).map(Number);
  const [fr, fg, fb] = rgb(colours.fits);
  const [tr, tg, tb] = rgb(colours.tight);
  const [or, og, ob] = rgb(colours.oom);
  assert.ok(fg > fr && fg > fb, `fits is green: ${colours.fits}`);
  assert.ok(tr > tb && tg > tb, `tight is yellow: ${colours.tight}`);
  assert.ok(or > og && or > ob, `oom is red: ${colours.oom}`);

  // the layouts x GPUs table: each cell's band is the CLI's verdict for that layout
  await show(hashFor(cases[0].request));
  const cells = await page.$$eval('#layout-table button.cell', (bs) => bs.map((b) => ({
    layout: b.dataset.layout, verdict: b.dataset.verdict, text: b.textContent, cls: b.className,
    bg: getComputedStyle(b).backgroundColor,
  })));
  assert.ok(cells.length > 100, `table has cells (${cells.length})`);
  const sample = cells.filter((_, i) => i % Math.ceil(cells.length / 12) === 0);
  for (const c of sample) {
    const [tp, cp, pp, mbs, gpus] = c.layout.split(',').map(Number);
    const req = structuredClone(cases[0].request);
    Object.assign(req.parallel, { tp, cp, pp, gpus });
    req.training.micro_batch = mbs;
    const want = cli(req);
    assert.equal(c.text, (want.estimate_bytes / GiB).toFixed(2), c.layout);
    assert.equal(c.verdict, want.verdict, c.layout);
    assert.ok(c.cls.includes(`band-${want.verdict}`), c.layout);
  }
  const bandBg = {};
  for (const c of cells) bandBg[c.verdict] ??= rgb(c.bg);
  for (const v of ['fits', 'tight', 'oom']) assert.ok(bandBg[v], `the table shows a ${v} cell`);
  assert.ok(bandBg.fits[1] > bandBg.fits[0], 'fits cells are green');
  assert.ok(bandBg.oom[0] > bandBg.oom[1], 'oom cells are red');
  assert.ok(bandBg.tight[2] < bandBg.tight[0], 'tight cells are yellow');
  // a refused cell explains itself with the library's message (asked for when pointed at)
  const refused = page.locator('#layout-table td.refused[data-layout]').first();
  const [rtp, rcp, rpp, rmbs, rgpus] = (await refused.getAttribute('data-layout')).split(',').map(Number);
  await refused.hover();
  const why = cli({ ...cases[0].request, parallel: { ...cases[0].request.parallel, tp: rtp, cp: rcp, pp: rpp, gpus: rgpus },
    training: { ...cases[0].request.training, micro_batch: rmbs } });
  assert.equal(why.ok, false);
  assert.equal(await refused.getAttribute('title'), why.error.message);
  // a cell loads its layout into the form
  const target = cells.find((c) => c.verdict === 'tight');
  await page.click(`#layout-table button[data-layout="${target.layout}"]`);
  assert.equal(await page.textContent('#estimate'), `${target.text} GiB`);
  await page.screenshot({ path: `${RESULTS}table.png`, fullPage: true });
});

test('an invalid field shows the library\'s own error next to that input', async () => {
  await show('#');
  await page.fill('#tp', '3');
  await page.waitForFunction(() => document.querySelector('#err-tp').textContent !== '');
  const want = cli({ ...cases[0].request, parallel: { ...cases[0].request.parallel, tp: 3 } });
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'parallel.tp');
  assert.equal(await page.textContent('#err-tp'), want.error.message);
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), 'true');
  await page.screenshot({ path: `${RESULTS}invalid-tp.png` });
  await page.fill('#tp', '4');
  await page.waitForFunction(() => document.querySelector('#err-tp').textContent === '');
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), null);

  // a bad pasted config.json: the model field is marked
  await page.selectOption('#model-preset', 'custom');
  await page.fill('#model-config', '{"model_type": "llama", "hidden_size": 4096}');
  await page.waitForFunction(() => document.querySelector('#err-model').textContent !== '');
  const bad = cli({ ...cases[0].request, model: { model_type: 'llama', hidden_size: 4096 } });
  assert.equal(await page.textContent('#err-model'), bad.error.message);
  assert.equal(await page.getAttribute('#model-config', 'aria-invalid'), 'true');
});

test('the state is shared by URL: a fresh page restores the exact configuration', async () => {
  const c = cases[18];
  await show(hashFor(c.request));
  const url = page.url();
  const other = await browser.context.newPage();
  await other.goto(url);
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.textContent('#estimate'), await page.textContent('#estimate'));
  assert.equal(await other.inputValue('#model-preset'), 'custom');
  assert.match(await other.inputValue('#model-config'), /"hidden_size":2048/);
  await other.close();
});

test('downloads: the result as JSON and as CSV', async () => {
  await show(hashFor(cases[0].request));
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-json')]);
  const json = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  assert.equal(json.estimate_bytes, cli(cases[0].request).estimate_bytes);
  const [dl2] = await Promise.all([page.waitForEvent('download'), page.click('#download-csv')]);
  const csv = readFileSync(await dl2.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^stage,layers,/);
  assert.equal(csv.length, 1 + 2);
});

test('fine-tuning tab: LLMem Algorithm 1 as a sortable table, as the CLI selects', async () => {
  await show('#m=opt-2.7b&g=v100-16gb&gpus=4&seq=512');
  await page.click('#tab-finetune');
  await page.waitForSelector('#finetune-table tbody tr');
  const want = cli({ mode: 'finetune', model: 'opt-2.7b', gpu: 'v100-16gb', parallel: { gpus: 4 },
    training: { seq_len: 512 }, finetune: { method: 'auto' } });
  const rows = await page.$$eval('#finetune-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, want.methods.length);
  const selected = await page.$eval('#finetune-table tr.selected td', (td) => td.textContent);
  assert.equal(selected, want.selected);
  // sort by max batch, descending, with the keyboard
  const header = page.locator('#finetune-table th button', { hasText: 'Max batch' });
  await header.focus();
  await page.keyboard.press('Enter');
  const batches = await page.$$eval('#finetune-table tbody tr td:nth-child(5)', (tds) => tds.map((t) => Number(t.textContent)));
  assert.deepEqual(batches, [...batches].sort((a, b) => b - a));
  assert.equal(await page.getAttribute('#finetune-table th:nth-child(5)', 'aria-sort'), 'descending');
  await page.screenshot({ path: `${RESULTS}finetune.png`, fullPage: true });
});

/** The search table as objects keyed by its column labels (sort arrows dropped). */
async function searchRows() {
  return page.$$eval('#search-table', ([table]) => {
    const labels = [...table.tHead.rows[0].cells].map((th) => th.textContent.replace(/[▲▼]/g, '').trim());
    return [...table.tBodies[0].rows].map((tr) => Object.fromEntries(
      [...tr.cells].map((td, i) => [labels[i], td.textContent.trim()])));
  });
}

/** Opens the search tab on a state and waits for its answer: rows, or an error (a failure). */
async function searchTab(hash, req) {
  await show(hash);
  const before = await page.evaluate(() => window.__memest.updates);
  await page.click('#tab-search');
  await page.waitForFunction((n) => window.__memest.updates > n, before);
  await page.waitForFunction(() => document.querySelector('#search-table tbody tr')
    || document.querySelector('#search-error').textContent !== '');
  const error = await page.textContent('#search-error');
  assert.equal(error, '', `the search tab shows an error for ${hash}: ${error}`);
  const want = cli(req);
  assert.equal(want.ok, true, `the CLI ranks the page's search: ${JSON.stringify(want.error)}`);
  assert.ok(want.results.length > 0, 'the library ranks some layout');
  const rows = await searchRows();
  assert.equal(rows.length, want.results.length);
  want.results.forEach((r, i) => {
    const row = rows[i];
    const l = r.layout;
    assert.deepEqual([row.Rank, row.tp, row.cp, row.pp, row.vpp, row.dp, row.mbs, row.zero, row.Recompute],
      [r.rank, l.tp, l.cp, l.pp, l.vpp, l.dp, l.micro_batch, l.zero, l.recompute].map(String), `row ${i + 1}`);
    assert.equal(row['Peak (GiB)'], (r.peak_bytes / GiB).toFixed(2), `row ${i + 1}`);
    assert.equal(row.Verdict, r.verdict, `row ${i + 1}`);
    assert.equal(row['TFLOP/s per GPU'], r.tflops_per_gpu.toFixed(1), `row ${i + 1}`);
  });
  assert.match(await page.textContent('#search-summary'), new RegExp(`^${want.ranked} of ${want.candidates} layouts`));
  return want;
}

test('layout search tab: the library\'s ranked layouts for the page\'s defaults', async () => {
  const base = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb',
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none', flash_attention: true }, search: { top: 10 } };
  // the page's defaults: 8 GPUs, recomputation "none" pinned by the form
  await searchTab('#', { ...base, parallel: { gpus: 8 } });
  await page.screenshot({ path: `${RESULTS}search.png`, fullPage: true });
  // 64 GPUs with full recomputation: every ranked layout recomputes fully
  const want = await searchTab('#gpus=64&rc=full', { ...base, parallel: { gpus: 64 },
    training: { ...base.training, recompute: 'full' } });
  assert.ok(want.results.every((r) => r.layout.recompute === 'full'));
  // "Use" loads the best layout into the pretraining tab: the CLI's estimate for it
  await page.click('#search-table tbody tr:first-child button');
  await page.waitForFunction(() => document.querySelector('#tab-pretrain').getAttribute('aria-selected') === 'true');
  const l = want.results[0].layout;
  const estimate = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb',
    parallel: { gpus: 64, tp: l.tp, cp: l.cp, pp: l.pp, vpp: l.vpp, sp: true, zero: l.zero },
    training: { seq_len: 8192, micro_batch: l.micro_batch, global_batch: 1024, recompute: l.recompute, flash_attention: true } });
  assert.equal(estimate.ok, true, JSON.stringify(estimate.error));
  assert.equal(await page.textContent('#estimate'), `${(estimate.estimate_bytes / GiB).toFixed(2)} GiB`);
  assert.equal(await page.inputValue('#recompute'), l.recompute);
  assert.deepEqual(pageErrors, []);
});

test('keyboard: tabs follow the arrow keys; every input has a label', async () => {
  await show('#');
  await page.focus('#tab-pretrain');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.getAttribute('#tab-finetune', 'aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-finetune');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await page.getAttribute('#tab-pretrain', 'aria-selected'), 'true');
  const unlabeled = await page.$$eval('input, select, textarea', (els) => els
    .filter((e) => !e.labels?.length && !e.getAttribute('aria-label')).map((e) => e.id));
  assert.deepEqual(unlabeled, []);
});

test('dark theme and a narrow screen render (screenshots)', async () => {
  await show('#');
  await page.click('#theme'); // auto -> light
  await page.click('#theme'); // light -> dark
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.ok(bg.match(/\d+/g).slice(0, 3).map(Number).every((x) => x < 60), `dark background: ${bg}`);
  await page.screenshot({ path: `${RESULTS}dark.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${RESULTS}narrow.png`, fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no horizontal page overflow on a phone (${overflow}px)`);
  await page.click('#theme'); // back to auto
  await page.setViewportSize({ width: 1360, height: 900 });
  assert.deepEqual(pageErrors, []);
});
