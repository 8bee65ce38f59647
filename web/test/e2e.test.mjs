// End-to-end tests: the built page (web/dist) in real headless Chromium (Debian's, driven by
// playwright-core), served on 127.0.0.1, against the memest CLI for the same requests.
// Needs: web/dist (vite build), the CLI (MEMEST_CLI, default build-web-cli/bindings/cli/memest).
// Screenshots go to web/test-results/ (git-ignored; CI artifacts). With MEMEST_UPDATE_SCREENSHOT=1
// the README's screenshot (docs/web-calculator.png) is rewritten.
//
// Every test fails when the page shows an error where a result is expected: show() and
// expectResult() check the status line's state, the error slots and the console.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI, RESULTS, GiB, g2, cli, cliPretrain, usePage, page, browser, server, pageErrors, probe,
  expectResult } from './harness.mjs';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const pct = (f) => `${Math.round(f * 1000) / 10} %`;
/** A probability as the page words it: pct, with the ends said as "< 0.1 %" / "> 99.9 %". */
const prob = (p) => (p > 0 && p < 0.001 ? '< 0.1 %' : p < 1 && p > 0.999 ? '> 99.9 %' : pct(p));
/** The margin as the page words it: left under capacity, or over it. */
const marginWords = (b) => (b >= 0 ? `margin ${g2(b)} GiB` : `over by ${g2(-b)} GiB`);
/** The status line's figures of a pretrain answer, as the page writes them. */
const statusFigures = (want, fits) => `peak ${g2(want.peak_bytes)} GiB of ${g2(want.capacity_bytes)} GiB per GPU ` +
  `(${pct(want.peak_bytes / want.capacity_bytes)}, the overhead model; fits ≤ ${pct(fits)}; ` +
  `probability of OOM ${prob(want.oom_probability)}, ${marginWords(want.margin_bytes)}).`;
/** The verdict in words, as the CLI prints it ("verdict: out of memory"). */
const words = (v) => (v === 'oom' ? 'out of memory' : v);
const cases = JSON.parse(readFileSync(here('./cross-check.json'), 'utf8')).cases;

/** The 4D paper's OOM run: (tp 4, cp 2, pp 1, mbs 2) on 8 x A100 40GB, Llama-3.1-8B, seq 8192. */
const OOM = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb',
  parallel: { gpus: 8, tp: 4, cp: 2, pp: 1, vpp: 1, sp: true, zero: 1 },
  training: { seq_len: 8192, micro_batch: 2, global_batch: 1024, recompute: 'none', flash_attention: true } };

/** A layout whose peak is tight (between the library's fits band and capacity). */
const TIGHT = { ...OOM, parallel: { ...OOM.parallel, cp: 1 }, training: { ...OOM.training, micro_batch: 1 } };

/** The CLI's table output for a subcommand. */
function cliText(args) {
  return execFileSync(CLI, args, { encoding: 'utf8' });
}

/** The page state (URL hash) that sets the form to a request, written independently of the page. */
function hashFor(req, extra = {}) {
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
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  return `#${p.toString()}`;
}

usePage();

/** Waits for the active tab's answer after an update (fine-tuning answers after its debounce). */
async function settleTab(before) {
  await page.waitForFunction((n) => window.__memest.updates > n.updates, before);
  await page.waitForFunction((n) => {
    const m = window.__memest;
    const tab = document.querySelector('[role="tab"][aria-selected="true"]').id;
    if (tab === 'tab-finetune') return !m.finetunePending && m.finetuneRuns > n.finetuneRuns;
    return document.querySelector('#status').dataset.state !== 'pending';
  }, before);
}

/** Sets the page's state through its URL (as a shared link does), waits for the answer, and
 *  (unless an error is expected) fails when the page shows an error instead of a result. */
async function show(hash, { error = false } = {}) {
  const before = await probe();
  await page.evaluate((h) => {
    if ((location.hash || '#') === h) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = h;
  }, hash);
  await settleTab(before);
  if (!error) await expectResult(hash);
}

/** Waits for the form's pending update (inputs render on the next animation frame). */
async function settle(before) {
  await settleTab(before ?? await probe());
}

/** Waits until the layouts table has been recomputed after `before` and nothing is pending. */
async function gridSettled(before) {
  await page.waitForFunction((n) => !window.__memest.gridPending && window.__memest.gridRenders > n,
    before.gridRenders);
}

async function texts(selector) {
  return page.$$eval(selector, (els) => els.map((e) => e.textContent.trim()));
}

/** The page's suggestions: change, figures, fields set, verdict. */
async function pageSuggestions() {
  return page.$$eval('#suggestions li', (lis) => lis.map((li) => ({
    change: li.querySelector('.change').textContent, figures: li.querySelector('.figures').textContent,
    set: li.querySelector('.set').textContent, verdict: li.dataset.verdict,
  })));
}

/** "parallel.cp = 1, training.micro_batch = 1" for a suggestion's set, as the page writes it. */
const setText = (set, prefix = '') => Object.entries(set).map(([k, v]) => (v && typeof v === 'object' && !Array.isArray(v)
  ? setText(v, `${prefix}${k}.`) : `${prefix}${k} = ${v}`)).join(', ');

test('the default page shows the README example (fits; 27.20 GiB by the paper) with no console errors', async () => {
  await expectResult('first load');
  const want = cli(cases[0].request);
  assert.equal(want.peak_verdict, 'fits');
  assert.equal(await page.textContent('#estimate'), '27.20 GiB');
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), 'fits');
  assert.equal(await page.textContent('#verdict'), 'fits');
  assert.equal(await page.getAttribute('#paper-verdict', 'data-verdict'), want.verdict);
  // the bands, the legend and the recompute options are the library's
  const tables = cli({ mode: 'enums' });
  assert.equal(tables.ok, true);
  const status = await page.textContent('#status');
  assert.ok(status.startsWith(`Llama-3.1-8B on 8 × NVIDIA A100 SXM 40GB: fits — ${statusFigures(want, tables.peak_verdict_bands.fits)} `), status);
  assert.ok(status.includes(`The paper's estimate: 27.20 GiB (${pct(want.usage_fraction)}, fits by its bands; fits ≤ ${pct(tables.verdict_bands.fits)})`), status);
  assert.match(await page.textContent('#paper-verdict'), new RegExp(`fits ≤ ${pct(tables.verdict_bands.fits)}`));
  const b = tables.peak_verdict_bands;
  assert.deepEqual(await texts('#band-legend .band'),
    [...Object.entries(b).map(([v, f]) => `${words(v)} ≤ ${pct(f)}`), `out of memory > ${pct(Math.max(...Object.values(b)))}`]);
  assert.deepEqual(await page.$$eval('#recompute option', (os) => os.map((o) => o.value)), tables.enums.recompute);
  assert.equal(await page.locator('#stages-table tbody tr').count(), 2);
  // where the memory goes: the library's dominant parts; no suggestions when it fits
  assert.deepEqual(await page.$$eval('#dominant-parts li', (lis) => lis.map((li) => li.dataset.part)),
    want.dominant_parts.map((p) => p.part));
  assert.equal(await page.isVisible('#suggestions-box'), false);
  assert.ok(await page.locator('#stage-chart').isVisible());
  await page.screenshot({ path: `${RESULTS}default.png`, fullPage: true });
  assert.deepEqual(pageErrors, []);
});

test('20 cross-checked requests: the page shows the CLI\'s figures, verdicts and suggestions', async () => {
  assert.equal(cases.length, 20);
  for (const [i, c] of cases.entries()) {
    const want = cli(c.request);
    assert.equal(want.ok, true, `${c.name}: CLI answers ok`);
    await show(hashFor(c.request));
    assert.equal(await page.textContent('#estimate'), `${g2(want.estimate_bytes)} GiB`, c.name);
    assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`, c.name);
    assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict, c.name);
    assert.equal(await page.textContent('#verdict'), words(want.peak_verdict), c.name);
    assert.equal(await page.getAttribute('#status', 'data-verdict'), want.peak_verdict, c.name);
    assert.equal(await page.getAttribute('#paper-verdict', 'data-verdict'), want.verdict, c.name);
    if (c.paper_estimate_gib != null) assert.equal(g2(want.estimate_bytes), c.paper_estimate_gib.toFixed(2), c.name);
    const rows = await page.$$eval('#stages-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    assert.equal(rows.length, want.stages.length, c.name);
    want.stages.forEach((s, k) => {
      assert.deepEqual(rows[k].slice(3), [s.weights_bytes, s.gradients_bytes, s.optimizer_bytes, s.activations_bytes,
        s.total_bytes, s.overhead_bytes, s.peak_bytes].map(g2), `${c.name}: stage ${k}`);
    });
    const sug = await pageSuggestions();
    assert.deepEqual(sug.map((s) => s.change), (want.suggestions ?? []).map((s) => s.change), `${c.name}: suggestions`);
    if (i === 16) await page.screenshot({ path: `${RESULTS}case-custom-gpu.png`, fullPage: true });
  }
});

test('the OOM layout (tp 4, cp 2, pp 1, mbs 2) is announced as out of memory, with the CLI\'s parts and suggestions', async () => {
  const want = cli(OOM);
  assert.equal(want.peak_verdict, 'oom');
  assert.equal(want.verdict, 'tight');
  await show(hashFor(OOM));
  const status = await page.textContent('#status');
  const tables = cli({ mode: 'enums' });
  assert.ok(want.margin_bytes < 0 && want.oom_probability > 0.5, 'over capacity');
  assert.ok(status.includes(`: out of memory — ${statusFigures(want, tables.peak_verdict_bands.fits)} `), status);
  assert.ok(status.includes(`over by ${g2(-want.margin_bytes)} GiB`), status);
  assert.ok(status.includes(`The paper's estimate: 33.76 GiB (${pct(want.usage_fraction)}, tight by its bands; ` +
    `fits ≤ ${pct(tables.verdict_bands.fits)})`), status);
  assert.equal(await page.getAttribute('#status', 'data-verdict'), 'oom');
  assert.equal(await page.textContent('#verdict'), 'out of memory');
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage 0)`);
  assert.equal(await page.textContent('#estimate'), '33.76 GiB');
  assert.equal((await page.textContent('#paper-verdict')).split(': tight by the paper\'s bands')[0],
    `${pct(want.usage_fraction)} of capacity`);
  // where the memory goes, as the library ranks it
  const parts = await page.$$eval('#dominant-parts li', (lis) => lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent]));
  assert.deepEqual(parts, want.dominant_parts.map((p) => [p.part, `${g2(p.bytes)} GiB · ${Math.round(p.share * 100)} %`]));
  // the suggestions: those of `memest request`, in its order, with its figures
  assert.ok(want.suggestions.length >= 2);
  const sug = await pageSuggestions();
  assert.equal(sug.length, want.suggestions.length);
  want.suggestions.forEach((s, k) => {
    assert.equal(sug[k].change, s.change);
    assert.equal(sug[k].verdict, s.peak_verdict);
    assert.ok(sug[k].figures.startsWith(`peak ${g2(s.peak_bytes)} GiB · ${words(s.peak_verdict)}`), sug[k].figures);
    assert.equal(sug[k].set, setText(s.set));
  });
  // and those of the CLI's own table (memest pretrain --tp 4 --cp 2 --pp 1 --mbs 2): same words
  const text = cliText(['pretrain', '--tp', '4', '--cp', '2', '--pp', '1', '--mbs', '2']);
  assert.match(text, /^verdict: out of memory/m);
  const fitLines = text.split('would fit:\n')[1].split('\nverdict:')[0].split('\n')
    .map((l) => l.trim().match(/^(.*?)\s+peak ([\d.]+) GiB\s+\((.*)\)$/));
  assert.deepEqual(fitLines.map((m) => m[1]), sug.map((s) => s.change));
  assert.deepEqual(fitLines.map((m) => `${m[2]}`), want.suggestions.map((s) => g2(s.peak_bytes)).map((x) => x));
  // each change as the pretrain flags that apply it (tests/cli/test_cli.cpp runs them back)
  assert.ok(fitLines.every((m) => /^(--|without --)/.test(m[3])), fitLines.map((m) => m[3]).join(' | '));
  await page.screenshot({ path: `${RESULTS}oom.png`, fullPage: true });
  if (process.env.MEMEST_UPDATE_SCREENSHOT) {
    await page.screenshot({ path: `${RESULTS}web-calculator.png` });
    copyFileSync(`${RESULTS}web-calculator.png`, here('../../docs/web-calculator.png'));
  }
});

test('"Use" on each suggestion applies its fields and the status line then says it fits, as the CLI does', async () => {
  const want = cli(OOM);
  for (const [k, s] of want.suggestions.entries()) {
    await show(hashFor(OOM));
    const before = await probe();
    await page.click(`#suggestions li:nth-child(${k + 1}) button`);
    await settle(before);
    await expectResult(s.change);
    const applied = structuredClone(OOM);
    for (const [block, fields] of Object.entries(s.set)) Object.assign(applied[block], fields);
    const got = cli(applied);
    assert.equal(got.peak_verdict, s.peak_verdict, s.change);
    assert.equal(await page.getAttribute('#status', 'data-verdict'), s.peak_verdict, s.change);
    assert.match(await page.textContent('#status'), new RegExp(`: ${words(s.peak_verdict)} — peak ${g2(s.peak_bytes)} GiB`), s.change);
    assert.equal(await page.textContent('#peak'), `${g2(got.peak_bytes)} GiB (stage ${got.peak_stage})`, s.change);
    // the form holds the suggestion's fields
    const form = await page.evaluate(() => Object.fromEntries(['gpus', 'tp', 'cp', 'pp', 'zero', 'mbs', 'recompute']
      .map((id) => [id, document.getElementById(id).value])));
    assert.deepEqual(form, { gpus: String(applied.parallel.gpus), tp: String(applied.parallel.tp), cp: String(applied.parallel.cp),
      pp: String(applied.parallel.pp), zero: String(applied.parallel.zero), mbs: String(applied.training.micro_batch),
      recompute: applied.training.recompute }, s.change);
  }
  assert.equal(await page.getAttribute('#status', 'data-verdict'), 'fits');
});

