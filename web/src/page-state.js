// The page's one state (state.js's flat object, mirrored in the URL) and the update loop's entry
// points: the modules read `state`, replace it with setState, and ask for a recompute with
// update() (now) or scheduleUpdate() (next frame). main.js says what an update does (onUpdate),
// so the tab modules need not import one another.
import { stateFromHash, LAYOUT_KEYS, layoutKeysOfHash, fitDefaultLayout } from './state.js';

export let state = stateFromHash(location.hash);

/** The layout sizes (tp, cp, pp) the user has set: in the link, typed, or loaded from a
 *  suggestion, a search result or a layouts-table cell. The others follow the GPU count
 *  (fitLayout). */
const layoutSet = new Set(layoutKeysOfHash(location.hash));

/** Replaces the page's state (a property may also be set in place: state.tab = ...). A layout
 *  size that changes is from now on the user's. */
export function setState(next) {
  for (const k of LAYOUT_KEYS) if (next[k] !== state[k]) layoutSet.add(k);
  state = next;
}

/** Replaces the state with a link's (its hash): the layout sizes the hash sets are the user's. */
export function setStateFromHash(next, hash) {
  layoutSet.clear();
  for (const k of layoutKeysOfHash(hash)) layoutSet.add(k);
  state = next;
}

/** Marks a layout size as the user's (typed into its field, even to the value it held). */
export function markLayoutSet(key) {
  if (LAYOUT_KEYS.includes(key)) layoutSet.add(key);
}

/** Gives the layout sizes the user has not set the values the GPU count can run (state.js
 *  fitDefaultLayout); returns the keys it changed. */
export function fitLayout() {
  const next = fitDefaultLayout(state, layoutSet);
  if (next === state) return [];
  const changed = LAYOUT_KEYS.filter((k) => next[k] !== state[k]);
  state = next;
  return changed;
}

let recompute = () => {};

/** Sets what update() does: main.js's recompute of the active tab. */
export function onUpdate(fn) {
  recompute = fn;
}

/** Recomputes the active tab from the state, now. */
export function update() {
  recompute();
}

let pending = 0;
/** Recomputes on the next frame: the inputs of one frame make one update. */
export function scheduleUpdate() {
  if (pending) return;
  pending = requestAnimationFrame(() => {
    pending = 0;
    update();
  });
}
