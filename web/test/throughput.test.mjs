// End-to-end tests of the throughput model on the page: the step time and its parts beside the
// memory chart (pretraining), and the search table's tie marker, ep and MFU columns, against the
// memest CLI for the same requests. Needs what e2e.test.mjs needs: web/dist and the CLI.
// Each test fails when the page shows no breakdown (or no tie column): the lists must be equal.
// The search's fp8 / torch.compile variants: the page's rows against `memest search
// --fp8-options ... --compile-options ... --format json`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { CLI, cli, cliPretrain, expectResult, g2, page, probe, RESULTS, settle, show, usePage } from './harness.mjs';

usePage();

const HASH = new URLSearchParams({ m: 'llama-3.1-8b', g: 'h100-80gb', gpus: '16', tp: '2', cp: '1',
  pp: '2', vpp: '1', zero: '1', seq: '8192', mbs: '1', gbs: '256' }).toString();
const ARGS = ['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '16', '--tp', '2', '--cp', '1',
  '--pp', '2', '--zero', '1', '--seq-len', '8192', '--micro-batch', '1', '--global-batch', '256'];

test('pretraining: the page\'s step breakdown is the CLI\'s, part for part', async () => {
  const want = cliPretrain(ARGS);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.ok(want.throughput, 'the CLI answers a step time for a global batch');
  await show(`#${HASH}`);
  await expectResult('step time');
  assert.equal(await page.isVisible('#step-box'), true, 'the step breakdown is shown');
  const parts = await page.$$eval('#step-parts li', (lis) => lis.map((li) => [li.dataset.part, Number(li.dataset.seconds)]));
  const nonzero = Object.entries(want.throughput.step).filter(([, v]) => v > 0);
  assert.ok(nonzero.length > 0, 'the CLI has nonzero parts');
  assert.deepEqual(parts, nonzero);
  // the parts' names are the library's step_part enum
  const names = cli({ mode: 'enums' }).enums.step_part;
  for (const [part] of parts) assert.ok(names.includes(part), `${part} is a library name`);
  assert.equal(Number(await page.getAttribute('#step-box', 'data-step-seconds')), want.throughput.step_seconds);
  const line = await page.textContent('#step-line');
  assert.ok(line.startsWith(`${want.throughput.step_seconds.toFixed(3)} s per global batch`), line);
  assert.ok(line.includes(`${want.throughput.tflops_per_gpu.toFixed(1)} TFLOP/s per GPU`), line);
  await page.screenshot({ path: `${RESULTS}step-time.png`, fullPage: true });
  // without a global batch there is no step time, and no breakdown
  await show(`#${HASH.replace('gbs=256', 'gbs=0')}`);
  await expectResult('no global batch');
  assert.equal(await page.isVisible('#step-box'), false);
  assert.equal(await page.$$eval('#step-parts li', (lis) => lis.length), 0);
});

test('search tab: the tie marker, ep and MFU of every ranked layout are the CLI\'s', async () => {
  await show('#');
  const before = await probe();
  await page.click('#tab-search');
  await settle(before);
  await page.waitForSelector('#search-table tbody tr');
  await expectResult('search');
  const want = cli({ mode: 'search', model: 'llama-3.1-8b', gpu: 'a100-40gb', parallel: { gpus: 8, sp: true },
    training: { seq_len: 8192, global_batch: 1024, recompute: 'none', flash_attention: true }, search: { top: 10 } });
  assert.equal(want.ok, true);
  const rows = await page.$$eval('#search-table', ([table]) => {
    const labels = [...table.tHead.rows[0].cells].map((th) => th.textContent.replace(/[▲▼]/g, '').trim());
    return [...table.tBodies[0].rows].map((tr) => Object.fromEntries(
      [...tr.cells].map((td, i) => [labels[i], td.textContent.trim()])));
  });
  assert.equal(rows.length, want.results.length);
  assert.ok(want.results.some((r) => r.tie), 'some layout ties with the best');
  want.results.forEach((r, i) => {
    assert.equal(rows[i].Tie, r.tie ? '=' : '', `row ${i + 1} tie`);
    assert.equal(rows[i].ep, String(r.layout.ep), `row ${i + 1} ep`);
    assert.equal(rows[i].MFU, `${Math.round(r.throughput.mfu * 1000) / 10} %`, `row ${i + 1} MFU`);
  });
  const back = await probe();
  await page.click('#tab-pretrain');
  await settle(back);
  await show('#');
});

