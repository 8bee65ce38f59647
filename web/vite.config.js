// Builds the calculator into web/dist/ as static files with relative URLs (serve from any
// directory, or open offline once loaded). The WebAssembly module comes from ../wasm/build
// (wasm/build.sh), imported through the wrapper ../wasm/memest.mjs.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

/** Starts fetching the WebAssembly module with the HTML (a preload the Emscripten loader's
 *  fetch then reuses) instead of once the page's script runs: the first answer comes sooner. */
function preloadWasm() {
  return {
    name: 'memest-preload-wasm',
    apply: 'build',
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        return Object.keys(ctx.bundle ?? {}).filter((f) => f.endsWith('.wasm')).map((f) => ({
          tag: 'link',
          // as=fetch + crossorigin (anonymous: credentials same-origin) match the loader's
          // fetch(url, {credentials: 'same-origin'}), so the preloaded response is the one used
          attrs: { rel: 'preload', href: `./${f}`, as: 'fetch', type: 'application/wasm', crossorigin: '' },
          injectTo: 'head',
        }));
      },
    },
  };
}

export default defineConfig({
  base: './',
  plugins: [preloadWasm()],
  resolve: {
    alias: { '@memest': fileURLToPath(new URL('../wasm/memest.mjs', import.meta.url)) },
  },
  server: { host: '127.0.0.1', fs: { allow: ['..'] } },
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 400 },
});
