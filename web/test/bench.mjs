// Benchmark (figures, not assertions): transferred size of the page (gzip), time to the first
// result after load, and time to recompute the 512-cell layouts x GPUs table — in headless
// Chromium against web/dist served on 127.0.0.1, plus the wrapper alone in Node.
// Targets: library module < 300 KB gzip, first result < 1 s, table < 50 ms.
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
const cells = [];
for (const tp of [1, 2, 4, 8]) for (const cp of [1, 2]) for (const pp of [1, 2, 4, 8]) for (const mbs of [1, 2]) {
  for (const g of [8, 16, 32, 64, 128, 256, 512, 1024]) cells.push([g, tp, cp, pp, mbs]);
}
const t = [];
for (let i = 0; i < 7; i++) { const t0 = performance.now(); memest.pretrainTable(base, cells); t.push(performance.now() - t0); }
const one = [];
for (let i = 0; i < 50; i++) { const t0 = performance.now(); memest.request(base); one.push(performance.now() - t0); }
console.log(`node: one request() ${median(one).toFixed(2)} ms; pretrainTable() of ${cells.length} cells ${median(t).toFixed(1)} ms (median of 7)`);

// ---- Chromium: the built page
const server = await serve(dist);
const browser = await launch();
try {
  const first = [];
  for (let i = 0; i < 5; i++) {
    const page = await browser.context.newPage();
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]');
    first.push(await page.evaluate(() => window.__memest.timings.firstResultMs));
    await page.close();
  }
  console.log(`page: first result after navigation start ${median(first).toFixed(0)} ms (median of 5 loads; target < 1000 ms)`);
  const page = await browser.context.newPage();
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="1"]');
  const grid = [];
  const lib = [];
  const full = [];
  for (const [i, gbs] of [512, 1024, 2048, 1024, 512, 1024, 2048].entries()) {
    const before = await page.evaluate(() => window.__memest.updates);
    const t0 = await page.evaluate(() => performance.now());
    await page.fill('#gbs', String(gbs + i));
    await page.waitForFunction((n) => window.__memest.updates > n, before);
    const [end, gridMs, libMs] = await page.evaluate(() => [performance.now(), window.__memest.timings.gridMs, window.__memest.timings.gridLibMs]);
    grid.push(gridMs);
    lib.push(libMs);
    full.push(end - t0);
  }
  const n = await page.evaluate(() => window.__memest.timings.gridCells);
  console.log(`page: recompute the ${n}-cell table (library + DOM) ${median(grid).toFixed(1)} ms (median of 7; target < 50 ms), of which the library ${median(lib).toFixed(1)} ms; ` +
              `whole update after an input ${median(full).toFixed(1)} ms`);
} finally {
  await browser.close();
  await server.close();
}
