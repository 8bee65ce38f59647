// The page's one state (state.js's flat object, mirrored in the URL) and the update loop's entry
// points: the modules read `state`, replace it with setState, and ask for a recompute with
// update() (now) or scheduleUpdate() (next frame). main.js says what an update does (onUpdate),
// so the tab modules need not import one another.
import { stateFromHash } from './state.js';

export let state = stateFromHash(location.hash);

/** Replaces the page's state (a property may also be set in place: state.tab = ...). */
export function setState(next) {
  state = next;
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