test('MoE dispatcher: a select of the library\'s names for MoE models, in the URL, and the CLI\'s ep_comm', async () => {
  const names = cli({ mode: 'enums' }).enums.moe_dispatcher;
  const deepep = names[1];
  const moeHash = new URLSearchParams({ m: 'qwen3-30b-a3b', g: 'h100-80gb', gpus: '16', tp: '1', cp: '1',
    pp: '1', vpp: '1', ep: '16', zero: '1', seq: '4096', mbs: '1', gbs: '64', md: deepep }).toString();
  const moeArgs = ['-m', 'qwen3-30b-a3b', '-g', 'h100-80gb', '--gpus', '16', '--tp', '1', '--cp', '1',
    '--pp', '1', '--ep', '16', '--zero', '1', '--seq-len', '4096', '--micro-batch', '1', '--global-batch', '64'];
  const want = cliPretrain([...moeArgs, '--moe-dispatcher', deepep]);
  const alltoall = cliPretrain(moeArgs);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.equal(want.training.moe_dispatcher, deepep);
  assert.ok(want.throughput.step.ep_comm < alltoall.throughput.step.ep_comm, 'deepep lowers ep_comm across nodes');
  await show(`#${moeHash}`);
  await expectResult('MoE dispatcher');
  assert.equal(await page.isVisible('#moe-dispatcher'), true, 'shown for an MoE preset');
  assert.equal(await page.inputValue('#moe-dispatcher'), deepep);
  const options = await page.$$eval('#moe-dispatcher option', (os) => os.map((o) => o.value).filter(Boolean));
  assert.deepEqual(options, names, 'the options are the library\'s names');
  const epComm = await page.$eval('#step-parts li[data-part="ep_comm"]', (li) => Number(li.dataset.seconds));
  assert.equal(epComm, want.throughput.step.ep_comm);
  // the default sends no field, and the URL carries none
  const before = await probe();
  await page.selectOption('#moe-dispatcher', '');
  await settle(before);
  await expectResult('MoE dispatcher: default');
  assert.ok(!(await page.evaluate(() => location.hash)).includes('md='), 'the default is not in the URL');
  const plain = await page.$eval('#step-parts li[data-part="ep_comm"]', (li) => Number(li.dataset.seconds));
  assert.equal(plain, alltoall.throughput.step.ep_comm);
  // a dense model hides it
  await show(`#${HASH}`);
  assert.equal(await page.isVisible('#moe-dispatcher'), false, 'hidden for a dense model');
  await show('#');
});

test('attention kernels: a select of the library\'s names, in the URL, and the CLI\'s compute for flash2', async () => {
  const names = cli({ mode: 'enums' }).enums.attention_kernel;
  const want = cliPretrain([...ARGS, '--attention-kernel', 'flash2']);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.equal(want.training.attention_kernel, 'flash2');
  await show(`#${HASH}&ak=flash2`);
  await expectResult('attention kernels: flash2');
  assert.equal(await page.inputValue('#attention-kernel'), 'flash2');
  assert.deepEqual(await page.$$eval('#attention-kernel option', (os) => os.map((o) => o.value)), names);
  const compute = await page.$eval('#step-parts li[data-part="compute"]', (li) => Number(li.dataset.seconds));
  assert.equal(compute, want.throughput.step.compute);
  assert.ok((await page.evaluate(() => location.hash)).includes('ak=flash2'), 'the kernels are in the URL');
  // 1.17: Triton's FlashAttention kernel (llm-foundry's MPT), slower than flash2, as the CLI has it
  assert.ok(names.includes('triton'), `the library names triton: ${names}`);
  const triton = cliPretrain([...ARGS, '--attention-kernel', 'triton']);
  assert.equal(triton.ok, true, `the CLI answers: ${JSON.stringify(triton.error)}`);
  await show(`#${HASH}&ak=triton`);
  await expectResult('attention kernels: triton');
  const tritonCompute = await page.$eval('#step-parts li[data-part="compute"]', (li) => Number(li.dataset.seconds));
  assert.equal(tritonCompute, triton.throughput.step.compute);
  assert.ok(tritonCompute > compute, `triton ${tritonCompute} s over flash2 ${compute} s`);
  await show('#');
});

