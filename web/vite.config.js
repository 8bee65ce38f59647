// Builds the calculator into web/dist/ as static files with relative URLs (serve from any
// directory, or open offline once loaded). The WebAssembly module comes from ../wasm/build
// (wasm/build.sh), imported through the wrapper ../wasm/memest.mjs.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  base: './',
  resolve: {
    alias: { '@memest': fileURLToPath(new URL('../wasm/memest.mjs', import.meta.url)) },
  },
  server: { host: '127.0.0.1', fs: { allow: ['..'] } },
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 400 },
});
