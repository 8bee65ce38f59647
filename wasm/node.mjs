// Node entry: loads memest_core.wasm from the build directory next to this file.
import { readFile } from 'node:fs/promises';
import { createMemest } from './memest.mjs';

export * from './memest.mjs';

/**
 * Loads the module in Node (reads build/memest_core.wasm and passes it as wasmBinary).
 * @returns {Promise<import('./memest.mjs').Memest>}
 */
export async function loadMemest() {
  const wasmBinary = await readFile(new URL('./build/memest_core.wasm', import.meta.url));
  return createMemest({ wasmBinary });
}