test('communication overlap: a select of the library\'s kinds, in the URL, and the CLI\'s tp_comm', async () => {
  const kinds = cli({ mode: 'enums' }).enums.overlap;
  const want = cliPretrain([...ARGS, '--comm-overlap', 'dp,tp']);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.deepEqual(want.training.comm_overlap, ['dp', 'tp']);
  const plain = cliPretrain(ARGS);
  assert.ok(want.throughput.step.tp_comm < plain.throughput.step.tp_comm, 'TP overlap hides TP time');
  await show(`#${HASH}&co=dp,tp`);
  await expectResult('communication overlap: dp + tp');
  assert.equal(await page.inputValue('#comm-overlap'), 'dp,tp');
  const values = await page.$$eval('#comm-overlap option', (os) => os.map((o) => o.value));
  assert.equal(values.length, 2 + (1 << kinds.length) - 1, 'default, none and every combination');
  for (const k of kinds) assert.ok(values.includes(k), `${k} alone is offered`);
  // the parts the page lists are the CLI's nonzero ones with this overlap (TP's is hidden or less)
  const shown = await page.$$eval('#step-parts li', (lis) => lis.map((li) => [li.dataset.part, Number(li.dataset.seconds)]));
  const nonzero = Object.entries(want.throughput.step).filter(([, v]) => v > 0);
  assert.deepEqual(shown, nonzero);
  assert.ok((await page.evaluate(() => location.hash)).includes('co=dp%2Ctp') ||
            (await page.evaluate(() => location.hash)).includes('co=dp,tp'), 'the overlap is in the URL');
  await show('#');
});

/** The CLI's JSON answer to its own search flags (`memest search ... --format json`). */
function cliSearch(args) {
  return JSON.parse(execFileSync(CLI, ['search', ...args, '--format', 'json'],
    { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }));
}

/** The search table as objects keyed by its column labels (sort arrows dropped). */
const searchTable = () => page.$$eval('#search-table', ([table]) => {
  const labels = [...table.tHead.rows[0].cells].map((th) => th.textContent.replace(/[▲▼]/g, '').trim());
  return [...table.tBodies[0].rows].map((tr) => Object.fromEntries(
    [...tr.cells].map((td, i) => [labels[i], td.textContent.trim()])));
});

/** What the page's row shows of a CLI entry: its layout, fp8, compile and tokens/s. */
const shownOf = (r) => ({ tp: String(r.layout.tp), cp: String(r.layout.cp), pp: String(r.layout.pp),
  vpp: String(r.layout.vpp), mbs: String(r.layout.micro_batch), zero: String(r.layout.zero),
  Recompute: r.layout.recompute, fp8: r.fp8 ? 'on' : 'off', Compile: r.compile,
  'Tokens/s': Math.round(r.tokens_per_s).toLocaleString('en-US') });
const rowOf = (row) => ({ tp: row.tp, cp: row.cp, pp: row.pp, vpp: row.vpp, mbs: row.mbs, zero: row.zero,
  Recompute: row.Recompute, fp8: row.fp8, Compile: row.Compile, 'Tokens/s': row['Tokens/s'] });