test('a configuration typed into the form equals the CLI', async () => {
  await show('#');
  const before = await probe();
  await page.selectOption('#model-preset', 'llama-3.1-70b');
  await page.selectOption('#gpu-preset', 'h100-80gb');
  for (const [id, v] of [['#gpus', '128'], ['#tp', '8'], ['#pp', '4'], ['#seq', '4096'], ['#mbs', '2'], ['#gbs', '512']]) {
    await page.fill(id, v);
  }
  await page.selectOption('#recompute', 'selective');
  await page.waitForFunction(() => location.hash.includes('tp=8') && location.hash.includes('rc=selective'));
  await settle(before);
  await expectResult('typed');
  const want = cli({ mode: 'pretrain', model: 'llama-3.1-70b', gpu: 'h100-80gb',
    parallel: { gpus: 128, tp: 8, cp: 1, pp: 4, vpp: 1, sp: true, zero: 1 },
    training: { seq_len: 4096, micro_batch: 2, global_batch: 512, recompute: 'selective', flash_attention: true } });
  assert.equal(await page.textContent('#estimate'), `${g2(want.estimate_bytes)} GiB`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
});

test('a mixture-of-experts model with expert parallelism: active vs total parameters and each stage\'s expert share, as the CLI', async () => {
  // Mixtral 8x7B as Megatron-LM's example runs it: TP1, PP4, EP8 on 32 H100-80GB.
  await show('#m=mixtral-8x7b&g=h100-80gb&gpus=32&tp=1&cp=1&pp=4&vpp=1&ep=8&etp=0&seq=4096&mbs=1&gbs=256');
  const want = cli({ mode: 'pretrain', model: 'mixtral-8x7b', gpu: 'h100-80gb',
    parallel: { gpus: 32, tp: 1, cp: 1, pp: 4, vpp: 1, sp: true, zero: 1, ep: 8, etp: 0 },
    training: { seq_len: 4096, micro_batch: 1, global_batch: 256, recompute: 'none', flash_attention: true } });
  assert.equal(await page.textContent('#estimate'), `${g2(want.estimate_bytes)} GiB`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
  const line = await page.textContent('#model-line');
  assert.ok(line.includes(`${(want.model.active_parameters / 1e9).toFixed(2)} B active per token`), line);
  assert.ok(line.includes('ep 8, etp 1, edp 1'), line);
  const e = want.stages[0].experts;
  const first = await page.textContent('#experts-line li[data-stage="0"]');
  assert.ok(first.includes(`${e.moe_layers} MoE layers, ${(e.parameters / 1e9).toFixed(3)} B expert parameters`), first);
  // a dense model hides the expert share
  await show('#');
  assert.equal(await page.isHidden('#experts-line'), true);
});

test('band colours: the verdict badge and the table\'s cells are green / yellow / red by the peak verdict', async () => {
  const colours = {};
  for (const req of [...cases.map((c) => c.request), OOM, TIGHT]) {
    const want = cli(req);
    if (colours[want.peak_verdict]) continue;
    await show(hashFor(req));
    colours[want.peak_verdict] = await page.$eval('#verdict', (e) => getComputedStyle(e).backgroundColor);
  }
  const rgb = (s) => s.match(/\d+/g).slice(0, 3).map(Number);
  const [fr, fg, fb] = rgb(colours.fits);
  const [tr, tg, tb] = rgb(colours.tight);
  const [or, og, ob] = rgb(colours.oom);
  assert.ok(fg > fr && fg > fb, `fits is green: ${colours.fits}`);
  assert.ok(tr > tb && tg > tb, `tight is yellow: ${colours.tight}`);
  assert.ok(or > og && or > ob, `oom is red: ${colours.oom}`);

  // the layouts x GPUs table: each cell is the CLI's peak for that layout, coloured by its peak verdict
  const before = await probe();
  await show(hashFor(cases[0].request, { gpus: '32' }));
  await gridSettled(before);
  const cells = await page.$$eval('#layout-table td.cell', (tds) => tds.map((b) => ({
    layout: b.dataset.layout, verdict: b.dataset.verdict, paper: b.dataset.paperVerdict, text: b.textContent,
    cls: b.className, bg: getComputedStyle(b).backgroundColor,
  })));
  assert.ok(cells.length > 100, `table has cells (${cells.length})`);
  const sample = cells.filter((_, i) => i % Math.ceil(cells.length / 12) === 0);
  for (const c of sample) {
    const [tp, cp, pp, mbs, gpus] = c.layout.split(',').map(Number);
    const req = structuredClone(cases[0].request);
    Object.assign(req.parallel, { tp, cp, pp, gpus });
    req.training.micro_batch = mbs;
    const want = cli(req);
    assert.equal(c.text, g2(want.peak_bytes), c.layout);
    assert.equal(c.verdict, want.peak_verdict, c.layout);
    assert.equal(c.paper, want.verdict, c.layout);
    assert.ok(c.cls.includes(`band-${want.peak_verdict}`), c.layout);
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
  // a click loads the cell's layout into the form
  const target = cells.find((c) => c.verdict === 'tight');
  const b2 = await probe();
  await page.click(`#layout-table td[data-layout="${target.layout}"]`);
  await settle(b2);
  await expectResult('grid cell');
  assert.equal((await page.textContent('#peak')).split(' (')[0], `${target.text} GiB`);
  await page.screenshot({ path: `${RESULTS}table.png`, fullPage: true });
});

test('the layouts table: computed once typing pauses, follows the GPUs input, marks the form\'s layout', async () => {
  let before = await probe();
  await show('#');
  await gridSettled(before);
  await page.click('#gpus', { clickCount: 3 });
  before = await probe();
  // four keystrokes well within the table's pause: "1", "16", "1", "16"
  await page.keyboard.type('16', { delay: 30 });
  await page.keyboard.press('Backspace', { delay: 30 });
  await page.keyboard.type('6', { delay: 30 });
  await gridSettled(before);
  await expectResult('typed gpus');
  const after = await probe();
  assert.ok(after.updates - before.updates >= 3, `the answer followed the keystrokes (${after.updates - before.updates} updates)`);
  assert.equal(after.gridRenders - before.gridRenders, 1, 'the table was computed once, after the typing');
  // the columns follow the GPUs input; the form's column and cell are marked
  const heads = await texts('#layout-table thead th');
  assert.deepEqual(heads.slice(1), [2, 4, 8, 16, 32, 64, 128, 256].map((n) => `${n} GPUs`));
  assert.equal(await page.textContent('#layout-table thead th.current'), '16 GPUs');
  const current = page.locator('#layout-table td[aria-current="true"]');
  assert.equal(await current.count(), 1);
  assert.equal(await current.getAttribute('data-layout'), '4,1,2,1,16');
  const want = cli({ ...cases[0].request, parallel: { ...cases[0].request.parallel, gpus: 16 } });
  assert.equal(await current.textContent(), g2(want.peak_bytes));
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  // a layout outside the table's rows gets its own row
  before = await probe();
  await show('#tp=2&cp=1&pp=2&mbs=4');
  await gridSettled(before);
  assert.equal(await page.getAttribute('#layout-table td[aria-current="true"]', 'data-layout'), '2,1,2,4,8');
  assert.equal(await page.textContent('#layout-table tbody th.current'), '(2, 1, 2, 4)');
});

test('keyboard: the layouts table is one Tab stop; arrow keys move, Enter loads the layout', async () => {
  let before = await probe();
  await show('#');
  await gridSettled(before);
  assert.equal(await page.locator('#layout-table button').count(), 0, 'no buttons in the table');
  const stops = await page.$$eval('#layout-table [tabindex]', (els) => els.filter((e) => e.tabIndex >= 0).map((e) => e.dataset.layout));
  assert.deepEqual(stops, ['4,1,2,1,8'], 'one Tab stop: the form\'s layout');
  assert.ok(await page.locator('#layout-table td[tabindex="-1"]').count() > 400);
  // Tab from the tab list reaches the table's one stop; Shift+Tab goes back
  await page.focus('#tab-pretrain');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,2,1,8');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,2,1,16');
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,2,2,16');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('ArrowUp');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,1,2,8');
  assert.deepEqual(await page.$$eval('#layout-table td[tabindex="0"]', (els) => els.map((e) => e.dataset.layout)), ['4,1,1,2,8'],
    'the Tab stop moves with the focus (roving tabindex)');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-pretrain');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,1,2,8');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.querySelector('#layout-table').contains(document.activeElement)), false,
    'Tab leaves the table');
  // Enter loads the focused cell's layout
  await page.focus('#layout-table td[tabindex="0"]');
  before = await probe();
  await page.keyboard.press('Enter');
  await settle(before);
  await expectResult('Enter on a cell');
  assert.deepEqual(await page.evaluate(() => ['tp', 'cp', 'pp', 'mbs', 'gpus'].map((id) => document.getElementById(id).value)),
    ['4', '1', '1', '2', '8']);
  await gridSettled(before);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.layout), '4,1,1,2,8', 'the focus stays on the cell');
  assert.equal(await page.getAttribute('#layout-table td[aria-current="true"]', 'data-layout'), '4,1,1,2,8');
});

