// What the browser tests share: the package as a user installs it, the servers (the repository by
// range requests, a server that ignores Range, one without CORS, one the tests steer), headless Chromium
// with WebGPU (core: SwiftShader; compatibility mode: lavapipe through ANGLE), the test registry, and the
// native engine's replies that the browser's are compared with. run.mjs imports it first.

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { serve } from '../../scripts/serve-web.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const MODEL = 'models/SmolLM2-135M-Instruct.Q4_1.gguf';
export const TINY = 'tests/data/random-llama-chat.gguf';
export const GEMMA = 'models/gemma-3-270m-q4_k_m.gguf';
export const QWEN35 = 'tests/data/random-qwen35-q8_0.gguf';
export const GEMMA4 = 'tests/data/random-gemma4-q8_0.gguf';
export const WORK = join(ROOT, 'target/browser-test');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Load options for the bulk of the tests: a compatibility-mode adapter, 3-4x faster here than core's.
export const COMPAT = { featureLevel: 'compatibility' };

for (const [path, hint] of [
  ['pkg/wick_web_bg.wasm', 'run `npm run build`'],
  [MODEL, 'run scripts/fetch-model.sh'],
  [GEMMA, 'run scripts/fetch-model.sh gemma3'],
  [CHROMIUM, "install Debian's chromium"],
]) {
  if (!existsSync(join(ROOT, path)) && !existsSync(path)) {
    console.error(`missing ${path}: ${hint}`);
    process.exit(1);
  }
}

// Files the error cases serve: a truncated model and a file that is no GGUF.
rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
export const modelBytes = readFileSync(join(ROOT, MODEL));
writeFileSync(join(WORK, 'truncated.gguf'), modelBytes.subarray(0, 40 << 20));
writeFileSync(join(WORK, 'not-a-model.gguf'), 'this is a text file, not a GGUF model\n'.repeat(100));
cpSync(join(ROOT, TINY), join(WORK, 'tiny.gguf'));

// The package as a user installs it: `npm pack`, unpacked under node_modules/, and a page that imports it.
export const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', WORK], { cwd: ROOT })
  .toString()
  .trim()
  .split('\n')
  .pop();
export const installed = join(WORK, 'app/node_modules/wick-llm');
mkdirSync(installed, { recursive: true });
execFileSync('tar', ['-xzf', join(WORK, packed), '-C', installed, '--strip-components=1']);
cpSync(join(ROOT, 'tests/browser/package-page.html'), join(WORK, 'app/index.html'));

export const server = await serve({ root: ROOT, port: 0 });
export const base = `http://127.0.0.1:${server.address().port}`;

// A server that ignores Range (as Python's http.server does), and one on another origin without CORS.
export const plainServer = (cors) =>
  new Promise((done) => {
    const s = createServer((req, res) => {
      const headers = { 'Content-Type': 'application/octet-stream', 'Cross-Origin-Resource-Policy': 'cross-origin' };
      if (cors) headers['Access-Control-Allow-Origin'] = '*';
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { ...headers, 'Access-Control-Allow-Headers': 'Range' });
        return res.end();
      }
      res.writeHead(200, headers);
      res.end(modelBytes);
    });
    s.listen(0, '127.0.0.1', () => done(s));
  });
/**
 * A range server over in-memory files that the tests steer: `files[path] = { bytes, etag }`; requests
 * for bytes at or past `failFrom` fail (the connection drops) while it is set; `delayMs` slows each
 * answer. `log` records every request as { path, start, end }.
 */
export function rangeServer() {
  const state = { files: {}, failFrom: null, delayMs: 0, log: [] };
  const s = createServer(async (req, res) => {
    const headers = {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': 'Range',
      'Access-Control-Expose-Headers': 'Content-Range, ETag',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, headers);
      return res.end();
    }
    const file = state.files[req.url];
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range || '');
    if (!file || !m) {
      res.writeHead(file ? 400 : 404, headers);
      return res.end();
    }
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), file.bytes.length - 1);
    state.log.push({ path: req.url, start, end });
    if (state.delayMs) await new Promise((done) => setTimeout(done, state.delayMs));
    if (state.failFrom !== null && end >= state.failFrom) return req.socket.destroy();
    res.writeHead(206, {
      ...headers,
      'Content-Range': `bytes ${start}-${end}/${file.bytes.length}`,
      'Content-Length': String(end - start + 1),
      ETag: file.etag,
    });
    res.end(file.bytes.subarray(start, end + 1));
  });
  return new Promise((done) => s.listen(0, '127.0.0.1', () => done({ server: s, state, url: `http://127.0.0.1:${s.address().port}` })));
}
export const steered = await rangeServer();

