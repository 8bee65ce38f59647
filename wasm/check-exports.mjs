#!/usr/bin/env node
// Checks wasm/exports.txt against libmemest/include/memest/memest.h (the tree-sitter way): every
// MEMEST_API function is either exported or listed as `exclude NAME -- reason`, never both, never
// twice; every exported name is a header function or a memest_wasm_* helper defined in wasm/src;
// and, when the module is built, every exported name is really exported by the .wasm.
// Usage: node wasm/check-exports.mjs   (exit 1 with one line per problem)
import { readFileSync, readdirSync, existsSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const header = readFileSync(new URL('libmemest/include/memest/memest.h', root), 'utf8');
const list = readFileSync(new URL('wasm/exports.txt', root), 'utf8');

// MEMEST_API <return type> name(  — declarations may span lines; skip the macro's own #define.
const api = new Set();
for (const m of header.replace(/\/\*[\s\S]*?\*\//g, ' ').matchAll(/MEMEST_API\b([^;#{]*?)\b(memest_\w+)\s*\(/g)) {
  api.add(m[2]);
}
const exported = new Map();
const excluded = new Map();
const problems = [];
list.split('\n').forEach((raw, i) => {
  const line = raw.trim();
  if (!line || line.startsWith('#')) return;
  const where = `exports.txt:${i + 1}`;
  let m;
  if ((m = /^exclude\s+(memest_\w+)\s+--\s+(\S.*)$/.exec(line))) {
    if (excluded.has(m[1]) || exported.has(m[1])) problems.push(`${where}: ${m[1]} listed twice`);
    excluded.set(m[1], m[2]);
  } else if ((m = /^(memest_\w+)$/.exec(line))) {
    if (excluded.has(m[1]) || exported.has(m[1])) problems.push(`${where}: ${m[1]} listed twice`);
    exported.set(m[1], where);
  } else {
    problems.push(`${where}: expected "memest_name" or "exclude memest_name -- reason": ${line}`);
  }
});

const wasmSources = readdirSync(new URL('wasm/src/', root))
  .filter((f) => f.endsWith('.cpp'))
  .map((f) => readFileSync(new URL(`wasm/src/${f}`, root), 'utf8'))
  .join('\n');

for (const name of api) {
  if (!exported.has(name) && !excluded.has(name)) {
    problems.push(`memest.h: ${name} is neither exported nor excluded in wasm/exports.txt`);
  }
}
for (const [name, where] of exported) {
  if (api.has(name)) continue;
  if (name.startsWith('memest_wasm_') && new RegExp(`\\b${name}\\s*\\(`).test(wasmSources)) continue;
  problems.push(`${where}: ${name} is not a MEMEST_API function of memest.h nor a helper of wasm/src`);
}
// An exclusion may name a function ahead of the header (work in progress): a warning only.
for (const name of excluded.keys()) {
  if (!api.has(name)) console.warn(`check-exports: warning: excluded ${name} is not in memest.h (yet?)`);
}

// The built module really exports them (names survive minification as Module["_name"]).
const built = new URL('wasm/build/memest_core.mjs', root);
if (existsSync(built)) {
  const glue = readFileSync(built, 'utf8');
  for (const name of exported.keys()) {
    if (!glue.includes(`Module["_${name}"]`)) problems.push(`memest_core.mjs: _${name} is not exported`);
  }
}

if (api.size === 0) problems.push('memest.h: no MEMEST_API functions found (parser out of date?)');
if (problems.length) {
  for (const p of problems) console.error(`check-exports: ${p}`);
  process.exit(1);
}
console.log(`check-exports: ${api.size} MEMEST_API functions: ${[...exported.keys()].filter((n) => api.has(n)).length} exported, ` +
            `${excluded.size} excluded with a reason; ${[...exported.keys()].filter((n) => !api.has(n)).length} WASM helpers`);