test('an invalid field shows the library\'s own error next to it and clears the verdict and the results', async () => {
  await show(hashFor(cases[0].request));
  await page.fill('#tp', '3');
  await page.waitForFunction(() => document.querySelector('#err-tp').textContent !== '');
  const want = cli({ ...cases[0].request, parallel: { ...cases[0].request.parallel, tp: 3 } });
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'parallel.tp');
  assert.equal(await page.textContent('#err-tp'), want.error.message);
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#status'), `Not computed: ${want.error.message}`);
  // no verdict, no stale figures
  assert.equal(await page.textContent('#verdict'), '—');
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), '');
  for (const id of ['#peak', '#estimate', '#capacity']) assert.equal(await page.textContent(id), '—', id);
  assert.equal(await page.locator('#stages-table tbody tr').count(), 0);
  assert.equal(await page.locator('#dominant-parts li').count(), 0);
  assert.equal(await page.locator('#suggestions li').count(), 0);
  // no green badge anywhere outside the layouts table (whose cells are other layouts)
  const green = await page.evaluate(() => {
    const fits = getComputedStyle(document.documentElement).getPropertyValue('--c-fits').trim();
    const probeEl = document.createElement('span');
    probeEl.style.background = fits;
    document.body.append(probeEl);
    const rgb = getComputedStyle(probeEl).backgroundColor;
    probeEl.remove();
    return [...document.querySelectorAll('body *')].filter((e) => !e.closest('#layout-table')
      && e.getClientRects().length && getComputedStyle(e).backgroundColor === rgb).map((e) => e.id || e.className);
  });
  assert.deepEqual(green, []);
  await page.screenshot({ path: `${RESULTS}invalid-tp.png` });
  const before = await probe();
  await page.fill('#tp', '4');
  await settle(before);
  await expectResult('tp back to 4');
  assert.equal(await page.getAttribute('#tp', 'aria-invalid'), null);
  assert.equal(await page.textContent('#verdict'), 'fits');
});