export const noRange = await plainServer(true);
export const noCors = await plainServer(false);
export const noRangeUrl = `http://127.0.0.1:${noRange.address().port}/model.gguf`;
export const noCorsUrl = `http://127.0.0.1:${noCors.address().port}/model.gguf`;

export const profile = mkdtempSync(join(tmpdir(), 'wick-chromium-'));
export const context = await chromium.launchPersistentContext(profile, {
  headless: true,
  executablePath: CHROMIUM,
  args: [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
    '--enable-unsafe-webgpu',
    '--enable-webgpu-developer-features', // fills adapter.info
    // Core WebGPU stays on SwiftShader; compatibility mode gets Dawn's OpenGL ES backend on ANGLE over
    // Vulkan, which here is lavapipe, the adapter the native tests run on.
    '--use-angle=vulkan',
    '--use-webgpu-adapter=opengles',
  ],
});
context.setDefaultTimeout(600_000);

/** Every response for a model file: { url, status, range, length }. */
export const responses = [];
context.on('response', async (r) => {
  if (!r.url().endsWith('.gguf')) return;
  const headers = await r.allHeaders().catch(() => ({}));
  responses.push({
    url: r.url(),
    status: r.status(),
    range: headers['content-range'] || null,
    length: Number(headers['content-length'] || -1),
  });
});

/**
 * The same server at another origin: a page there has a localStorage of its own, which no engine
 * of another test's page writes (the chat page's tunes between its tests and keeps its winners).
 */
export const apart = base.replace('127.0.0.1', 'localhost');

export async function openPage(path, origin = base) {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log(`    page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && console.log(`    console: ${m.text()}`));
  await page.goto(origin + path);
  return page;
}

export const tests = [];
export const test = (name, fn) => tests.push({ name, fn });

/** The adapters the running test loaded models on, said after its name. */
export const adaptersUsed = new Set();
export const ranOn = (stats) => adaptersUsed.add(`${/llvmpipe|SwiftShader/.exec(stats.adapter)?.[0] ?? stats.adapter} (${stats.featureLevel})`);
/** The chat page's engine's figures (its adapter among them). */
export const pageStats = (page) => page.evaluate(() => window.wickEngine.stats());
/** The shapes one adapter's kept tuning names: its matvecs', prompt recurrences' and attentions'. */
export const keptShapes = (tuning) =>
  ['matvec', 'recurrence', 'attention'].reduce((n, kind) => n + Object.keys(tuning[kind] ?? {}).length, 0);

// ---- Native reference --------------------------------------------------------------------------------

/** A chat reply's message as one text: its reasoning (where its model's template marks it), then its answer. */
function said(message) {
  return [message.reasoning_content, message.content].filter(Boolean).join('\n\n');
}

/** The native engine's greedy reply to one user message, through `wick serve`'s chat API, as `said` writes it;
 * `flags`, more of `wick serve`'s. */
export async function nativeReply(content, maxTokens, model = MODEL, flags = []) {
  const wick = join(ROOT, 'target/release/wick');
  if (!existsSync(wick)) throw new Error('target/release/wick is missing: cargo build --release -p wick-cli');
  const args = ['serve', '-m', join(ROOT, model), '--port', '0', '-c', '512', ...flags];
  const child = spawn(wick, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, WICK_TUNING: 'off' } });
  try {
    const url = await new Promise((done, fail) => {
      let out = '';
      const look = (d) => {
        out += d;
        const m = /http:\/\/[\d.]+:\d+/.exec(out);
        if (m) done(m[0]);
      };
      child.stdout.on('data', look);
      child.stderr.on('data', look);
      child.on('exit', (code) => fail(new Error(`wick serve exited (${code}): ${out}`)));
    });
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens }),
    });
    const body = await response.json();
    return said(body.choices[0].message);
  } finally {
    child.kill();
  }
}
