// The layout search tab: the library's ranked layouts that fit (tp, cp, pp, vpp, micro-batch,
// recompute, ZeRO, and the fp8 / torch.compile variants it was asked to try), its summary of
// what was dropped, and "Use" to load a layout into the pretraining tab; plus the tab's own
// controls (how many to show, the probability-of-OOM limit, the variants).
import { GiB } from '@memest';
import { searchRequest, applySet, SEARCH_FP8, searchVariants } from './state.js';
import { state, setState, update, scheduleUpdate } from './page-state.js';
import { memest, answerUnless } from './wasm-bridge.js';
import { timings, probe } from './probe.js';
import { SEARCH_VARIANTS, variantBoxes, writeForm } from './form.js';
import { showErrors, errorStatus } from './form-errors.js';
import { sortableTable } from './sortable-table.js';
import { selectTab } from './tabs.js';
import { $, el, setStatus, verdictWords } from './dom.js';
import { fmtGiB, percent, probability, marginText, words } from './format.js';

/** The last answer shown (the downloads'), null when none is. */
export let lastSearch = null;

export function clearSearch() {
  lastSearch = null;
  $('search-error').textContent = '';
  $('search-table').replaceChildren();
  $('search-summary').textContent = '';
}

export function runSearch(problem) {
  const t0 = performance.now();
  const d = answerUnless(problem, () => searchRequest(state));
  timings.searchMs = performance.now() - t0;
  clearSearch();
  document.body.classList.toggle('invalid', !d.ok);
  probe.searchRuns += 1;
  if (!d.ok) {
    showErrors(d);
    $('search-error').textContent = (d.errors ?? [d.error]).map((e) => e.message).join(' ');
    setStatus('error', [errorStatus(d)]);
    return;
  }
  lastSearch = d;
  const rows = (d.results ?? []).map((r, i) => ({
    rank: r.rank ?? i + 1, ...flattenLayout(r.layout ?? {}), peak_gib: (r.peak_bytes ?? 0) / GiB,
    peak_verdict: r.peak_verdict ?? '', estimate_gib: (r.estimate_bytes ?? 0) / GiB, verdict: r.verdict ?? '',
    tflops: r.tflops_per_gpu ?? null, tokens: r.tokens_per_s ?? null, reason: r.reason ?? '', _raw: r,
    tie: r.tie ? 1 : 0, mfu: r.throughput?.mfu ?? null,
    oom_probability: r.oom_probability ?? null, margin_gib: r.margin_bytes == null ? null : r.margin_bytes / GiB,
    fp8: r.fp8 ? 'on' : 'off', compile: r.compile ?? 'none',
  }));
  // which fp8 and torch.compile each layout trains with: shown when the search tried variants,
  // or when a layout uses either (as the CLI's table)
  const tried = searchVariants(state);
  const variants = 'fp8' in tried || 'compile' in tried || rows.some((r) => r.fp8 === 'on' || r.compile !== 'none');
  const limit = typeof d.max_oom_probability === 'number'
    ? ` with a probability of OOM of at most ${probability(d.max_oom_probability)}` : '';
  $('search-summary').dataset.maxOomProbability = String(d.max_oom_probability ?? '');
  $('search-summary').textContent = rows.length
    ? `${d.ranked} of ${d.candidates} layouts fit${limit} and were ranked (${d.pruned_total} dropped); the best ${rows.length}:`
    : `No layout of the ${d.candidates} considered fits (${d.pruned_total} dropped: ${prunedSummary(d.pruned)}).`;
  const who = `${d.model.name} on ${d.gpus} × ${d.gpu.name}, layout search: `;
  if (rows.length) {
    const best = d.results[0];
    const l = best.layout;
    setStatus('result', [who, 'the fastest layout predicted to fit is ',
      `tp ${l.tp}, cp ${l.cp}, pp ${l.pp}, vpp ${l.vpp}, micro-batch ${l.micro_batch}, recompute ${l.recompute}, ZeRO ${l.zero}` +
      (variants ? `, fp8 ${best.fp8 ? 'on' : 'off'}, compile ${best.compile ?? 'none'}` : ''),
      ' — ', verdictWords(best.peak_verdict),
      `, peak ${fmtGiB(best.peak_bytes)} of ${fmtGiB(d.gpu.memory_bytes)}` +
      (typeof best.oom_probability === 'number' ? ` (probability of OOM ${probability(best.oom_probability)}, ${marginText(best.margin_bytes)})` : '') +
      `, ${best.tflops_per_gpu.toFixed(1)} TFLOP/s per GPU.`],
    best.peak_verdict);
  } else {
    setStatus('result', [who, verdictWords('oom'), ` — no layout of the ${d.candidates} considered fits.`], 'oom');
  }
  const layoutKeys = ['tp', 'cp', 'pp', 'vpp', 'dp', 'ep', 'micro_batch', 'zero'].filter((k) => rows.some((r) => k in r));
  sortableTable($('search-table'), [
    { key: 'rank', label: 'Rank', num: true },
    { key: 'tie', label: 'Tie', num: true, fmt: (v) => (v ? '=' : '') },
    ...layoutKeys.map((k) => ({ key: k, label: k === 'micro_batch' ? 'mbs' : k, num: true })),
    ...(rows.some((r) => 'recompute' in r) ? [{ key: 'recompute', label: 'Recompute' }] : []),
    ...(variants ? [{ key: 'fp8', label: 'fp8' }, { key: 'compile', label: 'Compile' }] : []),
    { key: 'peak_gib', label: 'Peak (GiB)', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'peak_verdict', label: 'Verdict', fmt: (v) => words(v), verdict: 'peak_verdict' },
    ...(rows.some((r) => r.oom_probability != null) ? [
      { key: 'oom_probability', label: 'P(OOM)', num: true, fmt: (v) => (v == null ? '—' : probability(v)) },
      { key: 'margin_gib', label: 'Margin (GiB)', num: true, fmt: (v) => (v == null ? '—' : v.toFixed(2)) },
    ] : []),
    { key: 'estimate_gib', label: 'Paper\'s estimate (GiB)', num: true, fmt: (v) => v.toFixed(2) },
    { key: 'verdict', label: 'Paper\'s verdict', fmt: (v) => words(v) },
    { key: 'tflops', label: 'TFLOP/s per GPU', num: true, fmt: (v) => (v == null ? '—' : Number(v).toFixed(1)) },
    { key: 'tokens', label: 'Tokens/s', num: true, fmt: (v) => (v == null ? '—' : Math.round(v).toLocaleString('en-US')) },
    { key: 'mfu', label: 'MFU', num: true, fmt: (v) => (v == null ? '—' : percent(v)) },
  ], rows, (r) => `verdict-${r.peak_verdict}`, (row) => {
    const b = el('button', { type: 'button', className: 'use', title: row.reason }, 'Use');
    b.setAttribute('aria-label', `Use layout ranked ${row.rank}`);
    b.addEventListener('click', () => applyLayout(row._raw.layout, row._raw));
    return b;
  });
}