test('a pasted config.json: cut short, it is a JSON parse error; incomplete, the library\'s message', async () => {
  await show('#');
  await page.selectOption('#model-preset', 'custom');
  const config = cases[18].request.model;
  const text = JSON.stringify(config, null, 2);
  await page.fill('#model-config', text.slice(0, Math.floor(text.length / 2)));
  await page.waitForFunction(() => /not valid JSON/.test(document.querySelector('#err-model').textContent));
  const msg = await page.textContent('#err-model');
  assert.match(msg, /^model: the pasted config\.json is not valid JSON/);
  assert.doesNotMatch(msg, /preset/i);
  assert.equal(await page.getAttribute('#model-config', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#verdict'), '—');
  // the whole file: a result, the CLI's
  let before = await probe();
  await page.fill('#model-config', text);
  await settle(before);
  await expectResult('whole config.json');
  const want = cli({ ...cases[0].request, model: config });
  assert.equal(await page.textContent('#estimate'), `${g2(want.estimate_bytes)} GiB`);
  // a config the library cannot use: its own message, the model field marked
  before = await probe();
  await page.fill('#model-config', '{"model_type": "llama", "hidden_size": 4096}');
  await page.waitForFunction(() => document.querySelector('#err-model').textContent !== '');
  const bad = cli({ ...cases[0].request, model: { model_type: 'llama', hidden_size: 4096 } });
  assert.equal(await page.textContent('#err-model'), bad.error.message);
  assert.equal(await page.getAttribute('#model-config', 'aria-invalid'), 'true');
});

test('a device profile (calibrate/): pasted or chosen as a file, its fields decide; not JSON, a parse error', async () => {
  const text = readFileSync(here('../../calibrate/examples/h100-sxm-80gb.example.json'), 'utf8');
  const profile = JSON.parse(text);
  await show('#');
  await page.selectOption('#gpu-preset', 'profile');
  await page.fill('#gpu-profile', text.slice(0, 40));  // cut short: the page says so, no answer
  await page.waitForFunction(() => /not valid JSON/.test(document.querySelector('#err-gpu').textContent));
  assert.match(await page.textContent('#err-gpu'), /^gpu: the device profile is not valid JSON/);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#verdict'), '—');
  let before = await probe();
  await page.fill('#gpu-profile', text);
  await settle(before);
  await expectResult('pasted device profile');
  const want = cli({ ...cases[0].request, gpu: profile });
  assert.equal(want.ok, true);
  assert.equal(await page.textContent('#capacity'), `${g2(want.capacity_bytes)} GiB`);
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  assert.equal(g2(want.capacity_bytes), g2(profile.memory_gib * GiB));  // the profile's capacity
  // the same file chosen with the file input
  await show('#');
  before = await probe();
  await page.setInputFiles('#gpu-profile-file', here('../../calibrate/examples/h100-sxm-80gb.example.json'));
  await settle(before);
  await expectResult('device profile file');
  assert.equal(await page.inputValue('#gpu-preset'), 'profile');
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`);
  // a field out of range: the library's message, the GPU marked
  before = await probe();
  await page.fill('#gpu-profile', JSON.stringify({ ...profile, fragmentation: 12 }));
  await page.waitForFunction(() => document.querySelector('#err-gpu').textContent !== '');
  const bad = cli({ ...cases[0].request, gpu: { ...profile, fragmentation: 12 } });
  assert.equal(await page.textContent('#err-gpu'), bad.error.message);
  assert.equal(bad.error.field, 'gpu.fragmentation');
});

test('the state is shared by URL: a fresh page restores the exact configuration', async () => {
  const c = cases[18];
  await show(hashFor(c.request));
  const url = page.url();
  const other = await browser.context.newPage();
  await other.goto(url);
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.equal(await other.textContent('#estimate'), await page.textContent('#estimate'));
  assert.equal(await other.inputValue('#model-preset'), 'custom');
  assert.match(await other.inputValue('#model-config'), /"hidden_size":2048/);
  await other.close();
});

test('a preset GPU from a URL: the capacity field and figure say its capacity (the usable one of an H100 80GB)', async () => {
  // The capacity field of a preset GPU is derived from the preset; a link carries `mem` only for a
  // custom GPU. Loaded into a page that was on the default A100 40GB, it once kept saying 40.
  // Since 1.6 the presets hold the usable capacity (torch.cuda.mem_get_info), the nominal beside.
  const presets = cli({ mode: 'presets' }).gpus;
  const gpu = (id) => presets.find((g) => g.id === id);
  const field = (id) => String(gpu(id).memory_bytes / GiB);
  assert.equal(gpu('h100-80gb').nominal_gib, 80);
  assert.ok(gpu('h100-80gb').memory_bytes <= 80 * GiB);
  await show('#');
  assert.equal(await page.inputValue('#gpu-memory'), field('a100-40gb'));
  const hash = '#m=llama-3.1-8b&g=h100-80gb&gpus=8&tp=1&pp=1&zero=3&seq=4096&mbs=1&gbs=64';
  const want = cli({ mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 8, tp: 1, pp: 1, zero: 3 }, training: { seq_len: 4096, micro_batch: 1, global_batch: 64 } });
  assert.equal(want.capacity_bytes, gpu('h100-80gb').memory_bytes);
  await show(hash);
  assert.equal(await page.inputValue('#gpu-preset'), 'h100-80gb');
  assert.equal(await page.inputValue('#gpu-memory'), field('h100-80gb'));
  assert.equal(await page.textContent('#capacity'), `${g2(want.capacity_bytes)} GiB`);
  assert.ok((await page.textContent('#status')).includes(`of ${g2(want.capacity_bytes)} GiB per GPU`));
  // the preset list says the usable capacity
  assert.equal(await page.$eval('#gpu-preset option[value="h100-80gb"]', (o) => o.textContent),
    `${gpu('h100-80gb').name} (${g2(gpu('h100-80gb').memory_bytes)} GiB usable)`);
  // and a fresh page opened on the link
  const other = await browser.context.newPage();
  await other.goto(`${server.url}${hash}`);
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.inputValue('#gpu-memory'), field('h100-80gb'));
  assert.equal(await other.textContent('#capacity'), `${g2(want.capacity_bytes)} GiB`);
  await other.close();
  // choosing another preset in the form still follows it
  const before = await probe();
  await page.selectOption('#gpu-preset', 'a100-80gb');
  await settle(before);
  await expectResult('a100-80gb chosen');
  assert.equal(await page.inputValue('#gpu-memory'), field('a100-80gb'));
  const b4 = await probe();
  await page.selectOption('#gpu-preset', 'h200-141gb');
  await settle(b4);
  assert.equal(await page.inputValue('#gpu-memory'), field('h200-141gb'));
  assert.equal(await page.textContent('#capacity'), `${g2(gpu('h200-141gb').memory_bytes)} GiB`);
});

test('downloads: the result as JSON and as CSV (whole byte counts as integers)', async () => {
  await show(hashFor(cases[0].request));
  const want = cli(cases[0].request);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-json')]);
  const json = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  assert.equal(json.estimate_bytes, want.estimate_bytes);
  assert.equal(json.peak_verdict, want.peak_verdict);
  const [dl2] = await Promise.all([page.waitForEvent('download'), page.click('#download-csv')]);
  const csv = readFileSync(await dl2.path(), 'utf8').trim().split('\n');
  assert.match(csv[0], /^stage,layers,.*,total_bytes,overhead_bytes,peak_bytes$/);
  assert.equal(csv.length, 1 + 2);
  const first = Object.fromEntries(csv[0].split(',').map((k, i) => [k, csv[1].split(',')[i]]));
  assert.equal(first.weights_bytes, String(want.stages[0].weights_bytes));
  assert.match(first.weights_bytes, /^\d+$/);
});

test('fine-tuning tab: its own answer, matching its table; only its inputs; LLMem\'s terms as the CLI prints them', async () => {
  // (tp 4, pp 1: a pretraining layout of 4 GPUs, for the way back to that tab)
  await show('#m=opt-2.7b&g=v100-16gb&gpus=4&seq=512&tp=4&pp=1&tab=finetune');
  await page.waitForSelector('#finetune-table tbody tr');
  const want = cli({ mode: 'finetune', model: 'opt-2.7b', gpu: 'v100-16gb', parallel: { gpus: 4 },
    training: { seq_len: 512 }, finetune: { method: 'auto', gradient_checkpointing: true } });
  assert.equal(want.ok, true);
  // the status line and the summary are the fine-tuning answer, and match the selected row
  const chosen = want.methods.find((m) => m.method === want.selected);
  assert.equal(chosen.peak_bytes, want.peak_bytes);
  const status = await page.textContent('#status');
  assert.match(status, new RegExp(`^OPT-2\\.7B on 4 × NVIDIA V100 SXM2 16GB, fine-tuning \\(LLMem\\): ${words(want.peak_verdict)} — `));
  assert.ok(status.includes(`selects ${want.selected} `) && status.includes(`largest batch, ${want.max_batch} per GPU`), status);
  assert.ok(status.includes(`peak ${g2(want.peak_bytes)} GiB of ${g2(want.capacity_bytes)} GiB`), status);
  assert.equal(await page.getAttribute('#status', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.textContent('#ft-verdict'), words(want.peak_verdict));
  assert.equal(await page.textContent('#ft-method-batch'), `${want.selected} · batch ${want.max_batch}`);
  assert.equal(await page.textContent('#ft-peak'), `${g2(want.peak_bytes)} GiB`);
  assert.ok((await page.textContent('#finetune-summary')).includes(`peak ${g2(want.peak_bytes)} GiB`));
  const rows = await page.$$eval('#finetune-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, want.methods.length);
  const selected = await page.$$eval('#finetune-table tr.selected td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual([selected[0], selected[4], selected[6]], [want.selected, String(want.max_batch), g2(want.peak_bytes)]);
  // only the inputs the fine-tuning request reads
  for (const id of ['tp', 'cp', 'pp', 'vpp', 'zero', 'mbs', 'gbs', 'recompute', 'sp', 'flash']) {
    assert.equal(await page.isVisible(`#${id}`), false, `#${id} is hidden on the fine-tuning tab`);
  }
  for (const id of ['model-preset', 'gpu-preset', 'gpus', 'seq', 'ft-method', 'ft-gc']) {
    assert.equal(await page.isVisible(`#${id}`), true, `#${id} is shown on the fine-tuning tab`);
  }
  assert.equal(await page.isVisible('#panel-pretrain'), false);
  // LLMem's terms: the CLI's table, row for row
  const termsOf = (text) => text.split('\n').map((l) => l.match(/^(m_\w+)\s+(.*?)\s{2,}([\d.]+) GiB\s+([\d.]+) GiB$/))
    .filter(Boolean).map((m) => m.slice(1));
  const cliTerms = termsOf(cliText(['finetune', '--model', 'opt-2.7b', '--gpu', 'v100-16gb', '--gpus', '4',
    '--method', 'auto', '--seq', '512']));
  assert.equal(cliTerms.length, 6);
  const pageTerms = await page.$$eval('#finetune-terms tbody tr[data-term]', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(pageTerms, cliTerms);
  assert.equal(await page.textContent('#finetune-terms tr.total-row td.total'), g2(want.peak_bytes));
  await page.screenshot({ path: `${RESULTS}finetune.png`, fullPage: true });
  // sort by max batch, descending, with the keyboard
  const header = page.locator('#finetune-table th button', { hasText: 'Max batch' });
  await header.focus();
  await page.keyboard.press('Enter');
  const batches = await page.$$eval('#finetune-table tbody tr td:nth-child(5)', (tds) => tds.map((t) => Number(t.textContent)));
  assert.deepEqual(batches, [...batches].sort((a, b) => b - a));
  assert.equal(await page.getAttribute('#finetune-table th:nth-child(5)', 'aria-sort'), 'descending');

  // one method at a batch: the CLI's figures and terms, no method table
  let before = await probe();
  await page.selectOption('#ft-method', 'zero3');
  await settle(before);
  before = await probe();
  await page.fill('#ft-batch', '8');
  await settle(before);
  await expectResult('zero3 at batch 8');
  const one = cli({ mode: 'finetune', model: 'opt-2.7b', gpu: 'v100-16gb', parallel: { gpus: 4 },
    training: { seq_len: 512 }, finetune: { method: 'zero3', batch: 8 } });
  assert.ok((await page.textContent('#status')).includes(`zero3 at batch 8 per GPU — peak ${g2(one.peak_bytes)} GiB`));
  assert.equal(await page.isVisible('#finetune-table'), false);
  const oneTerms = termsOf(cliText(['finetune', '--model', 'opt-2.7b', '--gpu', 'v100-16gb', '--gpus', '4',
    '--method', 'zero3', '--batch', '8', '--seq', '512']));
  assert.deepEqual(await page.$$eval('#finetune-terms tbody tr[data-term]', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent))), oneTerms);
  // DP+TP asks for its tp size
  before = await probe();
  await page.selectOption('#ft-method', 'dp+tp');
  await settle(before);
  await expectResult('dp+tp');
  assert.equal(await page.isVisible('#ft-tp'), true);
  // back to the pretraining tab: its inputs again
  before = await probe();
  await page.click('#tab-pretrain');
  await settle(before);
  await expectResult('back to pretraining');
  assert.equal(await page.isVisible('#tp'), true);
  assert.equal(await page.isVisible('#ft-method'), false);
  await show('#');
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
  const before = await probe();
  await page.click('#tab-search');
  await settle(before);
  await page.waitForFunction(() => document.querySelector('#search-table tbody tr')
    || document.querySelector('#search-error').textContent !== '');
  const error = await page.textContent('#search-error');
  assert.equal(error, '', `the search tab shows an error for ${hash}: ${error}`);
  await expectResult(`search ${hash}`);
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
    assert.equal(row['Peak (GiB)'], g2(r.peak_bytes), `row ${i + 1}`);
    assert.equal(row.Verdict, words(r.peak_verdict), `row ${i + 1}`);
    assert.equal(row["Paper's estimate (GiB)"], g2(r.estimate_bytes), `row ${i + 1}`);
    assert.equal(row["Paper's verdict"], words(r.verdict), `row ${i + 1}`);
    assert.equal(row['TFLOP/s per GPU'], r.tflops_per_gpu.toFixed(1), `row ${i + 1}`);
    // 1.6: each layout's probability of OOM and margin, as the library gives them
    assert.equal(typeof r.oom_probability, 'number', `row ${i + 1}: the CLI gives oom_probability`);
    assert.equal(row['P(OOM)'], prob(r.oom_probability), `row ${i + 1}`);
    assert.equal(row['Margin (GiB)'], g2(r.margin_bytes), `row ${i + 1}`);
    assert.ok(r.oom_probability <= want.max_oom_probability, `row ${i + 1}: within the search's limit`);
  });
  assert.match(await page.textContent('#search-summary'), new RegExp(`^${want.ranked} of ${want.candidates} layouts`));
  const best = want.results[0];
  assert.equal(await page.getAttribute('#status', 'data-verdict'), best.peak_verdict);
  assert.ok((await page.textContent('#status')).includes(`the fastest layout predicted to fit is tp ${best.layout.tp}, cp ${best.layout.cp}, pp ${best.layout.pp}`));
  return want;
}

test('layout search tab: the library\'s ranked layouts for the page\'s defaults', async () => {
  const base = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb',
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none', flash_attention: true }, search: { top: 10 } };
  // the page's defaults: 8 GPUs, recomputation "none" pinned by the form
  await searchTab('#', { ...base, parallel: { gpus: 8, sp: true } });
  await page.screenshot({ path: `${RESULTS}search.png`, fullPage: true });
  for (const id of ['tp', 'cp', 'pp', 'vpp', 'zero', 'mbs']) {
    assert.equal(await page.isVisible(`#${id}`), false, `#${id} is hidden on the search tab (the search chooses it)`);
  }
  // 64 GPUs with full recomputation: every ranked layout recomputes fully
  const want = await searchTab('#gpus=64&rc=full', { ...base, parallel: { gpus: 64, sp: true },
    training: { ...base.training, recompute: 'full' } });
  assert.ok(want.results.every((r) => r.layout.recompute === 'full'));
});

test('"Use" on a search result carries every field; the pretraining tab reproduces the row', async () => {
  // a form whose own layout differs from the rows in every field, SP off
  const hash = '#gpus=64&rc=selective&sp=0&zero=0&vpp=2&mbs=4&tp=1&cp=1&pp=2';
  const req = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 64, sp: false },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'selective', flash_attention: true }, search: { top: 10 } };
  const want = await searchTab(hash, req);
  const picks = [0, want.results.findIndex((r) => r.layout.vpp > 1 || r.layout.zero !== 1)].filter((i, k, a) => i >= 0 && a.indexOf(i) === k);
  for (const i of picks) {
    if (i !== 0) await searchTab(hash, req);
    const r = want.results[i];
    const l = r.layout;
    const before = await probe();
    await page.click(`#search-table tbody tr:nth-child(${i + 1}) button`);
    await settle(before);
    await expectResult(`Use row ${i + 1}`);
    assert.equal(await page.getAttribute('#tab-pretrain', 'aria-selected'), 'true');
    const form = await page.evaluate(() => Object.fromEntries(['gpus', 'tp', 'cp', 'pp', 'vpp', 'mbs', 'zero', 'recompute']
      .map((id) => [id, document.getElementById(id).value]).concat([['sp', document.getElementById('sp').checked]])));
    assert.deepEqual(form, { gpus: '64', tp: String(l.tp), cp: String(l.cp), pp: String(l.pp), vpp: String(l.vpp),
      mbs: String(l.micro_batch), zero: String(l.zero), recompute: l.recompute, sp: false }, `row ${i + 1}`);
    // the row's numbers
    assert.equal((await page.textContent('#peak')).split(' (')[0], `${g2(r.peak_bytes)} GiB`, `row ${i + 1}`);
    assert.equal(await page.textContent('#estimate'), `${g2(r.estimate_bytes)} GiB`, `row ${i + 1}`);
    assert.equal(await page.getAttribute('#verdict', 'data-verdict'), r.peak_verdict, `row ${i + 1}`);
    assert.equal(await page.getAttribute('#paper-verdict', 'data-verdict'), r.verdict, `row ${i + 1}`);
  }
  assert.deepEqual(pageErrors, []);
});

