// What the tests and the benchmark read of the page (window.__memest): the timings of the first
// answer, of each keystroke to its answer on screen and of the tabs' runs, and counts of
// completed renders (and of the Hub's answers to a model id, hf-config.js). Measures only:
// nothing here changes what the page shows.

export const timings = {
  firstResultMs: null, firstPaintMs: null, pretrainMs: null, gridMs: null, gridLibMs: null, gridCells: 0,
  inputAt: null, keystrokeMs: [], finetuneMs: null, searchMs: null,
};
/** For tests and the benchmark: timings, and counts of completed renders. */
export const probe = { timings, updates: 0, gridRenders: 0, finetuneRuns: 0, searchRuns: 0, importRuns: 0, hubAnswers: 0, gridPending: false, finetunePending: false };
window.__memest = probe;

/** An input's time to its answer on screen: from the input event to the end of the update
 *  (the chart included, drawn on the frame after). */
export function finishKeystroke() {
  if (timings.inputAt == null) return;
  timings.keystrokeMs.push(performance.now() - timings.inputAt);
  timings.inputAt = null;
}
