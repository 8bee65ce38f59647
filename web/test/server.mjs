// A tiny static file server for the built page (web/dist), on 127.0.0.1 only. Used by the E2E
// tests and the benchmark (started and stopped in-process), and by scripts/serve-web.sh.
//   node web/test/server.mjs [port]     (default 8080; 0 picks a free port)
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.ico': 'image/x-icon',
};

/**
 * Serves `root` on 127.0.0.1.
 * @param {string} root
 * @param {number} [port]
 * @returns {Promise<{url: string, close: () => Promise<void>}>}
 */
export async function serve(root, port = 0) {
  const base = normalize(root + sep);
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      let file = normalize(join(base, path));
      if (!file.startsWith(base)) { res.writeHead(403).end(); return; }
      if ((await stat(file).catch(() => null))?.isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: actual } = server.address();
  return {
    url: `http://127.0.0.1:${actual}/`,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = fileURLToPath(new URL('../dist/', import.meta.url));
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
  const { url } = await serve(root, port);
  console.log(`memest calculator: ${url}  (serving ${root}; Ctrl-C to stop)`);
}
