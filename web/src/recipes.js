// The fine-tuning recipes (docs/adapters.md "Recipes"): the library's table (its presets mode,
// the same `memest recipes` prints), never a copy here. Choosing one writes its fields into the
// form, where each stays the user's to change; the state keeps the recipe's name (`rcp`, in the
// URL) to say where the form's values came from. The request the page sends then carries the
// fields themselves, as the form holds them.
import { applySet, LAYOUT_KEYS } from './state.js';
import { state, setState, markLayoutSet, update } from './page-state.js';
import { memest } from './wasm-bridge.js';
import { writeForm } from './form.js';
import { $ } from './dom.js';

/** The library's recipes ({name, description, source, fields, field_sources}), read once. */
let recipes = [];

/** A recipe's fields as a suggestion's `set` the state takes (state.js applySet): a list of
 *  target names becomes the form's comma list. */
export function recipeSet(recipe) {
  return Object.fromEntries(Object.entries(recipe.fields)
    .map(([field, value]) => [field, Array.isArray(value) ? value.join(',') : value]));
}

/** The state with a recipe's fields applied and its name kept (`rcp`). */
export function withRecipe(s, recipe) {
  const { state: next } = applySet(s, recipeSet(recipe));
  return { ...next, rcp: recipe.name };
}

/** Fills the recipe picker from the library (before the form is first written: the state's
 *  recipe name needs its option). */
export function fillRecipes() {
  recipes = memest.request({ mode: 'presets' }).recipes ?? [];
  $('recipe').replaceChildren(new Option('none', ''),
    ...recipes.map((r) => new Option(r.name, r.name)));
  $('recipe').value = state.rcp ?? '';
  showNote(state.rcp);
}

/** What the chosen recipe is and where its values come from. */
function showNote(name) {
  const recipe = recipes.find((r) => r.name === name);
  const note = $('recipe-note');
  note.hidden = !recipe;
  if (!recipe) return;
  note.textContent = `${recipe.description}. Source: ${recipe.source}. The form now holds its fields; change any of them.`;
  note.title = Object.entries(recipe.field_sources).map(([f, why]) => `${f}: ${why}`).join('\n');
}

/** Choosing a recipe writes its fields into the form (the tp, cp and pp it sets are the
 *  user's from then on), then answers. */
export function initRecipes() {
  // a link pasted or edited: its recipe's note, once main.js has read the link's state
  window.addEventListener('hashchange', () => setTimeout(() => showNote(state.rcp), 0));
  $('recipe').addEventListener('change', () => {
    const recipe = recipes.find((r) => r.name === $('recipe').value);
    showNote(recipe?.name);
    if (!recipe) return;
    for (const field of Object.keys(recipe.fields)) {
      const key = field.replace(/^parallel\./, '');
      if (field.startsWith('parallel.') && LAYOUT_KEYS.includes(key)) markLayoutSet(key);
    }
    setState(withRecipe(state, recipe));
    writeForm(state);
    update();
  });
}