/** The stages table's Layers column, stage by stage. */
const stageLayers = () => page.$$eval('#stages-table tbody tr', (trs) => trs.map((tr) => Number(tr.cells[1].textContent)));

test('"Use" on an uneven search result carries its end stages: DeepSeek-V3 over pp 16 holds 2 + 14 x 4 + 3 layers (1.7)', async () => {
  // 1024 x H100, s = 4096, global batch 4096, full recomputation: the library's best layout is
  // pp 16 with the first stage 2 and the last 3 of the 61 layers (the 14 between hold 4 each).
  // The search's own uneven_pipeline is on by default (memest.h), on the page as in the CLI. The
  // form's pretrain layout is pp 1: the page's default pp 2 does not divide the 61 layers (the
  // pretrain tab would show that refusal before the search); the search reads no pp.
  const hash = '#m=deepseek-v3&g=h100-80gb&gpus=1024&pp=1&seq=4096&gbs=4096&rc=full&top=3';
  const req = { mode: 'search', model: 'deepseek-v3', gpu: 'h100-80gb', parallel: { gpus: 1024, sp: true },
    training: { seq_len: 4096, global_batch: 4096, recompute: 'full', flash_attention: true }, search: { top: 3 } };
  const want = await searchTab(hash, req);
  const r = want.results[0];
  assert.deepEqual([r.layout.pp, r.layout.first_stage_layers, r.layout.last_stage_layers], [16, 2, 3],
    'the CLI\'s best layout is uneven');
  const before = await probe();
  await page.click('#search-table tbody tr:nth-child(1) button');
  await settle(before);
  await expectResult('Use the uneven row');
  assert.equal(await page.getAttribute('#tab-pretrain', 'aria-selected'), 'true');
  assert.equal(await page.inputValue('#first-stage-layers'), '2');
  assert.equal(await page.inputValue('#last-stage-layers'), '3');
  assert.equal(await page.inputValue('#pp'), '16');
  assert.deepEqual(await stageLayers(), [2, ...Array(14).fill(4), 3]);
  // the row's numbers, which need the end stages (an even split is refused: 61 over 16)
  assert.equal((await page.textContent('#peak')).split(' (')[0], `${g2(r.peak_bytes)} GiB`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), r.peak_verdict);
  assert.deepEqual(pageErrors, []);
});

test('first/last stage layers and Megatron\'s layout string from the form reach the library (1.7)', async () => {
  // Llama-3.1-8B's 32 layers over pp 4 on 4 GPUs: first 6 and last 6 leave 10 + 10
  const base = '#m=llama-3.1-8b&g=h100-80gb&gpus=4&tp=1&pp=4&seq=4096&gbs=64';
  await show(`${base}&fsl=6&lsl=6`);
  await expectResult('first/last 6');
  assert.deepEqual(await stageLayers(), [6, 10, 10, 6]);
  const req = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
    parallel: { gpus: 4, tp: 1, cp: 1, pp: 4, vpp: 1, sp: true, zero: 1, ep: 1, etp: 0,
      first_stage_layers: 6, last_stage_layers: 6 },
    training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true } };
  assert.equal((await page.textContent('#peak')).split(' (')[0], `${g2(cli(req).peak_bytes)} GiB`);
  // the layout string, typed: 8 virtual stages (vpp 2) of 3+3, 5+5, 5+5, 3+3 layers
  await show(`${base}&vpp=2`);
  await expectResult('vpp 2');
  let before = await probe();
  await page.fill('#pipeline-layout', 'Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L');
  await settle(before);
  await expectResult('the layout string');
  assert.deepEqual(await stageLayers(), [6, 10, 10, 6]);
  // 16 of the 32 layers: the library's refusal next to the field
  before = await probe();
  await page.fill('#pipeline-layout', 'Et*3|t*5|t*5|t*3L');
  await settle(before);
  assert.match(await page.textContent('#err-pipeline-layout'), /parallel\.pipeline_layout: holds 16 decoder layers/);
});

test('keyboard: tabs follow the arrow keys; every input has a label', async () => {
  await show('#');
  await page.focus('#tab-pretrain');
  let before = await probe();
  await page.keyboard.press('ArrowRight');
  await settle(before);
  assert.equal(await page.getAttribute('#tab-finetune', 'aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-finetune');
  before = await probe();
  await page.keyboard.press('ArrowLeft');
  await settle(before);
  assert.equal(await page.getAttribute('#tab-pretrain', 'aria-selected'), 'true');
  await expectResult('back on the pretraining tab');
  const unlabeled = await page.$$eval('input, select, textarea', (els) => els
    .filter((e) => !e.labels?.length && !e.getAttribute('aria-label')).map((e) => e.id));
  assert.deepEqual(unlabeled, []);
});

test('a phone (390 x 844): the answer first, tables scroll sideways; dark theme', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    const before = await probe();
    await show(hashFor(OOM));
    await gridSettled(before);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${RESULTS}narrow-first-screen.png` });
    await page.screenshot({ path: `${RESULTS}narrow.png`, fullPage: true });
    const box = await page.locator('#status').boundingBox();
    assert.ok(box.y >= 0 && box.y + box.height <= 844, `the status line is in the first screen: ${JSON.stringify(box)}`);
    assert.match(await page.textContent('#status'), /out of memory/);
    const top = (sel) => page.$eval(sel, (e) => e.getBoundingClientRect().top);
    assert.ok(await top('#results') < await top('#inputs'), 'the results come before the form');
    assert.ok(await top('#verdict') < 844, 'the verdict badge is in the first screen');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `no horizontal page overflow on a phone (${overflow}px)`);
    // the wide tables scroll inside their boxes instead of being cut off
    for (const id of ['stages-table', 'layout-table']) {
      const t = await page.$eval(`#${id}`, (table) => {
        const wrap = table.closest('.table-wrap');
        const before = wrap.scrollLeft;
        wrap.scrollLeft = 60;
        const moved = wrap.scrollLeft - before;
        wrap.scrollLeft = before;
        return { overflowX: getComputedStyle(wrap).overflowX, table: table.scrollWidth, box: wrap.clientWidth,
          scroll: wrap.scrollWidth, moved, right: wrap.getBoundingClientRect().right };
      });
      assert.ok(t.table > t.box, `#${id} is wider than the phone (${t.table} > ${t.box})`);
      assert.ok(['auto', 'scroll'].includes(t.overflowX), `#${id} scrolls (${t.overflowX})`);
      assert.ok(t.scroll >= t.table && t.moved > 0, `#${id} scrolls sideways: ${JSON.stringify(t)}`);
      assert.ok(t.right <= 390, `#${id}'s box fits the screen`);
    }
    await page.click('#theme'); // auto -> light
    await page.click('#theme'); // light -> dark
    assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.ok(bg.match(/\d+/g).slice(0, 3).map(Number).every((x) => x < 60), `dark background: ${bg}`);
    await page.screenshot({ path: `${RESULTS}dark-narrow.png`, fullPage: true });
    await page.click('#theme'); // back to auto
  } finally {
    await page.setViewportSize({ width: 1360, height: 900 });
  }
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.click('#theme');
  await page.click('#theme');
  await page.screenshot({ path: `${RESULTS}dark.png`, fullPage: true });
  await page.click('#theme');
  await expectResult('dark theme');
});

// ---- 1.6: the verdict's margin and probability of OOM, the figures of a run's logs, the
// precision policy (reduce_dtype, loss_parallel, autocast, fp8_all_gather, no_sync, logits_held),
// QLoRA's NF4 LM head and the search's max_oom_probability ----

/** Fails unless the pretrain headline shows `want` (a CLI pretrain answer): the verdict, the
 *  probability of OOM and the margin beside it, the peak's 90 % band, the three log figures. */
async function expectHeadline(want, what) {
  assert.equal(want.ok, true, `${what}: the CLI answers: ${JSON.stringify(want.error)}`);
  await expectResult(what);
  assert.equal(want.margin_bytes, want.capacity_bytes - want.peak_bytes, `${what}: the CLI's margin`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict, what);
  assert.equal(await page.textContent('#peak'), `${g2(want.peak_bytes)} GiB (stage ${want.peak_stage})`, what);
  assert.equal(await page.textContent('#oom-probability'), `probability of OOM ${prob(want.oom_probability)}`, what);
  assert.equal(await page.getAttribute('#oom-probability', 'data-value'), String(want.oom_probability), what);
  assert.equal(await page.textContent('#margin'), marginWords(want.margin_bytes), what);
  assert.equal(await page.getAttribute('#margin', 'data-value'), String(want.margin_bytes), what);
  const [low, high] = want.peak_band_bytes;
  assert.ok(low < want.peak_bytes && want.peak_bytes < high, `${what}: the CLI's band`);
  assert.equal(await page.textContent('#peak-band'), `90 % band ${g2(low)}–${g2(high)} GiB`, what);
  assert.deepEqual([await page.getAttribute('#peak-band', 'data-low'), await page.getAttribute('#peak-band', 'data-high')],
    [String(low), String(high)], what);
  for (const [id, key] of [['torch-allocated', 'torch_max_memory_allocated_bytes'],
    ['torch-reserved', 'torch_max_memory_reserved_bytes'], ['nvidia-smi', 'nvidia_smi_bytes']]) {
    assert.equal(typeof want[key], 'number', `${what}: the CLI gives ${key}`);
    assert.equal(await page.textContent(`#${id}`), `${g2(want[key])} GiB`, `${what}: ${key}`);
    assert.equal(await page.getAttribute(`#${id}`, 'data-value'), String(want[key]), `${what}: ${key}`);
  }
  const status = await page.textContent('#status');
  assert.ok(status.includes(`; probability of OOM ${prob(want.oom_probability)}, ${marginWords(want.margin_bytes)})`), status);
}

