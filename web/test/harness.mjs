// What the page's E2E suites share (e2e.test.mjs, stack, lora, buckets): the
// memest CLI to compare against, and one page of the built calculator (web/dist) in Debian's
// headless Chromium with the helpers that wait for its answers. `page`, `browser` and
// `server` are live bindings, set once usePage()'s `before` hook has run.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { serve } from './server.mjs';
import { launch } from './browser.mjs';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
export const CLI = process.env.MEMEST_CLI ?? here('../../build-web-cli/bindings/cli/memest');
export const RESULTS = here('../test-results/');
export const GiB = 1024 ** 3;
export const g2 = (bytes) => (bytes / GiB).toFixed(2);
mkdirSync(RESULTS, { recursive: true });

/** The CLI's JSON answer to its own options (`memest pretrain ... --format json`). */
export function cliPretrain(args) {
  return JSON.parse(execFileSync(CLI, ['pretrain', ...args, '--format', 'json'],
    { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }));
}

/** The CLI's answer to a JSON request (`memest request`). */
export function cli(request) {
  try {
    return JSON.parse(execFileSync(CLI, ['request'], { input: JSON.stringify(request), encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'] }));
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw e;
  }
}

export let server;
export let browser;
export let page;
export const pageErrors = [];

/** Registers the suite's hooks: the built page served and open in Chromium, closed after. */
export function usePage() {
  before(async () => {
    assert.ok(existsSync(CLI), `the memest CLI is built at ${CLI}`);
    assert.ok(existsSync(here('../dist/index.html')), 'web/dist is built (npx vite build)');
    server = await serve(here('../dist/'));
    browser = await launch();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="1"]');
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
}

export const probe = () => page.evaluate(() => ({ ...window.__memest, timings: undefined }));

export async function settle(before) {
  await page.waitForFunction((n) => window.__memest.updates > n.updates, before);
  await page.waitForFunction(() => document.querySelector('#status').dataset.state !== 'pending');
}

/** Fails unless the page shows a result: no error anywhere, nothing on the console. */
export async function expectResult(what = '') {
  const s = await page.evaluate(() => ({
    state: document.querySelector('#status').dataset.state,
    text: document.querySelector('#status').textContent,
    invalid: document.body.classList.contains('invalid'),
    errors: [...document.querySelectorAll('.field-error')].map((e) => e.textContent).filter(Boolean),
  }));
  assert.equal(s.state, 'result', `${what}: the page shows no result: ${s.text}`);
  assert.equal(s.invalid, false, `${what}: the form is marked invalid`);
  assert.deepEqual(s.errors, [], `${what}: error messages on the page`);
  assert.deepEqual(pageErrors, [], `${what}: console errors`);
}

/** A URL hash for a state of the page's keys (`#m=...&tp=...`). */
export const hashOf = (s) => `#${new URLSearchParams(s)}`;

/** One form change (a callback), then its answer. */
export async function change(act) {
  const before = await probe();
  await act();
  await settle(before);
}

/** Loads a state by URL (as a shared link does) and waits for its answer. */
export async function show(hash) {
  const before = await probe();
  await page.evaluate((h) => {
    if ((location.hash || '#') === h) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = h;
  }, hash);
  await settle(before);
}
