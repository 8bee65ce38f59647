// A model by its Hugging Face id: the page fetches the repository's config.json from the Hub
// (https://huggingface.co/<owner>/<name>/resolve/<revision>/config.json) and puts its text where
// a pasted config.json goes (state.cfg, model "custom"), so the library reads it as it reads a
// paste; nothing of the config is interpreted here beyond "is it a JSON object". The id is the
// state's `hf` (kept in the URL instead of the config's text: a shared link fetches it again).
//
// While the config is on its way, or when it could not be had (a bad id, a gated repository, no
// such file, no network, not JSON), the form has a problem named `model` (hfProblems), so the
// page shows that message and no answer, as for any other field. No token is sent or stored:
// a gated model's config.json is pasted by the user.
import { parseConfig } from './state.js';
import { state, setState, update } from './page-state.js';
import { writeForm } from './form.js';
import { probe } from './probe.js';
import { $ } from './dom.js';

export const HUB = 'https://huggingface.co';
/** How long a fetch may take before the page gives up on it (no hang on a stalled network). */
const TIMEOUT_MS = 20000;
/** More than any config.json: a larger body is something else (and is not kept in the form). */
const MAX_BYTES = 4 * 1024 * 1024;

const EXAMPLE = 'owner/name (meta-llama/Llama-3.1-8B), optionally @revision, or its huggingface.co URL';

/** One part of a repository id: letters, digits, '-', '_', '.'; not starting or ending with
 *  '-' or '.', no '--' or '..' (the Hub's naming rules), at most 96 characters. */
function badPart(part, what) {
  if (part === '') return `the ${what} is empty`;
  if (part.length > 96) return `the ${what} is longer than 96 characters`;
  if (!/^[A-Za-z0-9._-]+$/.test(part)) return `the ${what} "${part}" has a character other than letters, digits, '-', '_' and '.'`;
  if (/^[-.]|[-.]$/.test(part)) return `the ${what} "${part}" starts or ends with '-' or '.'`;
  if (part.includes('--') || part.includes('..')) return `the ${what} "${part}" contains '--' or '..'`;
  return null;
}

/**
 * Reads what the user typed as a model repository and a revision: `owner/name`, a bare `name`
 * (the Hub's older top-level models, gpt2), either with `@revision`, or a huggingface.co /
 * hf.co URL of the repository (…/tree/<rev>, …/blob/<rev>/config.json, …/resolve/<rev>/…).
 * @param {string} text
 * @returns {{repo: string, revision: string}}
 * @throws {Error} a message naming the field and what is wrong, before anything is fetched
 */
