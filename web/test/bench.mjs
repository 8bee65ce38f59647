// Benchmark (figures, not assertions): transferred size of the page (gzip), time to the first
// result after navigation start, the time from a keystroke to its answer on screen (median of N
// keystrokes), the layouts x GPUs table, the fine-tuning and search tabs — in headless Chromium
// against web/dist served on 127.0.0.1, plus the wrapper alone in Node.
// Targets: library module < 300 KB gzip, first result < 0.5 s.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './server.mjs';
import { launch } from './browser.mjs';
import { loadMemest } from '../../wasm/node.mjs';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => `${x.toFixed(1)} ms`;
const LOADS = Number(process.env.BENCH_LOADS ?? 7);
const KEYSTROKES = Number(process.env.BENCH_KEYSTROKES ?? 21);

// ---- sizes
const files = [];
const walk = (dir) => {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
};
walk(dist);
let raw = 0;
let gz = 0;
let wasmGz = 0;
let wasmRaw = 0;
for (const f of files) {
  const body = readFileSync(f);
  const z = gzipSync(body, { level: 9 }).length;
  raw += body.length;
  gz += z;
  if (f.endsWith('.wasm')) { wasmGz += z; wasmRaw += body.length; }
}
const core = readFileSync(fileURLToPath(new URL('../../wasm/build/memest_core.mjs', import.meta.url)));
const coreGz = gzipSync(core, { level: 9 }).length;
console.log(`size: library module (memest_core.wasm + its JS loader): ${kb(wasmRaw + core.length)} raw, ` +
            `${kb(wasmGz + coreGz)} gzip (target < 300 KB)`);
console.log(`size: whole page (${files.length} files: HTML, CSS, JS incl. chart.js, WASM): ${kb(raw)} raw, ${kb(gz)} gzip`);

// ---- Node: the wrapper alone
const memest = await loadMemest();
const base = { mode: 'pretrain', model: 'llama-3.1-8b', gpu: 'a100-40gb',
  parallel: { gpus: 8, tp: 4, cp: 1, pp: 2, vpp: 1, sp: true, zero: 1 },
  training: { seq_len: 8192, micro_batch: 1, global_batch: 1024, recompute: 'none', flash_attention: true } };
const oom = { ...base, parallel: { ...base.parallel, cp: 2, pp: 1 }, training: { ...base.training, micro_batch: 2 } };
const cells = [];
for (const tp of [1, 2, 4, 8]) for (const cp of [1, 2]) for (const pp of [1, 2, 4, 8]) for (const mbs of [1, 2]) {
  for (const g of [8, 16, 32, 64, 128, 256, 512, 1024]) cells.push([g, tp, cp, pp, mbs]);
}
const timeIt = (n, f) => {
  const t = [];
  for (let i = 0; i < n; i++) { const t0 = performance.now(); f(); t.push(performance.now() - t0); }
  return median(t);
};
console.log(`node: request() ${timeIt(50, () => memest.request(base)).toFixed(2)} ms (fits), ` +
  `${timeIt(50, () => memest.request(oom)).toFixed(2)} ms (out of memory: with its suggestions); ` +
  `pretrainTable() of ${cells.length} cells ${timeIt(7, () => memest.pretrainTable(base, cells, { messages: false })).toFixed(1)} ms (medians)`);

// ---- Chromium: the built page
const server = await serve(dist);
const browser = await launch();
try {
  const loads = [];
  for (let i = 0; i < LOADS; i++) {
    const page = await browser.context.newPage();
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]');
    loads.push(await page.evaluate(() => {
      const mark = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN;
      return { script: mark('memest-script-start'), library: mark('memest-library-ready'),
        first: window.__memest.timings.firstResultMs, paint: window.__memest.timings.firstPaintMs };
    }));
    await page.close();
  }
  const m = (k) => median(loads.map((l) => l[k]));
  console.log(`page: first result ${m('first').toFixed(0)} ms after navigation start, painted by ${m('paint').toFixed(0)} ms ` +
    `(median of ${LOADS} loads; target < 500 ms): script running at ${m('script').toFixed(0)} ms, library ready at ${m('library').toFixed(0)} ms`);

  const page = await browser.context.newPage();
  /** N keystrokes in the global batch field (End, then "0" / Backspace in turn: 10240, 1024, ...),
   *  each waited for; the page times each from its input event to its answer on screen. */
  const keystrokes = async (hash) => {
    await page.goto(`${server.url}${hash}`);
    await page.waitForSelector('body[data-ready="1"]');
    await page.click('#gbs');
    await page.keyboard.press('End');
    await page.evaluate(() => { window.__memest.timings.keystrokeMs.length = 0; });
    for (let i = 0; i < KEYSTROKES; i++) {
      const n = await page.evaluate(() => window.__memest.timings.keystrokeMs.length);
      await page.keyboard.press(i % 2 ? 'Backspace' : '0');
      await page.waitForFunction((k) => window.__memest.timings.keystrokeMs.length > k, n);
    }
    const t = await page.evaluate(() => window.__memest.timings);
    await page.waitForFunction(() => !window.__memest.gridPending);
    const grid = await page.evaluate(() => window.__memest.timings);
    return { keystroke: median(t.keystrokeMs), grid };
  };
  const fits = await keystrokes('');
  const out = await keystrokes('#cp=2&pp=1&mbs=2');
  console.log(`page: keystroke to answer on screen ${ms(fits.keystroke)} (the README example) and ${ms(out.keystroke)} ` +
    `(an out-of-memory layout, its suggestions computed), medians of ${KEYSTROKES} keystrokes each`);
  console.log(`page: the ${fits.grid.gridCells}-cell layouts table, recomputed ${250} ms after the last keystroke: ` +
    `${ms(fits.grid.gridMs)} (library ${ms(fits.grid.gridLibMs)})`);
  for (const [tab, key, what] of [['finetune', 'finetuneMs', 'fine-tuning (LLMem Algorithm 1, OPT-2.7B on 4 x V100)'],
    ['search', 'searchMs', 'layout search (8 GPUs)']]) {
    const runs = [];
    for (let i = 0; i < 3; i++) {
      const hash = tab === 'finetune' ? `#m=opt-2.7b&g=v100-16gb&gpus=4&seq=512&tp=4&pp=1&tab=finetune&x=${i}` : `#tab=search&top=${10 + i}`;
      await page.goto(`${server.url}${hash}`);
      await page.waitForSelector('body[data-ready="1"]');
      await page.waitForFunction((k) => window.__memest.timings[k] != null, key);
      runs.push(await page.evaluate((k) => window.__memest.timings[k], key));
    }
    console.log(`page: ${what}: ${ms(median(runs))} per answer (median of 3)`);
  }
} finally {
  await browser.close();
  await server.close();
}