test('1.6 headline: the probability of OOM, the margin, the peak\'s band and torch / nvidia-smi figures are the CLI\'s, for each verdict', async () => {
  const seen = new Map();
  for (const req of [cases[0].request, OOM, TIGHT]) {
    const want = cli(req);
    const before = await probe();
    await show(hashFor(req));
    await expectHeadline(want, want.peak_verdict);
    seen.set(want.peak_verdict, prob(want.oom_probability));
    // the layouts table's cell of the form's layout says the same probability
    await gridSettled(before);
    const title = await page.getAttribute('#layout-table td[aria-current="true"]', 'title');
    assert.ok(title.includes(`: ${words(want.peak_verdict)}, probability of OOM ${prob(want.oom_probability)} ·`), title);
  }
  assert.deepEqual([...seen.keys()].sort(), ['fits', 'oom', 'tight']);
  assert.equal(new Set(seen.values()).size, 3, `three different probabilities: ${[...seen.values()]}`);
  // no result, no figures
  await page.fill('#tp', '3');
  await page.waitForFunction(() => document.querySelector('#status').dataset.state === 'error');
  for (const id of ['#oom-probability', '#margin', '#peak-band']) assert.equal(await page.textContent(id), '', id);
  for (const id of ['#torch-allocated', '#torch-reserved', '#nvidia-smi']) assert.equal(await page.textContent(id), '—', id);
  await show('#');
});

// Llama-3.1-8B on 8 x H100 under FSDP1 (accelerate), ZeRO 3: the page's state (URL hash keys,
// written here independently of the page) and the request the page sends for it.
const FSDP1 = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '8', tp: '1', cp: '1', pp: '1', vpp: '1',
  zero: '3', seq: '4096', mbs: '1', gbs: '64', fw: 'fsdp1' };
const fsdpRequest = (training = {}, parallel = {}) => ({
  mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 3, ep: 1, etp: 0, ...parallel },
  training: { seq_len: 4096, micro_batch: 1, global_batch: 64, recompute: 'none', flash_attention: true,
    framework: 'fsdp1', ...training },
});
const POLICY_IDS = ['reduce-dtype', 'loss-parallel', 'fp8-all-gather', 'no-sync', 'autocast', 'logits-held'];
const shownPolicy = () => page.$$eval(POLICY_IDS.map((id) => `#${id}`).join(','),
  (els) => els.filter((e) => e.checkVisibility()).map((e) => e.id).sort());

/** One form change (a callback), then its answer. */
async function change(act) {
  const before = await probe();
  await act();
  await settle(before);
}

test('1.6 precision policy: shown where it applies; fsdp1 + no_sync and each field set in the form equal the CLI', async () => {
  const frameworks = cli({ mode: 'enums' }).enums.framework;
  assert.ok(frameworks.includes('fsdp1'), 'the library names fsdp1');
  assert.deepEqual(await page.$$eval('#framework option', (os) => os.map((o) => o.value)), frameworks);
  // megatron (the default) reads none of them
  await show('#');
  assert.deepEqual(await shownPolicy(), []);
  // fsdp1: all but the fp8 all-gather (fp8 is off), each at the library's default
  await show(`#${new URLSearchParams(FSDP1)}`);
  assert.deepEqual(await shownPolicy(), POLICY_IDS.filter((id) => id !== 'fp8-all-gather').sort());
  assert.equal(await page.inputValue('#no-sync'), '');
  assert.equal(await page.inputValue('#reduce-dtype'), '');
  assert.equal(await page.isChecked('#loss-parallel'), true);
  const base = cli(fsdpRequest());
  await expectHeadline(base, 'fsdp1 defaults');
  assert.equal(base.training.no_sync, 'default');
  // FSDP1 at ZeRO 0 is DDP as FSDP2's is: gradient_as_bucket_view applies, as the library reads it
  assert.equal(await page.isVisible('#bucket-view'), true);
  const view = cli(fsdpRequest({ buckets: { gradient_as_bucket_view: true } }, { zero: 0 }));
  assert.notEqual(view.peak_bytes, cli(fsdpRequest({}, { zero: 0 })).peak_bytes, 'fsdp1 reads gradient_as_bucket_view');
  await show(`#${new URLSearchParams({ ...FSDP1, zero: '0', gbv: '1' })}`);
  await expectHeadline(view, 'fsdp1, zero 0, gradient_as_bucket_view');
  await show(`#${new URLSearchParams(FSDP1)}`);
  // no_sync off through the form: FSDP1's unsharded gradients go (the answer moves)
  let training = { no_sync: false };
  await change(() => page.selectOption('#no-sync', '0'));
  await page.waitForFunction(() => location.hash.includes('ns=0'));
  let want = cli(fsdpRequest(training));
  assert.notEqual(want.peak_bytes, base.peak_bytes, 'no_sync changes the answer');
  await expectHeadline(want, 'fsdp1, no_sync off');
  // and on (what FSDP1 does by default): the default's answer, sent as true
  await change(() => page.selectOption('#no-sync', '1'));
  const on = cli(fsdpRequest({ no_sync: true }));
  assert.equal(on.training.no_sync, true);
  await expectHeadline(on, 'fsdp1, no_sync on');
  await change(() => page.selectOption('#no-sync', '0'));
  // each further field, set in the form, sent as the library reads it
  let parallel = {};
  const steps = [
    // (1.11: the gradients left to the library are the bf16 parameters' dtype; fp32 differs)
    ['reduce_dtype fp32', () => page.selectOption('#reduce-dtype', 'fp32'), { reduce_dtype: 'fp32' }, 'rd=fp32', true],
    ['logits held', () => page.check('#logits-held'), { logits_held: true }, 'lh=1', true],
    ['autocast off', () => page.selectOption('#autocast', '0'), { autocast: false }, 'ac=0', false],
    ['framework fsdp', () => page.selectOption('#framework', 'fsdp'), { framework: 'fsdp' }, 'fw=fsdp', true],
  ];
  for (const [what, act, fields, key, moves] of steps) {
    const previous = want;
    await change(act);
    await page.waitForFunction((k) => location.hash.includes(k), key);
    training = { ...training, ...fields };
    want = cli(fsdpRequest(training, parallel));
    if (moves) assert.notEqual(want.peak_bytes, previous.peak_bytes, `${what} changes the answer`);
    await expectHeadline(want, what);
  }
  // loss_parallel off under tp 2: the logits gathered to the whole vocabulary
  await change(() => page.fill('#tp', '2'));
  parallel = { tp: 2 };
  const tp2 = cli(fsdpRequest(training, parallel));
  await expectHeadline(tp2, 'tp 2');
  await change(() => page.uncheck('#loss-parallel'));
  await page.waitForFunction(() => location.hash.includes('lp=0'));
  training = { ...training, loss_parallel: false };
  want = cli(fsdpRequest(training, parallel));
  assert.notEqual(want.peak_bytes, tp2.peak_bytes, 'loss_parallel off changes the answer');
  await expectHeadline(want, 'loss_parallel off');
  // fp8 on shows the fp8 all-gather; checked, it is sent
  await change(() => page.check('#fp8'));
  assert.ok((await shownPolicy()).includes('fp8-all-gather'));
  training = { ...training, fp8: true };
  const fp8 = cli(fsdpRequest(training, parallel));
  await expectHeadline(fp8, 'fp8');
  await change(() => page.check('#fp8-all-gather'));
  training = { ...training, fp8_all_gather: true };
  want = cli(fsdpRequest(training, parallel));
  assert.notEqual(want.peak_bytes, fp8.peak_bytes, 'fp8 all-gather changes the answer');
  await expectHeadline(want, 'fp8 all-gather');
  await page.waitForFunction(() => !window.__memest.gridPending);
  await page.screenshot({ path: `${RESULTS}policy-fsdp.png`, fullPage: true });
  // a fresh page on the link restores every field and the answer
  const other = await browser.context.newPage();
  await other.goto(page.url());
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.deepEqual(await other.evaluate(() => ['framework', 'no-sync', 'reduce-dtype', 'autocast'].map((id) => document.getElementById(id).value)
    .concat(['loss-parallel', 'logits-held', 'fp8-all-gather'].map((id) => document.getElementById(id).checked))),
  ['fsdp', '0', 'fp32', '0', false, true, true]);
  assert.equal(await other.getAttribute('#oom-probability', 'data-value'), String(want.oom_probability));
  await other.close();
  // under megatron they are hidden and not sent (megatron would refuse logits_held and autocast)
  await change(() => page.selectOption('#framework', 'megatron'));
  assert.deepEqual(await shownPolicy(), []);
  const megatron = cli(fsdpRequest({ framework: 'megatron', fp8: true }, parallel));
  await expectHeadline(megatron, 'megatron with the policy fields hidden');
  assert.equal(cli(fsdpRequest({ framework: 'megatron', fp8: true, logits_held: true }, parallel)).ok, false);
  await show('#');
});

