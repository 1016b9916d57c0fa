#!/usr/bin/env node
// A static server for the chat page, the package and models/: it answers Range requests with 206, sends
// ETag and Last-Modified (so cached model bytes can be validated) and the COOP/COEP headers that make the
// page cross-origin isolated. Usage: node scripts/serve-web.mjs [--port N] [--host H] [ROOT]

import { createServer } from 'node:http';
import { createReadStream, promises as fs } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.ts': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Starts serving `root`; resolves to the node http.Server once it listens. */
export function serve({ root, host = '127.0.0.1', port = 8080 }) {
  root = resolve(root);
  const server = createServer(async (req, res) => {
    try {
      await answer(root, req, res);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String(e?.message || e));
    }
  });
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => done(server));
  });
}

async function answer(root, req, res) {
  const headers = {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'cross-origin',
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Headers': 'Range',
    'Access-Control-Expose-Headers': 'Content-Range, Content-Length, ETag, Last-Modified, Accept-Ranges',
    'Cache-Control': 'no-cache',
  };
  if (req.method === 'OPTIONS') {
    res.writeHead(204, headers);
    return res.end();
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, headers);
    return res.end();
  }
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/') {
    res.writeHead(302, { ...headers, Location: '/www/' });
    return res.end();
  }
  let file = normalize(join(root, path));
  // Nothing outside the root, and no dotfiles (.git) inside it.
  if (!file.startsWith(root + sep) || path.split('/').some((part) => part.startsWith('.'))) {
    res.writeHead(403, headers);
    return res.end();
  }
  let stat = await fs.stat(file).catch(() => null);
  if (stat?.isDirectory()) {
    file = join(file, 'index.html');
    stat = await fs.stat(file).catch(() => null);
  }
  if (!stat?.isFile()) {
    res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
    return res.end(`${path} was not found`);
  }
  const etag = `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
  Object.assign(headers, {
    'Content-Type': TYPES[extname(file)] || 'application/octet-stream',
    'Accept-Ranges': 'bytes',
    ETag: etag,
    'Last-Modified': stat.mtime.toUTCString(),
  });
  let start = 0;
  let end = stat.size - 1;
  let status = 200;
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
  if (range && (range[1] || range[2])) {
    if (range[1]) {
      start = Number(range[1]);
      if (range[2]) end = Math.min(end, Number(range[2]));
    } else {
      start = Math.max(0, stat.size - Number(range[2]));
    }
    if (start > end || start >= stat.size) {
      res.writeHead(416, { ...headers, 'Content-Range': `bytes */${stat.size}` });
      return res.end();
    }
    status = 206;
    headers['Content-Range'] = `bytes ${start}-${end}/${stat.size}`;
  }
  headers['Content-Length'] = String(end - start + 1);
  res.writeHead(status, headers);
  if (req.method === 'HEAD' || stat.size === 0) return res.end();
  createReadStream(file, { start, end }).pipe(res);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name, fallback) => {
    const i = args.indexOf(name);
    return i < 0 ? fallback : args.splice(i, 2)[1];
  };
  const port = Number(option('--port', process.env.PORT || 8080));
  const host = option('--host', '127.0.0.1');
  const root = args[0] || join(fileURLToPath(new URL('.', import.meta.url)), '..');
  const server = await serve({ root, host, port });
  const { port: bound } = server.address();
  console.log(`Wick chat page: http://${host}:${bound}/www/`);
}
