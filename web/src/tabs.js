// The four tabs (pretraining, fine-tuning, search, import) as a WAI-ARIA tab list: which panel
// shows, the one Tab stop, arrow keys / Home / End; a tab change sets state.tab and updates.
import { state, update } from './page-state.js';
import { $ } from './dom.js';

const TABS = ['pretrain', 'finetune', 'search', 'import'];

export function selectTab(name, focus = false) {
  for (const t of TABS) {
    const tab = $(`tab-${t}`);
    const on = t === name;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`panel-${t}`).hidden = !on;
    if (on && focus) tab.focus();
  }
  state.tab = name;
}

/** The tabs' events: a click, and the arrow keys per the WAI-ARIA tabs pattern. */
export function initTabs() {
  for (const t of TABS) {
    $(`tab-${t}`).addEventListener('click', () => { selectTab(t); update(); });
    $(`tab-${t}`).addEventListener('keydown', (e) => {
      const i = TABS.indexOf(t);
      let j = null;
      if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
      if (e.key === 'ArrowLeft') j = (i + TABS.length - 1) % TABS.length;
      if (e.key === 'Home') j = 0;
      if (e.key === 'End') j = TABS.length - 1;
      if (j != null) { e.preventDefault(); selectTab(TABS[j], true); update(); }
    });
  }
}
