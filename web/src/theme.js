// The colour theme: auto (the system's), light or dark, kept in localStorage and cycled by the
// Theme button; the stage chart is redrawn in the theme's colours.
import { scheduleChart } from './stage-chart.js';
import { lastPretrain } from './results.js';
import { $ } from './dom.js';

const THEMES = ['auto', 'light', 'dark'];

function applyTheme(theme) {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  $('theme').textContent = `Theme: ${theme}`;
  $('theme').setAttribute('aria-label', `Colour theme: ${theme} (change)`);
  try { localStorage.setItem('memest-theme', theme); } catch { /* private mode */ }
  if (lastPretrain) scheduleChart(lastPretrain);
}

/** Applies the stored theme (auto when none is stored, or storage is refused). */
export function applyStoredTheme() {
  let theme = 'auto';
  try { theme = localStorage.getItem('memest-theme') || 'auto'; } catch { /* ignore */ }
  applyTheme(THEMES.includes(theme) ? theme : 'auto');
}

/** The Theme button, and the chart redrawn when the system's colour scheme changes. */
export function initThemeControls() {
  $('theme').disabled = false;
  $('theme').addEventListener('click', () => {
    const cur = document.documentElement.dataset.theme ?? 'auto';
    applyTheme(THEMES[(THEMES.indexOf(cur) + 1) % THEMES.length]);
  });
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => lastPretrain && scheduleChart(lastPretrain));
}
