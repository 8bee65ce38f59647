// A table whose column headers sort it (a click, or Enter / Space on the header's button), with
// aria-sort on each header; the fine-tuning tab's methods and the search tab's layouts use it.
import { el, th } from './dom.js';

/**
 * Renders rows into a table whose headers sort it (click or Enter/Space on the header button).
 * @param {HTMLTableElement} table
 * @param {Array<{key: string, label: string, num?: boolean, fmt?: (v: any, row: any) => string}>} cols
 * @param {any[]} rows
 * @param {(row: any) => string} [rowClass]
 * @param {(row: any) => HTMLElement} [action]
 */
export function sortableTable(table, cols, rows, rowClass, action) {
  const sort = table._sort ?? { key: null, dir: 1 };
  table._sort = sort;
  const sorted = [...rows];
  if (sort.key) {
    const col = cols.find((c) => c.key === sort.key);
    sorted.sort((a, b) => {
      const x = a[sort.key];
      const y = b[sort.key];
      const cmp = col?.num ? (Number(x) || 0) - (Number(y) || 0) : String(x).localeCompare(String(y));
      return cmp * sort.dir;
    });
  }
  const hr = document.createElement('tr');
  for (const c of cols) {
    const h = el('th', { scope: 'col' });
    h.setAttribute('aria-sort', sort.key === c.key ? (sort.dir > 0 ? 'ascending' : 'descending') : 'none');
    const b = el('button', { type: 'button', className: 'sort' },
      c.label + (sort.key === c.key ? (sort.dir > 0 ? ' ▲' : ' ▼') : ''));
    b.addEventListener('click', () => {
      if (sort.key === c.key) sort.dir = -sort.dir;
      else { sort.key = c.key; sort.dir = c.num ? -1 : 1; }
      sortableTable(table, cols, rows, rowClass, action);
      table.querySelector(`th:nth-child(${cols.indexOf(c) + 1}) button`)?.focus();
    });
    h.append(b);
    hr.append(h);
  }
  if (action) hr.append(th('', 'col'));
  const body = document.createElement('tbody');
  for (const row of sorted) {
    const tr = document.createElement('tr');
    if (rowClass) tr.className = rowClass(row);
    for (const c of cols) {
      const td = el('td', {}, c.fmt ? c.fmt(row[c.key], row) : String(row[c.key] ?? ''));
      if (c.num) td.className = 'num';
      if (c.verdict) td.dataset.verdict = row[c.verdict];
      tr.append(td);
    }
    if (action) tr.append(el('td', {}, action(row)));
    body.append(tr);
  }
  table.replaceChildren(el('thead', {}, hr), body);
}