test('1.6 a refused policy field: the library\'s message next to it, no figures', async () => {
  // fp8 all-gather needs sharded parameters: at zero 0 (no sharding) the library refuses it
  await show(`#${new URLSearchParams({ ...FSDP1, fw: 'fsdp', zero: '0', fp8: '1', fag: '1' })}`, { error: true });
  const want = cli(fsdpRequest({ framework: 'fsdp', fp8: true, fp8_all_gather: true }, { zero: 0 }));
  assert.equal(want.ok, false);
  assert.equal(want.error.field, 'training.fp8_all_gather');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-fp8-all-gather'), want.error.message);
  assert.equal(await page.getAttribute('#fp8-all-gather', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#status'), `Not computed: ${want.error.message}`);
  for (const id of ['#oom-probability', '#margin']) assert.equal(await page.textContent(id), '', id);
  assert.equal(await page.textContent('#torch-allocated'), '—');
  // zero 3: accepted, the CLI's answer
  await change(() => page.selectOption('#zero', '3'));
  await expectHeadline(cli(fsdpRequest({ framework: 'fsdp', fp8: true, fp8_all_gather: true })), 'fp8 all-gather at zero 3');
  await show('#');
});

test('1.6 QLoRA: "quantise the LM head" sent as adapter.quantize_lm_head; hidden for a tied head, refused when forced', async () => {
  const presets = cli({ mode: 'presets' }).models;
  const hash = { m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '1', tp: '1', cp: '1', pp: '1', vpp: '1', zero: '0',
    seq: '2048', mbs: '1', gbs: '8', fw: 'pytorch', pd: 'bf16', ad: 'qlora' };
  const request = (adapter, model = 'llama-3.1-8b') => ({ mode: 'pretrain', model, gpu: 'h100-80gb',
    parallel: { gpus: 1, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 0, ep: 1, etp: 0 },
    training: { seq_len: 2048, micro_batch: 1, global_batch: 8, recompute: 'none', flash_attention: true,
      framework: 'pytorch', param_dtype: 'bf16', adapter } });
  assert.equal(presets.find((m) => m.id === 'llama-3.1-8b').tie_word_embeddings, false);
  await show(`#${new URLSearchParams(hash)}`);
  const plain = cli(request({ type: 'qlora' }));
  await expectHeadline(plain, 'qlora');
  assert.equal(await page.isVisible('#quantize-lm-head'), true);
  assert.equal(await page.isChecked('#quantize-lm-head'), false);
  await change(() => page.check('#quantize-lm-head'));
  await page.waitForFunction(() => location.hash.includes('qlh=1'));
  const want = cli(request({ type: 'qlora', quantize_lm_head: true }));
  assert.ok(want.adapter.base_weights_bytes < plain.adapter.base_weights_bytes, 'the NF4 head is smaller');
  await expectHeadline(want, 'qlora, NF4 LM head');
  assert.equal(await page.textContent('#adapter-parts li[data-part="base_weights_bytes"] .part-value'),
    `${g2(want.stages[0].adapter.base_weights_bytes)} GiB`);
  // lora: the checkbox goes with qlora (unchecked first, else it stays to show the refusal)
  await change(() => page.uncheck('#quantize-lm-head'));
  await change(() => page.selectOption('#adapter-type', 'lora'));
  assert.equal(await page.isVisible('#quantize-lm-head'), false);
  // a preset whose head is tied: hidden; forced by a link, the library's refusal next to it
  const tied = presets.find((m) => m.tie_word_embeddings && m.family === 'llama');
  assert.ok(tied, 'a tied llama-family preset');
  await show(`#${new URLSearchParams({ ...hash, m: tied.id })}`);
  assert.equal(await page.isVisible('#quantize-lm-head'), false);
  await show(`#${new URLSearchParams({ ...hash, m: tied.id, qlh: '1' })}`, { error: true });
  const refused = cli(request({ type: 'qlora', quantize_lm_head: true }, tied.id));
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.adapter.quantize_lm_head');
  assert.equal(await page.textContent('#err-quantize-lm-head'), refused.error.message);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  await show('#');
});

test('1.6 search: "max probability of OOM" sent as search.max_oom_probability; each layout\'s P(OOM) and margin; 2 is refused', async () => {
  const tables = cli({ mode: 'enums' });
  const base = { mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 8, sp: true },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none', flash_attention: true }, search: { top: 10 } };
  // the library's default: left out of the request, said in the placeholder and the summary
  const byDefault = await searchTab('#', base);
  assert.equal(byDefault.max_oom_probability, tables.search_max_oom_probability);
  assert.equal(await page.getAttribute('#search-max-oom', 'placeholder'), `default ${tables.search_max_oom_probability}`);
  assert.equal(await page.inputValue('#search-max-oom'), '');
  assert.ok((await page.textContent('#search-summary')).includes(`with a probability of OOM of at most ${prob(byDefault.max_oom_probability)}`));
  // a looser limit typed in: more layouts ranked, as the CLI ranks them
  const loose = cli({ ...base, search: { top: 10, max_oom_probability: 0.9 } });
  assert.ok(loose.ranked > byDefault.ranked, `${loose.ranked} > ${byDefault.ranked}`);
  let before = await probe();
  await page.fill('#search-max-oom', '0.9');
  await settle(before);
  await page.waitForFunction(() => location.hash.includes('moop=0.9'));
  await searchTab('#moop=0.9', { ...base, search: { top: 10, max_oom_probability: 0.9 } });
  assert.ok((await page.textContent('#search-summary')).startsWith(`${loose.ranked} of ${loose.candidates} layouts fit with a probability of OOM of at most 90 %`));
  // the training stack's new fields reach the search too: fsdp1 with no_sync off
  const fsdp1 = { ...base, gpu: 'h100-80gb', training: { ...base.training, seq_len: 4096, global_batch: 64, framework: 'fsdp1', no_sync: false } };
  const got = await searchTab(`#${new URLSearchParams({ g: 'h100-80gb', seq: '4096', gbs: '64', fw: 'fsdp1', ns: '0' })}`, fsdp1);
  const withSync = cli({ ...fsdp1, training: { ...fsdp1.training, no_sync: true } });
  assert.notEqual(got.results[0].peak_bytes, withSync.results[0].peak_bytes, 'no_sync changes the search\'s answer');
  // out of (0, 1]: the library's refusal next to the input, no rows
  await searchTab('#', base);
  before = await probe();
  await page.fill('#search-max-oom', '2');
  await settle(before);
  await page.waitForFunction(() => document.querySelector('#err-search-max-oom').textContent !== '');
  const refused = cli({ ...base, search: { top: 10, max_oom_probability: 2 } });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'search.max_oom_probability');
  assert.equal(await page.textContent('#err-search-max-oom'), refused.error.message);
  assert.equal(await page.getAttribute('#search-max-oom', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#search-error'), refused.error.message);
  assert.equal(await page.locator('#search-table tbody tr').count(), 0);
  before = await probe();
  await page.fill('#search-max-oom', '');
  await settle(before);
  await expectResult('limit cleared');
  assert.ok(!page.url().includes('moop='), page.url());
  await show('#');
});

/** The tiny Nemotron-H derived by hand in tests/unit/test_hybrid.cpp, as its config.json text
 *  holds it: Python's bare Infinity in time_step_limit, as Nemotron-H's released config. */
const TINY_NEMOTRON_H = `{
  "model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4,
  "hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8,
  "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4,
  "use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false,
  "tie_word_embeddings": false, "time_step_limit": [0.0, Infinity]
}`;

test('1.8 a pasted hybrid config.json (Nemotron-H, a bare Infinity in it): the CLI\'s parameter count, estimate and layer patterns, no error', async () => {
  // a layout the tiny model takes: one H100, tp 1, 256 tokens, global batch 4
  await show('#g=h100-80gb&gpus=1&tp=1&cp=1&pp=1&vpp=1&seq=256&mbs=1&gbs=4');
  await page.selectOption('#model-preset', 'custom');
  let before = await probe();
  await page.fill('#model-config', TINY_NEMOTRON_H);
  await settle(before);
  await expectResult('pasted Nemotron-H config');
  // the CLI reads the same file with --config
  const file = join(mkdtempSync(join(tmpdir(), 'memest-e2e-')), 'config.json');
  writeFileSync(file, TINY_NEMOTRON_H);
  const want = cliPretrain(['--config', file, '-g', 'h100-80gb', '--gpus', '1', '--tp', '1', '--cp', '1',
    '--pp', '1', '--seq-len', '256', '--micro-batch', '1', '--global-batch', '4']);
  assert.equal(want.model.num_parameters, 88472, 'the count derived by hand in tests/unit/test_hybrid.cpp');
  const line = await page.textContent('#model-line');
  assert.ok(line.includes(`${want.model.num_parameters.toLocaleString('en-US')} parameters`), line);
  assert.ok(line.includes(`mixers ${want.model.mixer_pattern}, MLPs ${want.model.mlp_pattern}`), line);
  assert.equal(await page.textContent('#estimate'), `${g2(want.estimate_bytes)} GiB`);
  assert.equal(await page.getAttribute('#verdict', 'data-verdict'), want.peak_verdict);
  assert.equal(await page.locator('#stages-table tbody tr').count(), 1);
  assert.equal(await page.getAttribute('#model-config', 'aria-invalid'), null);
  await page.screenshot({ path: `${RESULTS}hybrid-config.png`, fullPage: true });
  // shared by URL: a fresh page reads the pasted text (Infinity and all) back
  const other = await browser.context.newPage();
  await other.goto(page.url());
  await other.waitForSelector('body[data-ready="1"]');
  assert.equal(await other.getAttribute('#status', 'data-state'), 'result');
  assert.equal(await other.textContent('#model-line'), line);
  await other.close();
  // context parallelism over the Mamba-2 scan: Megatron-Core's all-to-all head split, the
  // CLI's estimate; under FSDP the library's refusal next to cp
  before = await probe();
  await page.fill('#gpus', '2');
  await page.fill('#cp', '2');
  await settle(before);
  await expectResult('cp 2 over Mamba-2 under Megatron');
  const split = cliPretrain(['--config', file, '-g', 'h100-80gb', '--gpus', '2', '--tp', '1', '--cp', '2',
    '--pp', '1', '--seq-len', '256', '--micro-batch', '1', '--global-batch', '4']);
  assert.equal(await page.textContent('#estimate'), `${g2(split.estimate_bytes)} GiB`);
  await page.selectOption('#framework', 'fsdp');
  await page.waitForFunction(() => document.querySelector('#err-cp').textContent !== '');
  const refused = cli({ mode: 'pretrain', model: JSON.parse(TINY_NEMOTRON_H.replace('Infinity', 'null')),
    gpu: 'h100-80gb', parallel: { gpus: 2, tp: 1, cp: 2, pp: 1, vpp: 1, sp: true, zero: 1 },
    training: { framework: 'fsdp', seq_len: 256, micro_batch: 1, global_batch: 4, recompute: 'none',
      flash_attention: true } });
  assert.equal(refused.error.field, 'parallel.cp');
  assert.equal(await page.textContent('#err-cp'), refused.error.message);
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  // 1.14: LoRA on the Mamba-2 mixer's in_proj and out_proj (library target names, so
  // checkboxes of the form): 4672 adapter parameters at rank 8 (tests/unit/test_hybrid.cpp),
  // the CLI's answer with --lora-targets in_proj,out_proj
  before = await probe();
  await page.fill('#gpus', '1');
  await page.fill('#cp', '1');
  await settle(before);
  await change(() => page.selectOption('#framework', 'pytorch'));
  await change(() => page.selectOption('#adapter-type', 'lora'));
  for (const t of ['in_proj', 'out_proj']) await change(() => page.check(`#lora-target-${t}`));
  for (const t of ['q_proj', 'v_proj']) await change(() => page.uncheck(`#lora-target-${t}`));
  await page.waitForFunction(() => location.hash.includes('lt=in_proj%2Cout_proj'));
  await expectResult('LoRA on the Mamba-2 mixer');
  const mixers = cliPretrain(['--config', file, '-g', 'h100-80gb', '--gpus', '1', '--tp', '1', '--cp', '1',
    '--pp', '1', '--seq-len', '256', '--micro-batch', '1', '--global-batch', '4', '--framework', 'pytorch',
    '--adapter', 'lora', '--lora-targets', 'in_proj,out_proj']);
  assert.equal(mixers.trainable_parameters, 4672);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), '4672');
  assert.equal(await page.textContent('#estimate'), `${g2(mixers.estimate_bytes)} GiB`);
  await change(() => page.selectOption('#adapter-type', 'none'));
  assert.deepEqual(pageErrors, [], 'console errors');
});

// 1.15: how the optimizer stores what it updates (state.js FIELDS_19 'mw' and 'osd': the selects
// "Master weights" and "Optimizer state dtype", under megatron and deepspeed). Llama-3.1-8B on
// 8 x H100, zero 1, seq 2048, micro batch 1, global batch 8, no recomputation
// (tests/unit/test_optimizer_storage.cpp): the stage's optimizer states are 12 B per parameter
// over 8 shards by default (12045391872), 10 B with the fp32 remainders over the bf16 weights
// (10037826560, the master 2007565312), 4 B with no master and bf16 moments (4015130624).
const STORAGE = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'h100-80gb',
  parallel: { gpus: 8, tp: 1, cp: 1, pp: 1, vpp: 1, sp: true, zero: 1 },
  training: { seq_len: 2048, micro_batch: 1, global_batch: 8, recompute: 'none', flash_attention: true } };