test('search tab: the fp8 and torch.compile variants are sent, shown per layout as the CLI\'s, and in the URL', async () => {
  // Llama-3.1-8B on 8 x H100 (fp8 tensor cores) under fsdp (megatron runs no torch.compile);
  // the form pins recompute none, as --recompute none
  const args = ['-m', 'llama-3.1-8b', '-g', 'h100-80gb', '--gpus', '8', '--framework', 'fsdp',
    '--recompute', 'none', '--top', '10'];
  const compileNames = cli({ mode: 'enums' }).enums.compile;
  const want = cliSearch([...args, '--fp8-options', 'off,on', '--compile-options', compileNames.join(',')]);
  const plain = cliSearch(args);
  assert.equal(want.ok, true, `the CLI answers: ${JSON.stringify(want.error)}`);
  assert.equal(plain.ok, true, `the CLI answers: ${JSON.stringify(plain.error)}`);
  // the variants change the answer: without them every row is fp8 off, compile none
  assert.ok(want.results.some((r) => r.fp8) && want.results.some((r) => r.compile !== 'none'));
  assert.ok(new Set(want.results.map((r) => r.compile)).size > 1, 'the top rows mix compile settings');
  assert.ok(plain.results.every((r) => !r.fp8 && r.compile === 'none'));
  assert.notDeepEqual(want.results.map(shownOf), plain.results.map(shownOf));

  // the page without variants: the CLI's plain answer, no fp8 / compile columns
  await show(`#${new URLSearchParams({ g: 'h100-80gb', fw: 'fsdp', tab: 'search' })}`);
  await page.waitForSelector('#search-table tbody tr');
  await expectResult('search without variants');
  let rows = await searchTable();
  assert.equal(rows.length, plain.results.length);
  assert.ok(!('fp8' in rows[0]) && !('Compile' in rows[0]), 'no variant columns without variants');
  assert.deepEqual(rows.map((r) => r['Tokens/s']), plain.results.map((r) => shownOf(r)['Tokens/s']));

  // the boxes: fp8 off / on and the library's compile names
  assert.deepEqual(await page.$$eval('#search-fp8 input', (bs) => bs.map((b) => b.value)), ['off', 'on']);
  assert.deepEqual(await page.$$eval('#search-compile input', (bs) => bs.map((b) => b.value)), compileNames);
  for (const id of ['search-fp8-off', 'search-fp8-on', ...compileNames.map((n) => `search-compile-${n}`)]) {
    const before = await probe();
    await page.check(`#${id}`);
    await settle(before);
  }
  await expectResult('search with variants');
  rows = await searchTable();
  assert.equal(rows.length, want.results.length);
  assert.deepEqual(rows.map(rowOf), want.results.map(shownOf), 'the page\'s rows are the CLI\'s');
  assert.match(await page.textContent('#search-summary'), new RegExp(`^${want.ranked} of ${want.candidates} layouts`));
  await page.screenshot({ path: `${RESULTS}search-variants.png`, fullPage: true });

  // the shared URL carries them: a fresh load of it checks the same boxes and shows the same rows
  const hash = await page.evaluate(() => location.hash);
  const params = new URLSearchParams(hash.slice(1));
  assert.equal(params.get('sf8'), 'off,on');
  assert.equal(params.get('scp'), compileNames.join(','));
  await show('#');
  assert.equal(await page.isChecked('#search-fp8-on'), false);
  await show(hash);
  await page.waitForSelector('#search-table tbody tr');
  await expectResult('search variants from the URL');
  assert.equal(await page.isChecked('#search-fp8-off'), true);
  assert.equal(await page.isChecked('#search-fp8-on'), true);
  for (const n of compileNames) assert.equal(await page.isChecked(`#search-compile-${n}`), true, n);
  assert.deepEqual((await searchTable()).map(rowOf), want.results.map(shownOf), 'the rows from the URL');

  // fp8 on alone, no compile variants: the CLI's --fp8-options on
  const onlyOn = cliSearch([...args, '--fp8-options', 'on']);
  for (const id of ['search-fp8-off', ...compileNames.map((n) => `search-compile-${n}`)]) {
    const before = await probe();
    await page.uncheck(`#${id}`);
    await settle(before);
  }
  await expectResult('fp8 on alone');
  assert.ok(!(await page.evaluate(() => location.hash)).includes('scp='), 'no compile variants in the URL');
  assert.deepEqual((await searchTable()).map(rowOf), onlyOn.results.map(shownOf), 'fp8 on alone');

  // "Use" on a row carries its fp8 and compile into the pretraining form, which reproduces it
  await show(hash);
  await page.waitForSelector('#search-table tbody tr');
  const pick = Math.max(0, want.results.findIndex((r) => r.compile !== want.results[0].compile));
  const r = want.results[pick];
  const before = await probe();
  await page.click(`#search-table tbody tr:nth-child(${pick + 1}) button`);
  await settle(before);
  await expectResult(`Use row ${pick + 1}`);
  assert.equal(await page.getAttribute('#tab-pretrain', 'aria-selected'), 'true');
  assert.equal(await page.isChecked('#fp8'), r.fp8, `row ${pick + 1}: fp8`);
  assert.equal(await page.inputValue('#compile'), r.compile, `row ${pick + 1}: compile`);
  assert.equal((await page.textContent('#peak')).split(' (')[0], `${g2(r.peak_bytes)} GiB`, `row ${pick + 1}: peak`);
  await show('#');
});
