// The stage chart: each pipeline stage's memory as stacked parts (Chart.js, loaded as its own
// chunk by loadChartJs), with the capacity, the headline verdict's fits band and the paper's
// estimate as lines; drawn on the frame after the answer's text (scheduleChart). stageParts and
// stageValue also serve the stages table and the CSV download.
import { GiB } from '@memest';
import { peakBands } from './wasm-bridge.js';
import { finishKeystroke } from './probe.js';
import { $ } from './dom.js';
import { gib, bandText } from './format.js';

/** @type {typeof import('chart.js').Chart | null} */
let Chart = null;

/** Starts loading Chart.js (chart-setup.js, its own chunk): the first answer does not wait for it. */
export function loadChartJs() {
  return import('./chart-setup.js').then((m) => { Chart = m.Chart; });
}

let chart = null;
const PARTS = [
  ['weights_bytes', 'Weights', '--c-weights'],
  ['gradients_bytes', 'Gradients', '--c-grads'],
  ['optimizer_bytes', 'Optimizer', '--c-optim'],
  ['activations_bytes', 'Activations', '--c-acts'],
];
/** Stacked parts of a stage: the four of the 4D paper, then the overhead model's net total
 *  (CUDA context, communication buffers, bf16 logits, corrections, fragmentation), so the top of
 *  the bar is the stage's peak_bytes. */
export function stageParts(stages) {
  const parts = [...PARTS];
  if (stages.some((s) => typeof s.overhead_bytes === 'number')) {
    parts.push(['overhead_bytes', 'Overheads (context, buffers, fragmentation)', '--c-over']);
  }
  return parts;
}

export function stageValue(stage, key) {
  const v = stage[key];
  if (typeof v === 'number') return v;
  if (v && typeof v === 'object') {
    return Object.values(v).reduce((a, x) => a + (typeof x === 'number' ? x : 0), 0);
  }
  return 0;
}

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function renderChart(r) {
  const labels = r.stages.map((s) => `Stage ${s.stage}${s.stage === r.peak_stage ? ' (peak)' : ''}`);
  const parts = stageParts(r.stages);
  const datasets = parts.map(([key, label, colour]) => ({
    label, data: r.stages.map((s) => stageValue(s, key) / GiB), backgroundColor: css(colour),
    stack: 'memory', borderWidth: 0,
  }));
  const capacity = r.capacity_bytes / GiB;
  const annotations = capacity > 0 ? {
    capacity: {
      type: 'line', yMin: capacity, yMax: capacity, borderColor: css('--c-oom'), borderWidth: 2,
      label: { display: true, content: `capacity ${capacity.toFixed(2)} GiB`, position: 'end',
               backgroundColor: css('--c-oom'), color: '#fff', font: { size: 11 } },
    },
    ...(peakBands.fits > 0 ? { band: {
      type: 'line', yMin: capacity * peakBands.fits, yMax: capacity * peakBands.fits,
      borderColor: css('--c-tight'), borderWidth: 1.5, borderDash: [6, 4],
      label: { display: true, content: `fits ${bandText(peakBands, 'fits')} at peak`, position: 'start',
               backgroundColor: css('--c-tight'), color: '#000', font: { size: 11 } },
    } } : {}),
    estimate: {
      type: 'line', yMin: r.estimate_bytes / GiB, yMax: r.estimate_bytes / GiB,
      borderColor: css('--fg-muted'), borderWidth: 1, borderDash: [2, 3],
      label: { display: true, content: `paper's estimate ${gib(r.estimate_bytes)} GiB`, position: 'center',
               backgroundColor: css('--bg-elev'), color: css('--fg'), font: { size: 11 } },
    },
  } : {};
  const maxY = Math.max(capacity * 1.08, (r.peak_bytes / GiB) * 1.08);
  const options = {
    responsive: true, maintainAspectRatio: false, animation: false,
    scales: {
      x: { stacked: true, ticks: { color: css('--fg') }, grid: { color: css('--grid') } },
      y: { stacked: true, beginAtZero: true, suggestedMax: maxY,
           title: { display: true, text: 'GiB per GPU', color: css('--fg') },
           ticks: { color: css('--fg') }, grid: { color: css('--grid') } },
    },
    plugins: {
      legend: { labels: { color: css('--fg') } },
      tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${c.parsed.y.toFixed(2)} GiB` } },
      annotation: { annotations },
    },
  };
  if (!chart) {
    chart = new Chart($('stage-chart'), { type: 'bar', data: { labels, datasets }, options });
  } else {
    chart.data.labels = labels;
    chart.data.datasets = datasets;
    chart.options = options;
    chart.update('none');
  }
  const desc = r.stages.map((s) => `stage ${s.stage} peak ${gib(s.peak_bytes ?? s.total_bytes)} GiB`).join(', ');
  $('stage-chart').setAttribute('aria-label',
    `Per-GPU memory by pipeline stage: ${desc}; capacity ${capacity.toFixed(2)} GiB`);
}

let chartFrame = 0;
let chartFor = null;
/** Draws the chart of `r` on the next frame (after the answer's text is on screen), once
 *  Chart.js has loaded; an input's keystroke time ends there. */
export function scheduleChart(r) {
  chartFor = r;
  if (chartFrame) return;
  chartFrame = requestAnimationFrame(() => {
    chartFrame = 0;
    if (!Chart || !chartFor) { finishKeystroke(); return; }
    renderChart(chartFor);
    finishKeystroke();
  });
}

/** Whether a chart is to be drawn on the next frame (its keystroke time ends there). */
export function chartScheduled() {
  return chartFrame !== 0;
}

export function clearChart() {
  chartFor = null;
  if (chart) {
    chart.destroy();
    chart = null;
  }
  $('stage-chart').setAttribute('aria-label', 'Per-GPU memory by pipeline stage: not computed');
}
