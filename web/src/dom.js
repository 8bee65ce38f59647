// DOM helpers shared by every part of the page: $ (by id), el (an element with its props and
// children), th, fillSelect, and the status line above the results (setStatus, verdictWords).
import { words } from './format.js';

export const $ = (id) => document.getElementById(id);
export const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
};

export function th(text, scope) {
  return el('th', { scope }, text);
}

export function fillSelect(select, items, customLabel) {
  select.replaceChildren(...items.map((it) => new Option(it.label, it.value)));
  if (customLabel) select.append(new Option(customLabel, 'custom'));
}

/** Sets the status line: state "result" (with the verdict), "error", "pending" or "loading".
 *  The document hears "memest:status" after (the downloads follow whether there is an answer). */
export function setStatus(kind, parts, verdict = '') {
  const s = $('status');
  s.dataset.state = kind;
  s.dataset.verdict = verdict;
  s.replaceChildren(...parts);
  document.dispatchEvent(new CustomEvent('memest:status', { detail: { kind } }));
}

export function verdictWords(verdict) {
  return el('strong', { className: 'verdict-words', dataset: { verdict } }, words(verdict));
}