const storageRequest = (training) => ({ ...STORAGE, training: { ...STORAGE.training, ...training } });

/** Fails unless the page shows `want`'s peak, stage rows (optimizer bytes among them) and master
 *  weights part. */
async function expectStorage(want, what) {
  await expectHeadline(want, what);
  const rows = await page.$$eval('#stages-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(rows.length, want.stages.length, what);
  want.stages.forEach((s, k) => assert.deepEqual(rows[k].slice(3), [s.weights_bytes, s.gradients_bytes, s.optimizer_bytes,
    s.activations_bytes, s.total_bytes, s.overhead_bytes, s.peak_bytes].map(g2), `${what}: stage ${k}`));
  const master = want.stages[want.peak_stage].stack.master_weights_bytes;
  const shown = await page.$$eval('#stack-parts li[data-part="master_weights_bytes"] .part-value', (els) => els.map((e) => e.textContent));
  assert.equal(typeof master, 'number', `${what}: the CLI's master weights part`);
  assert.deepEqual(shown, [`${g2(master)} GiB`], `${what}: the master weights part`);
}

test('1.15 optimizer storage: master weights remainder on the page is the CLI\'s answer, URL keys mw and osd, hidden under fsdp', async () => {
  // the library's names: its enums mode's kind master_weights
  const names = cli({ mode: 'enums' }).enums.master_weights;
  assert.deepEqual(names, ['auto', 'fp32', 'bf16', 'fp16', 'remainder', 'none'], 'the library\'s master_weights names');
  const base = cli(STORAGE);
  const rem = cli(storageRequest({ master_weights: 'remainder' }));
  const none = cli(storageRequest({ master_weights: 'none', optimizer_state_dtype: 'bf16' }));
  for (const [want, what] of [[base, 'default'], [rem, 'remainder'], [none, 'none + bf16']]) {
    assert.equal(want.ok, true, `${what}: ${JSON.stringify(want.error)}`);
  }
  assert.equal(base.stages[0].optimizer_bytes, 12045391872);
  assert.equal(base.training.master_weights, 'fp32');
  assert.equal(base.training.optimizer_state_dtype, 'fp32');
  assert.equal(rem.stages[0].optimizer_bytes, 10037826560);
  assert.equal(rem.stages[0].stack.master_weights_bytes, 2007565312);
  assert.equal(none.stages[0].optimizer_bytes, 4015130624);
  assert.ok(base.peak_bytes - rem.peak_bytes >= 2007565312, 'the remainders lower the peak');
  // megatron (the page's default framework): both shown, at their defaults, the library's names
  await show(hashFor(STORAGE));
  await expectStorage(base, 'megatron, the defaults');
  assert.equal(await page.isVisible('#master-weights'), true, 'master weights shown under megatron');
  assert.equal(await page.isVisible('#optimizer-state-dtype'), true, 'optimizer state dtype shown under megatron');
  assert.deepEqual(await page.$$eval('#master-weights option', (os) => os.map((o) => o.value)), names);
  assert.deepEqual(await page.$$eval('#optimizer-state-dtype option', (os) => os.map((o) => o.value)),
    ['', 'fp32', 'bf16', 'fp16', 'fp8']);
  assert.equal(await page.inputValue('#master-weights'), 'auto');
  assert.equal(await page.inputValue('#optimizer-state-dtype'), '');
  assert.ok(!/[#&](mw|osd)=/.test(await page.evaluate(() => location.hash)), 'the defaults stay out of the URL');
  // the remainders, set in the form
  await change(() => page.selectOption('#master-weights', 'remainder'));
  await page.waitForFunction(() => location.hash.includes('mw=remainder'));
  await expectStorage(rem, 'master weights remainder');
  // no master, bf16 moments
  await change(() => page.selectOption('#master-weights', 'none'));
  await change(() => page.selectOption('#optimizer-state-dtype', 'bf16'));
  await page.waitForFunction(() => location.hash.includes('mw=none') && location.hash.includes('osd=bf16'));
  await expectStorage(none, 'no master, bf16 moments');
  // the link round-trips
  await show(hashFor(STORAGE, { mw: 'remainder' }));
  await expectStorage(rem, 'the link with mw=remainder');
  assert.equal(await page.inputValue('#master-weights'), 'remainder');
  await page.screenshot({ path: `${RESULTS}optimizer-storage.png`, fullPage: true });
  // deepspeed keeps a master too: shown, sent, the CLI's answer (10 B as well)
  const ds = cli(storageRequest({ framework: 'deepspeed', master_weights: 'remainder' }));
  assert.equal(ds.ok, true, JSON.stringify(ds.error));
  assert.equal(ds.stages[0].optimizer_bytes, 10037826560);
  await change(() => page.selectOption('#framework', 'deepspeed'));
  assert.equal(await page.isVisible('#master-weights'), true, 'shown under deepspeed');
  await expectStorage(ds, 'deepspeed, remainder');
  // a refusal next to its field: 8-bit Adam keeps its own moments
  const refused = cli(storageRequest({ optimizer: 'adamw_8bit', optimizer_state_dtype: 'bf16' }));
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.optimizer_state_dtype');
  await show(hashFor(STORAGE, { opt: 'adamw_8bit', osd: 'bf16' }), { error: true });
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-optimizer-state-dtype'), refused.error.message);
  assert.equal(await page.getAttribute('#optimizer-state-dtype', 'aria-invalid'), 'true');
  // under fsdp both are hidden and not sent (the library refuses a master there)
  const fsdpRefused = cli(storageRequest({ framework: 'fsdp', master_weights: 'remainder' }));
  assert.equal(fsdpRefused.ok, false);
  assert.equal(fsdpRefused.error.field, 'training.master_weights');
  const fsdp = cli(storageRequest({ framework: 'fsdp' }));
  await show(hashFor(STORAGE, { mw: 'remainder', osd: 'bf16' }));
  await expectStorage(cli(storageRequest({ master_weights: 'remainder', optimizer_state_dtype: 'bf16' })), 'remainder + bf16 moments');
  await change(() => page.selectOption('#framework', 'fsdp'));
  assert.equal(await page.isVisible('#master-weights'), false, 'master weights hidden under fsdp');
  assert.equal(await page.isVisible('#optimizer-state-dtype'), false, 'optimizer state dtype hidden under fsdp');
  await expectHeadline(fsdp, 'fsdp with mw and osd still in the state');
  assert.ok((await page.evaluate(() => location.hash)).includes('mw=remainder'), 'the state keeps them for megatron');
  await show('#');
});

// 1.16: the adapter dtype left at the page's default is left out of the request, and the library
// derives it: peft's fp32 elsewhere, the model's param_dtype under megatron (Megatron builds the
// adapters from the model config). Llama-3.1-8B on 8 x H100, tp 2, seq 2048, peft's LoRA
// defaults (r 8 on q_proj, v_proj): one tp rank's 1835008 adapter parameters in bf16, 3670016 B.
const MEGATRON_LORA = storageRequest({ framework: 'megatron', param_dtype: 'bf16', adapter: { type: 'lora' } });
MEGATRON_LORA.parallel = { ...MEGATRON_LORA.parallel, tp: 2 };

test('1.16 adapter dtype default under megatron: no dtype sent, the CLI\'s bf16 adapters; an explicit fp32 refused next to the field', async () => {
  const want = cli(MEGATRON_LORA);
  assert.equal(want.ok, true, JSON.stringify(want.error));
  const stage = want.stages.find((s) => s.stage === want.peak_stage);
  assert.equal(stage.adapter.trainable_parameters, 1835008);
  assert.equal(stage.adapter.adapter_weights_bytes, 3670016, 'bf16 adapters: 2 B a parameter');
  const bf16 = cli({ ...MEGATRON_LORA, training: { ...MEGATRON_LORA.training, adapter: { type: 'lora', dtype: 'bf16' } } });
  assert.equal(bf16.peak_bytes, want.peak_bytes, 'the derived dtype is the param dtype');
  const refused = cli({ ...MEGATRON_LORA, training: { ...MEGATRON_LORA.training, adapter: { type: 'lora', dtype: 'fp32' } } });
  assert.equal(refused.ok, false);
  assert.equal(refused.error.field, 'training.adapter.dtype');
  // the form: megatron (the default framework), lora, the adapter dtype at its default
  await show(hashFor(MEGATRON_LORA, { ad: 'lora', pd: 'bf16' }));
  await expectHeadline(want, 'megatron lora, the default adapter dtype');
  assert.equal(await page.inputValue('#framework'), 'megatron');
  assert.equal(await page.inputValue('#adapter-dtype'), '');
  assert.equal(await page.$eval('#adapter-dtype option:checked', (o) => o.textContent), 'default (fp32; megatron: param dtype)');
  assert.deepEqual(await page.$$eval('#adapter-dtype option', (os) => os.map((o) => o.value)), ['', 'bf16', 'fp16', 'fp32', 'fp8']);
  assert.ok(!/[#&]adt=/.test(await page.evaluate(() => location.hash)), 'no adapter dtype in the state, so none in the request');
  const parts = await page.$$eval('#adapter-parts li', (lis) => Object.fromEntries(lis.map((li) => [li.dataset.part, li.querySelector('.part-value').textContent])));
  assert.equal(parts.adapter_weights_bytes, `${g2(3670016)} GiB`);
  assert.equal(await page.getAttribute('#trainable-params', 'data-value'), String(want.trainable_parameters));
  // an explicit fp32 is sent, and refused under the adapter dtype
  await change(() => page.selectOption('#adapter-dtype', 'fp32'));
  await page.waitForFunction(() => location.hash.includes('adt=fp32'));
  assert.equal(await page.getAttribute('#status', 'data-state'), 'error');
  assert.equal(await page.textContent('#err-adapter-dtype'), refused.error.message);
  assert.equal(await page.getAttribute('#adapter-dtype', 'aria-invalid'), 'true');
  // an old link with adt=fp32 keeps meaning fp32
  await show(hashFor(MEGATRON_LORA, { ad: 'lora', pd: 'bf16', adt: 'fp32' }), { error: true });
  assert.equal(await page.inputValue('#adapter-dtype'), 'fp32');
  assert.equal(await page.textContent('#err-adapter-dtype'), refused.error.message);
  await show('#');
});