export function parseHfId(text) {
  const raw = String(text ?? '').trim();
  const refuse = (why) => new Error(`model: Hugging Face id "${raw}": ${why}; type ${EXAMPLE}`);
  if (raw === '') throw refuse('empty');
  if (/\s/.test(raw)) throw refuse('it contains spaces');
  let path = raw;
  let revision = '';
  const url = /^(?:https?:\/\/)?(?:www\.)?(huggingface\.co|hf\.co)(\/.*)?$/i.exec(raw);
  if (url) {
    let segments;
    try {
      segments = (url[2] ?? '').split(/[?#]/)[0].split('/').filter((s) => s !== '').map(decodeURIComponent);
    } catch {
      throw refuse('the URL is not well encoded');
    }
    if (['datasets', 'spaces'].includes(segments[0])) throw refuse(`a ${segments[0].slice(0, -1)} is not a model`);
    const at = segments.findIndex((s) => ['tree', 'blob', 'resolve'].includes(s));
    if (at >= 0) {
      if (at + 1 >= segments.length) throw refuse(`no revision after /${segments[at]}/`);
      revision = segments[at + 1];
      segments = segments.slice(0, at);
    }
    if (segments.length < 1 || segments.length > 2) throw refuse('the URL does not name a model repository');
    path = segments.join('/');
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    throw refuse('a URL of a site other than huggingface.co');
  } else {
    const at = raw.indexOf('@');
    if (at >= 0) {
      path = raw.slice(0, at);
      revision = raw.slice(at + 1);
      if (revision === '') throw refuse('nothing after @ (a branch, tag or commit)');
    }
  }
  const parts = path.split('/');
  if (parts.length > 2) throw refuse('more than one "/" (owner/name)');
  const [why] = (parts.length === 2
    ? [badPart(parts[0], 'owner'), badPart(parts[1], 'name')]
    : [badPart(parts[0], 'name')]).filter(Boolean);
  if (why) throw refuse(why);
  if (revision !== '' && (!/^[A-Za-z0-9._/-]+$/.test(revision) || revision.includes('..'))) {
    throw refuse(`the revision "${revision}" is not a branch, tag or commit name`);
  }
  return { repo: path, revision: revision || 'main' };
}

/** The URL of a repository's config.json at a revision (a revision with '/' encoded, refs/pr/1). */
export function configUrl({ repo, revision }) {
  return `${HUB}/${repo}/resolve/${encodeURIComponent(revision)}/config.json`;
}

/** The Hub's answer for the state's `hf`: the id it concerns, where it is (idle, loading,
 *  loaded, error), the config's text once loaded, the error once failed. `ticket` tells a
 *  fetch that was overtaken (another id, the config pasted meanwhile) to drop its answer. */
let hub = { id: '', phase: 'idle', text: '', error: null, url: '' };
let ticket = 0;

const problem = (code, message) => ({ code, field: 'model', message });

/** Fetches one config.json: its text, or throws a problem ({code, field, message}). */
async function fetchConfig(url, where) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
  let res;
  let text;
  try {
    // no cookie, no token, no header beyond the browser's (a plain CORS request)
    res = await fetch(url, { credentials: 'omit', signal: abort.signal });
    text = res.ok ? await res.text() : '';
  } catch (e) {
    const why = abort.signal.aborted ? `no answer within ${TIMEOUT_MS / 1000} s` : (e?.message ?? String(e));
    throw problem('fetch_failed', `model: could not fetch ${url} (${why}): offline, blocked by the network or by the browser (CORS); download the config.json and paste it instead`);
  } finally {
    clearTimeout(timer);
  }
  if (res.status === 401 || res.status === 403) {
    if (res.headers.get('x-error-code') === 'RepoNotFound') {
      throw problem('not_found', `model: the Hugging Face Hub has no model ${where} (HTTP ${res.status}): check the id, or paste its config.json if it is private`);
    }
    throw problem('gated', `model: the Hugging Face Hub refuses ${where}'s config.json to a visitor who is not logged in (HTTP ${res.status}): the model is gated or private. If gated: paste its config.json, or log in on the Hub and download it (the page sends and stores no token)`);
  }
  if (res.status === 404) {
    throw problem('not_found', `model: the Hugging Face Hub has no config.json for ${where} (HTTP 404): check the id and the revision (a repository of GGUF files or of an adapter has no config.json)`);
  }
  if (!res.ok) {
    throw problem('fetch_failed', `model: the Hugging Face Hub answered HTTP ${res.status} for ${url}: try again later, or paste the config.json`);
  }
  if (text.length > MAX_BYTES) {
    throw problem('parse_error', `model: ${url} is ${text.length} bytes, too large for a config.json: paste the config.json instead`);
  }
  let value;
  try {
    value = parseConfig(text);
  } catch (e) {
    throw problem('parse_error', `model: ${url} is not JSON (${e.message}); the Hub sent something other than a config.json (a login page?): paste the config.json instead`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw problem('wrong_type', `model: ${url} is JSON but not a config.json object ({...})`);
  }
  return text;
}

/** Says where the Hub's answer is, under the id field (the message itself goes with the form's
 *  problems, next to the model and in the status line). */
function renderHub() {
  const line = $('hf-status');
  const field = $('hf-id-field');
  if (!line || !field) return;
  const phase = state.hf ? hub.phase : 'idle';
  field.dataset.state = phase;
  line.textContent = phase === 'loading' ? `Fetching ${hub.url} …`
    : phase === 'loaded' ? `Loaded ${hub.url}` : '';
  $('hf-id').toggleAttribute('aria-busy', phase === 'loading');
}

/** Starts fetching the config.json of the state's `hf`: at once a loading (or a bad id's)
 *  answer, then the config in the form (or the failure) and an update. */
function startFetch(id) {
  const mine = ++ticket;
  let target;
  try {
    target = parseHfId(id);
  } catch (e) {
    hub = { id, phase: 'error', text: '', error: problem('invalid_value', e.message), url: '' };
    probe.hubAnswers += 1;
    return;
  }
  const url = configUrl(target);
  const where = target.revision === 'main' ? target.repo : `${target.repo} at revision ${target.revision}`;
  hub = { id, phase: 'loading', text: '', error: null, url };
  fetchConfig(url, where).then((text) => {
    if (mine !== ticket) return;
    hub = { id, phase: 'loaded', text, error: null, url };
    setState({ ...state, m: 'custom', cfg: text });
    writeForm(state);
  }, (error) => {
    if (mine !== ticket) return;
    hub = { id, phase: 'error', text: '', error, url };
  }).then(() => {
    if (mine !== ticket) return;
    update();
    probe.hubAnswers += 1;
  });
}

/**
 * Keeps the state's `hf` and the Hub's answer together, at the start of every update:
 *  - an id the page has not asked yet (a link, Load) is fetched (model "custom" meanwhile);
 *  - a loaded config comes back into an empty config field (a link of the same id);
 *  - the model is no longer the Hub's (a preset chosen, a config pasted or dropped, the text
 *    edited): `hf` is dropped (the URL then carries the config itself), a fetch still under
 *    way is abandoned.
 */
export function reconcileHf() {
  const s = state;
  if (!s.hf) {
    if (hub.phase !== 'idle') { ticket += 1; hub = { id: '', phase: 'idle', text: '', error: null, url: '' }; }
  } else if (hub.id !== s.hf) {
    setState({ ...s, m: 'custom', cfg: '' });
    $('hf-id').value = s.hf;
    startFetch(s.hf);
  } else if (s.m !== 'custom' || (s.cfg !== '' && s.cfg !== hub.text)) {
    ticket += 1;
    hub = { id: '', phase: 'idle', text: '', error: null, url: '' };
    setState({ ...s, hf: '' });
  } else if (hub.phase === 'loaded' && s.cfg === '') {
    setState({ ...s, cfg: hub.text });
  }
  if (state.cfg !== $('model-config').value) $('model-config').value = state.cfg;
  renderHub();
}

/** The form's problems (main.js) with the Hub's: while `hf` is loading or failed, its message
 *  stands for the model's (the empty config field would otherwise say "paste a config.json"). */
export function hfProblems(problems) {
  if (!state.hf || hub.id !== state.hf || hub.phase === 'loaded' || hub.phase === 'idle') return problems;
  const own = hub.phase === 'loading'
    ? problem('loading', `model: fetching ${hub.url} from the Hugging Face Hub…`) : hub.error;
  return [own, ...problems.filter((p) => p.field !== 'model')];
}

/** The id field's events: Load (or Enter) fetches what it holds; typing in it changes nothing
 *  else (the form's input handler does not hear it). */
export function initHfConfig() {
  const input = $('hf-id');
  const load = () => {
    hub = { id: '', phase: 'idle', text: '', error: null, url: '' };
    ticket += 1;
    setState({ ...state, m: 'custom', cfg: '', hf: input.value.trim() || ' ' });
    writeForm(state);
    update();
  };
  input.addEventListener('input', (e) => e.stopPropagation());
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); load(); }
  });
  $('hf-load').addEventListener('click', load);
}
