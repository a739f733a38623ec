// What the Chromium tests share: the browser's path and flags, and a loopback HTTP server that
// serves one page at `/` and the files of chosen repository folders.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from '../test/helpers.js';

/** Debian's Chromium, or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags for a headless run that reaches nothing but the loopback server. */
export const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

const TYPES = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.html': 'text/html' };

/**
 * Serves `page` at `/` and the files below `folders` (relative to the repository root) on
 * 127.0.0.1; anything else is a 404. Resolves to `{ server, origin }`.
 */
export async function startServer(page, folders) {
  const allowed = folders.map((dir) => path.join(repoRoot, dir));
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(page);
      return;
    }
    const file = path.join(repoRoot, path.normalize(decodeURIComponent(url.pathname)));
    if (!allowed.some((dir) => file.startsWith(dir + path.sep))) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}
