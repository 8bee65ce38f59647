// Numbers and verdicts as the page writes them: GiB, percentages, probabilities, parameter
// counts, the verdict's words and its band's bound. Formatting only: the values and the bands
// themselves are the library's.
import { GiB } from '@memest';

export const gib = (bytes) => (bytes / GiB).toFixed(2);
export const fmtGiB = (bytes) => `${gib(bytes)} GiB`;
export const percent = (fraction) => `${Math.round(fraction * 1000) / 10} %`;
/** A parameter count: billions to two decimals ("8.03 B"); under 0.1 B (a small test model,
 *  which would read "0.00 B") the exact count ("88,472"). */
export const paramsText = (n) => (n >= 1e8 ? `${(n / 1e9).toFixed(2)} B` : Math.round(n).toLocaleString('en-US'));
/** A probability as a percentage (one decimal, as percent()); the ends say so rather than
 *  round to 0 % or 100 % when the library's value is not exactly that. */
export const probability = (p) => {
  if (p > 0 && p < 0.001) return '< 0.1 %';
  if (p < 1 && p > 0.999) return '> 99.9 %';
  return percent(p);
};
/** The margin left under capacity, or how far over it the peak is. */
export const marginText = (bytes) => (bytes >= 0 ? `margin ${fmtGiB(bytes)}` : `over by ${fmtGiB(-bytes)}`);

/** A verdict in words, as the CLI says them ("verdict: out of memory"). */
const WORDS = { oom: 'out of memory' };
export const words = (verdict) => WORDS[verdict] ?? verdict;

/** The upper bound of a verdict's band in words: "≤ 95 %", or "> 100 %" for the open one. */
export function bandText(bands, verdict) {
  if (bands[verdict] != null) return `≤ ${percent(bands[verdict])}`;
  const top = Math.max(...Object.values(bands));
  return verdict === 'oom' && Number.isFinite(top) ? `> ${percent(top)}` : '';
}