/** "oom 377, vpp_needs_pp 330": the library's prune counts by its reason names, largest first. */
function prunedSummary(pruned) {
  return Object.entries(pruned ?? {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${reason} ${n}`).join(', ') || 'none';
}

export function flattenLayout(layout) {
  const out = {};
  for (const [k, v] of Object.entries(layout)) if (typeof v !== 'object') out[k] = v;
  return out;
}

/** Loads a search result's layout into the form: every field the search chose (tp, cp, pp,
 *  vpp, micro-batch, recompute, ZeRO, and the fp8 and torch.compile of its entry); the GPUs, SP
 *  and other training settings are those it ran with. */
function applyLayout(l, entry = {}) {
  const set = { parallel: {}, training: {} };
  for (const k of ['tp', 'cp', 'pp', 'vpp', 'zero', 'gpus', 'sp']) if (l[k] != null) set.parallel[k] = l[k];
  // expert parallelism: only where the search varied it (ep > 1, or experts not split by tp)
  if (l.ep != null && (l.ep > 1 || l.etp !== l.tp)) {
    set.parallel.ep = l.ep;
    set.parallel.etp = l.etp === l.tp ? 0 : l.etp;
  }
  // the end stages' layers of an uneven pipeline (the search reports them for every pp > 1
  // layout; pp 1 has no end stages); a layout string of the form does not apply to another layout
  for (const k of ['first_stage_layers', 'last_stage_layers']) {
    set.parallel[k] = (l.pp ?? 1) > 1 && l[k] != null ? l[k] : 0;
  }
  set.parallel.pipeline_layout = '';
  for (const k of ['micro_batch', 'recompute']) if (l[k] != null) set.training[k] = l[k];
  for (const k of ['fp8', 'compile']) if (entry[k] != null) set.training[k] = entry[k];
  const { state: next } = applySet(state, set);
  selectTab('pretrain');
  setState({ ...next, tab: 'pretrain' });
  writeForm(state);
  update();
}

/** Fills the search's controls from the library: its default limit on the probability of OOM
 *  and the stack variants it may try. */
export function fillSearchChoices(enums) {
  // the search's default limit on the probability of OOM: the library's
  $('search-max-oom').placeholder = `default ${memest.searchMaxOomProbability()}`;
  // the stack variants the search may try: fp8 off / on (a boolean) and the library's
  // torch.compile names (its compile enum, as the compile select's)
  const variantBox = (id, name) => el('label', { className: 'check' },
    el('input', { type: 'checkbox', value: name, id: `${id}-${name}`, name: id }), ` ${name}`);
  $('search-fp8').replaceChildren(...SEARCH_FP8.map((name) => variantBox('search-fp8', name)));
  $('search-compile').replaceChildren(...enums.compile.map((name) => variantBox('search-compile', name)));
}

/** The search controls' events: how many to show, the OOM limit, the variants, Search. */
export function initSearchControls() {
  $('search-top').addEventListener('input', () => { state.top = $('search-top').value; scheduleUpdate(); });
  $('search-max-oom').addEventListener('input', () => { state.moop = $('search-max-oom').value; scheduleUpdate(); });
  for (const [key, id] of Object.entries(SEARCH_VARIANTS)) {
    $(id).addEventListener('change', () => {
      state[key] = variantBoxes(id).filter((b) => b.checked).map((b) => b.value).join(',');
      scheduleUpdate();
    });
  }
  $('search-run').addEventListener('click', () => {
    state.top = $('search-top').value;
    state.moop = $('search-max-oom').value;
    update();
  });
}
