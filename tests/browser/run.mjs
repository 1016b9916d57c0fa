// Browser tests: the chat page and the npm package in headless Chromium. Most run on WebGPU's
// compatibility mode, which here is lavapipe (the CPU Vulkan device the native tests use) through Dawn's
// OpenGL ES backend on ANGLE; the tests named "core" run on core WebGPU, which here is SwiftShader, a
// slower CPU adapter. Both prove correctness, not speed. Each test says the adapters it ran on.
// Needs `npm run build` (pkg/) and the default model.
// Usage: node tests/browser/run.mjs [regular expression that picks tests by name]

import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { serve } from '../../scripts/serve-web.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MODEL = 'models/SmolLM2-135M-Instruct.Q4_1.gguf';
const TINY = 'tests/data/random-llama-chat.gguf';
const GEMMA = 'models/gemma-3-270m-q4_k_m.gguf';
const WORK = join(ROOT, 'target/browser-test');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Load options for the bulk of the tests: a compatibility-mode adapter, 3-4x faster here than core's.
const COMPAT = { featureLevel: 'compatibility' };

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
const modelBytes = readFileSync(join(ROOT, MODEL));
writeFileSync(join(WORK, 'truncated.gguf'), modelBytes.subarray(0, 40 << 20));
writeFileSync(join(WORK, 'not-a-model.gguf'), 'this is a text file, not a GGUF model\n'.repeat(100));
cpSync(join(ROOT, TINY), join(WORK, 'tiny.gguf'));

// The package as a user installs it: `npm pack`, unpacked under node_modules/, and a page that imports it.
const packed = execFileSync('npm', ['pack', '--silent', '--pack-destination', WORK], { cwd: ROOT })
  .toString()
  .trim()
  .split('\n')
  .pop();
const installed = join(WORK, 'app/node_modules/wick-llm');
mkdirSync(installed, { recursive: true });
execFileSync('tar', ['-xzf', join(WORK, packed), '-C', installed, '--strip-components=1']);
cpSync(join(ROOT, 'tests/browser/package-page.html'), join(WORK, 'app/index.html'));

const server = await serve({ root: ROOT, port: 0 });
const base = `http://127.0.0.1:${server.address().port}`;

// A server that ignores Range (as Python's http.server does), and one on another origin without CORS.
const plainServer = (cors) =>
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
function rangeServer() {
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
const steered = await rangeServer();

const noRange = await plainServer(true);
const noCors = await plainServer(false);
const noRangeUrl = `http://127.0.0.1:${noRange.address().port}/model.gguf`;
const noCorsUrl = `http://127.0.0.1:${noCors.address().port}/model.gguf`;

const profile = mkdtempSync(join(tmpdir(), 'wick-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
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
const responses = [];
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

async function openPage(path) {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log(`    page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && console.log(`    console: ${m.text()}`));
  await page.goto(base + path);
  return page;
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

/** The adapters the running test loaded models on, said after its name. */
const adaptersUsed = new Set();
const ranOn = (stats) => adaptersUsed.add(`${/llvmpipe|SwiftShader/.exec(stats.adapter)?.[0] ?? stats.adapter} (${stats.featureLevel})`);
/** The chat page's engine's figures (its adapter among them). */
const pageStats = (page) => page.evaluate(() => window.wickEngine.stats());

// ---- The chat page ----------------------------------------------------------------------------------

let chatPage;

async function loadOnPage(page, pick) {
  await pick();
  await page.waitForFunction(
    () =>
      document.querySelector('#progress-text').textContent.includes('ready') ||
      document.querySelector('#status').textContent,
  );
  return { status: await page.textContent('#status'), progress: await page.textContent('#progress-text') };
}

/**
 * Records when the page's progress lines change, from now and from the start of every later load of the
 * page (a reload loads a cached model by itself): window.timeline gets [seconds since then, id, text].
 */
async function watchProgress(page) {
  const watch = () => {
    const t0 = performance.now();
    window.timeline = [];
    const note = (records) => {
      for (const { target } of records) {
        const line = (target.nodeType === 1 ? target : target.parentElement)?.closest('#progress-text, #tuning-text');
        if (line) window.timeline.push([(performance.now() - t0) / 1000, line.id, line.textContent]);
      }
    };
    new MutationObserver(note).observe(document, { childList: true, characterData: true, subtree: true });
  };
  await page.addInitScript(watch);
  await page.evaluate(watch);
}

/** Opens the model drawer (the catalog, the URL box, the file picker, the cached models), as a click on the model's name does. */
const openModels = (page) => page.evaluate(() => (document.querySelector('#models').open = true));

/** Loads a model URL through the page's URL box. */
async function loadUrlOnPage(page, url) {
  await openModels(page);
  await page.fill('#model-url', url);
  return loadOnPage(page, () => page.click('#load-url'));
}

/** Loads a catalog model by its file name. */
async function loadCatalogOnPage(page, file) {
  await openModels(page);
  return loadOnPage(page, () => page.click(`#catalog button[data-file="${file}"]`));
}

/** The raw text of the open conversation's last reply, as the page keeps it. */
const lastReply = (page) =>
  page.evaluate(() => {
    const id = localStorage.getItem('wick-chat:current');
    const conversation = JSON.parse(localStorage.getItem('wick-chat:conversations')).find((c) => c.id === id);
    return conversation.messages.at(-1).content;
  });

/** The first moment a progress line matched `pattern`, in seconds since `watchProgress`. */
const firstSeen = (timeline, id, pattern) => timeline.find(([, i, text]) => i === id && pattern.test(text))?.[0];

/** Waits until a progress line has matched `pattern` since `watchProgress` (it may have moved on); its text. */
async function seenOnPage(page, id, pattern) {
  const seen = (args) => window.timeline.find(([, i, text]) => i === args.id && new RegExp(args.pattern).test(text));
  await page.waitForFunction(seen, { id, pattern: pattern.source });
  return (await page.evaluate(seen, { id, pattern: pattern.source }))[2];
}

test('the chat page asks before downloading SmolLM2, then loads it by range requests, never the whole file, into GPU memory', async () => {
  responses.length = 0;
  chatPage = await openPage('/www/?featureLevel=compatibility');
  // A first visit: the page names the download's size and waits for the user's yes.
  await chatPage.locator('#consent').waitFor();
  assert.match(await chatPage.textContent('#consent'), /SmolLM2 135M Instruct.*98\.4 MB/);
  await chatPage.waitForTimeout(500);
  assert.deepEqual(responses, [], 'nothing is downloaded before the user agrees');
  await watchProgress(chatPage);
  const { status, progress } = await loadOnPage(chatPage, () => chatPage.click('#load-default'));
  assert.equal(status, '');
  assert.match(progress, /96\.6 MB of 96\.6 MB in GPU memory/);
  // A first visit: every byte came from the network, and the page says so.
  assert.match(progress, /98\.4 MB of 98\.4 MB downloaded/);
  assert.doesNotMatch(progress, /cache/);
  // Tuning comes after the model is ready, with its own progress.
  await seenOnPage(chatPage, 'tuning-text', /timing kernel shapes/);
  const timeline = await chatPage.evaluate(() => window.timeline);
  const seen = (id, pattern) => firstSeen(timeline, id, pattern);
  const [downloaded, uploaded, ready, tuning] = [
    seen('progress-text', /98\.4 MB of 98\.4 MB downloaded/),
    seen('progress-text', /96\.6 MB of 96\.6 MB in GPU memory/),
    seen('progress-text', /ready/),
    seen('tuning-text', /timing kernel shapes/),
  ];
  assert.ok(downloaded <= uploaded && uploaded <= ready && ready <= tuning + 1, JSON.stringify(timeline.slice(-4)));
  console.log(
    `    first load: downloaded at ${downloaded.toFixed(1)} s, in GPU memory at ${uploaded.toFixed(1)} s, ` +
      `ready at ${ready.toFixed(1)} s; tuning from ${tuning.toFixed(1)} s, between replies`,
  );
  const size = modelBytes.length;
  const model = responses.filter((r) => r.url.endsWith(MODEL));
  assert.ok(model.length >= 12, `${model.length} model requests`);
  for (const r of model) {
    assert.equal(r.status, 206, `${r.url}: ${r.status}`);
    assert.ok(r.length < size / 4, `a response of ${r.length} bytes`);
  }
  const ranges = model.map((r) => r.range);
  assert.equal(new Set(ranges).size, ranges.length, `a range fetched twice: ${ranges}`);
  const stats = await pageStats(chatPage);
  ranOn(stats);
  assert.equal(stats.featureLevel, 'compatibility');
  console.log(
    `    ${model.length} range requests; wasm memory ${(stats.wasmMemoryBytes / 1e6).toFixed(1)} MB for a ` +
      `${(size / 1e6).toFixed(1)} MB model; ${stats.dispatchesPerToken} dispatches per token on ${stats.adapter}`,
  );
  assert.ok(stats.wasmMemoryBytes < size / 2, `wasm memory ${stats.wasmMemoryBytes}`);
});

/** A tuning line's numbers: shapes done and shapes in all. */
function tuningShapes(text) {
  const m = /\((\d+) of (\d+) shapes done\)/.exec(text);
  return m ? { done: Number(m[1]), of: Number(m[2]) } : null;
}

let shapesLeft = null; // after the skip below: the shapes a reload still has to tune

test('tuning goes on after the load; Skip stops it and keeps the shapes already done', async () => {
  await seenOnPage(chatPage, 'tuning-text', /\([1-9]\d* of \d+ shapes done\)/);
  await chatPage.click('#skip-tuning');
  await chatPage.waitForFunction(() => /tuning skipped/.test(document.querySelector('#tuning-text').textContent));
  const kept = await chatPage.evaluate(() => JSON.parse(localStorage.getItem('wick-llm:tuning')));
  const shapes = Object.values(kept).map((t) => Object.keys(t.matvec).length);
  const stats = await pageStats(chatPage);
  ranOn(stats);
  assert.equal(shapes.length, 1);
  assert.equal(shapes[0], stats.tunedShapes);
  assert.ok(stats.tunedShapes >= 1 && stats.untunedShapes >= 1, JSON.stringify(stats));
  shapesLeft = stats.untunedShapes;
  console.log(`    skipped with ${stats.tunedShapes} shapes tuned and ${stats.untunedShapes} left`);
});

test('a reload loads the model from the cache without asking, not the network, and tunes only the shapes left', async () => {
  responses.length = 0;
  // The progress lines are watched from the page's start (watchProgress above).
  const { status, progress } = await loadOnPage(chatPage, () => chatPage.reload());
  assert.equal(await chatPage.isHidden('#consent'), true);
  assert.equal(status, '');
  assert.match(progress, /98\.4 MB of 98\.4 MB from this browser's cache/);
  const timeline = await chatPage.evaluate(() => window.timeline);
  const texts = timeline.filter(([, id]) => id === 'progress-text').map(([, , text]) => text);
  assert.ok(texts.every((t) => !/downloaded/.test(t)), 'no byte is said to come from the network');
  if (shapesLeft !== null) {
    assert.equal(tuningShapes(await seenOnPage(chatPage, 'tuning-text', /shapes done/)).of, shapesLeft);
  }
  ranOn(await pageStats(chatPage));
  const downloaded = responses.filter((r) => r.url.endsWith(MODEL) && r.length > 1);
  assert.deepEqual(downloaded, [], 'only the 1-byte probe goes to the server');
  const listed = await chatPage.textContent('#cached-list');
  assert.match(listed, /SmolLM2-135M-Instruct\.Q4_1\.gguf · 98\.4 MB of 98\.4 MB/);
});

test("a greedy reply on the page equals the native engine's (wick serve), tuning waiting for it", async () => {
  const question = 'What is 2+2?';
  const native = await nativeReply(question, 8);
  await chatPage.click('#settings summary');
  await chatPage.fill('#temperature', '0');
  await chatPage.fill('#max-tokens', '8');
  await chatPage.fill('#system', '');
  await chatPage.fill('#prompt', question);
  // Every text the reply shows on its way, counted once it has ended.
  await chatPage.evaluate(() => {
    const out = document.querySelector('#transcript');
    window.replyTexts = new Set();
    window.replyWatch = new MutationObserver(() => {
      const last = out.querySelector('.message.assistant:last-child');
      if (last) window.replyTexts.add(last.textContent);
    });
    window.replyWatch.observe(out, { subtree: true, childList: true, characterData: true });
  });
  // Tuning the shapes left is under way (the test above saw it start): the reply goes first, tuning waits.
  const sent = Date.now();
  await chatPage.click('#send');
  await chatPage.waitForFunction(() => !document.querySelector('#stop').disabled);
  await chatPage.waitForFunction(() => document.querySelector('.message.assistant:last-child')?.textContent);
  const firstToken = (Date.now() - sent) / 1000;
  await chatPage.waitForFunction(() => document.querySelector('#stop').disabled);
  const reply = await lastReply(chatPage);
  console.log(
    `    page: ${JSON.stringify(reply)}; native: ${JSON.stringify(native)}; ` +
      `first token ${firstToken.toFixed(1)} s after sending, reply in ${((Date.now() - sent) / 1000).toFixed(1)} s`,
  );
  assert.equal(reply, native);
  const pieces = await chatPage.evaluate(() => {
    window.replyWatch.disconnect();
    return window.replyTexts.size;
  });
  assert.ok(pieces > 2, 'the reply arrived in pieces');
  ranOn(await pageStats(chatPage));
  // The figures come once the tuning step under way has ended.
  await chatPage.waitForFunction(() => /tok\/s/.test(document.querySelector('#toks').textContent));
  // The rest of the tests do not need this page's tuning, which would share the CPU with them.
  await chatPage.evaluate(() => window.wickEngine.stopTuning());
});

test('an interrupted download resumes where it stopped', async () => {
  const { state, url } = steered;
  state.files['/resume.gguf'] = { bytes: modelBytes, etag: '"resume-1"' };
  const half = 48 << 20;
  state.failFrom = half;
  const first = await loadUrlOnPage(chatPage, `${url}/resume.gguf`);
  assert.match(first.status, /network error|cannot fetch/);
  state.failFrom = null;
  state.log.length = 0;
  const second = await loadUrlOnPage(chatPage, `${url}/resume.gguf`);
  assert.equal(second.status, '');
  const refetched = state.log.filter((r) => r.end - r.start > 0);
  console.log(`    after the break: ${refetched.length} range requests, from byte ${Math.min(...refetched.map((r) => r.start))}`);
  assert.ok(refetched.length > 0);
  // What arrived before the break comes from the cache; only what did not is fetched, once.
  const starts = refetched.map((r) => r.start);
  assert.equal(new Set(starts).size, starts.length, `a range fetched twice: ${starts}`);
  assert.ok(Math.min(...starts) >= half - (8 << 20), `${starts}`);
  ranOn(await pageStats(chatPage));
});

test('a file that changed on the server (new ETag) is downloaded again', async () => {
  const { state, url } = steered;
  const tiny = readFileSync(join(ROOT, TINY));
  state.files['/changing.gguf'] = { bytes: tiny, etag: '"v1"' };
  const fetched = async () => {
    state.log.length = 0;
    const { status } = await loadUrlOnPage(chatPage, `${url}/changing.gguf`);
    assert.equal(status, '');
    return state.log.filter((r) => r.end > r.start).length;
  };
  assert.equal(await fetched(), 1, 'the first load downloads');
  assert.equal(await fetched(), 0, 'the second reads the cache');
  state.files['/changing.gguf'].etag = '"v2"';
  assert.equal(await fetched(), 1, 'a new ETag downloads again');
  ranOn(await pageStats(chatPage));
});

test('a full storage quota is reported and the load goes on', async () => {
  const { state, url } = steered;
  state.files['/quota.gguf'] = { bytes: readFileSync(join(ROOT, TINY)), etag: '"q"' };
  const cdp = await context.newCDPSession(chatPage);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin: base, quotaSize: 4096 });
  try {
    await openModels(chatPage);
    await chatPage.fill('#model-url', `${url}/quota.gguf`);
    await chatPage.click('#load-url');
    await chatPage.waitForFunction(() => document.querySelector('#progress-text').textContent.includes('ready'));
    const status = await chatPage.textContent('#status');
    console.log(`    ${status}`);
    assert.match(status, /storage is full/);
    ranOn(await pageStats(chatPage));
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: base });
  }
});

test('the page lists cached models and deletes them', async () => {
  await openModels(chatPage);
  await chatPage.click('#cached summary');
  const row = chatPage.locator('#cached-list li', { hasText: 'changing.gguf' });
  await row.waitFor();
  await row.locator('button', { hasText: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  const left = await chatPage.evaluate(async () => {
    const { Wick } = await import('wick-llm');
    return (await Wick.cachedModels()).map((m) => m.url.split('/').pop());
  });
  assert.ok(!left.includes('changing.gguf'), JSON.stringify(left));
  assert.ok(left.includes('SmolLM2-135M-Instruct.Q4_1.gguf'), JSON.stringify(left));
});

test('cancelling a load halfway leaves the page usable', async () => {
  const { state, url } = steered;
  state.files['/slow.gguf'] = { bytes: modelBytes, etag: '"slow"' };
  state.delayMs = 300;
  try {
    await openModels(chatPage);
    await chatPage.fill('#model-url', `${url}/slow.gguf`);
    await chatPage.click('#load-url');
    await chatPage.waitForFunction(() => document.querySelector('#progress').value > 0);
    await chatPage.click('#cancel-load');
    await chatPage.waitForFunction(() => document.querySelector('#status').textContent);
    assert.match(await chatPage.textContent('#status'), /cancelled/);
  } finally {
    state.delayMs = 0;
  }
  const { status } = await loadCatalogOnPage(chatPage, 'SmolLM2-135M-Instruct.Q4_1.gguf');
  assert.equal(status, '');
  ranOn(await pageStats(chatPage));
});

test('a local .gguf file loads and answers on the page', async () => {
  const picked = loadOnPage(chatPage, () => chatPage.setInputFiles('#model-file', join(ROOT, TINY)));
  const { status } = await picked;
  assert.equal(status, '');
  assert.match(await chatPage.textContent('#adapter'), /random-llama-chat\.gguf on /);
  await chatPage.evaluate(() => (document.querySelector('#settings').open = true));
  await chatPage.fill('#max-tokens', '3');
  await chatPage.fill('#prompt', 'hello');
  await chatPage.click('#send');
  await chatPage.waitForFunction(() => !document.querySelector('#send').disabled);
  const stats = await pageStats(chatPage);
  ranOn(stats);
  assert.ok(stats.lastPromptTokens > 0 && stats.tokensPerSecond > 0, JSON.stringify(stats));
});

// The page as a user meets it, on its own tab: the default model from the cache, markdown, two
// conversations kept over a reload, regenerate, edit and resend, dark mode, a phone-sized screen.
const MARKDOWN = [
  'A list:',
  '',
  '- one',
  '- two',
  '- three',
  '',
  '1. first',
  '2. second',
  '',
  '```js',
  'const answer = 40 + 2; // a comment',
  'console.log(answer);',
  '```',
  '',
  'See [the docs](https://example.org/docs).',
  '',
  '<img src=x onerror="window.injected.push(\'img\')"><script>window.injected.push(\'script\')</script>',
  '<a href="javascript:window.injected.push(\'href\')">a javascript link</a> [another](javascript:window.injected.push(1))',
  '<div onmouseover="window.injected.push(\'div\')">hover</div><iframe src="javascript:window.injected.push(\'iframe\')"></iframe>',
].join('\n');

/** Waits for the page to be ready with a model (or to say why not). */
const pageReady = (page) =>
  page.waitForFunction(
    () => document.querySelector('#progress-text').textContent.includes('ready') || document.querySelector('#status').textContent,
  );

/** The open conversation as the page keeps it. */
const openConversation = (page) =>
  page.evaluate(() => {
    const id = localStorage.getItem('wick-chat:current');
    return JSON.parse(localStorage.getItem('wick-chat:conversations')).find((c) => c.id === id);
  });

/** Waits until the open conversation holds `count` messages, the last a finished reply. */
async function replyEnded(page, count) {
  await page.waitForFunction((count) => {
    const id = localStorage.getItem('wick-chat:current');
    const open = JSON.parse(localStorage.getItem('wick-chat:conversations')).find((c) => c.id === id);
    return open.messages.length === count && document.querySelector('#stop').disabled;
  }, count);
  const { messages } = await openConversation(page);
  assert.equal(messages.at(-1).role, 'assistant');
  assert.ok(messages.at(-1).content.length > 0, 'an empty reply');
  return messages;
}

/** The names in the list of conversations. */
const listed = (page) => page.locator('#conversations .title').allTextContents();

test('the chat page as a user has it: markdown, two conversations kept over a reload, regenerate, edit, dark mode, 390 px', async () => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await openPage('/www/?featureLevel=compatibility');
  await page.setViewportSize({ width: 1200, height: 760 });
  const shot = (name) => page.screenshot({ path: join(WORK, `chat-${name}.png`) });
  // A later visit: the default model is in this browser's cache (the first test), so it loads unasked.
  await pageReady(page);
  assert.equal(await page.textContent('#status'), '');
  assert.equal(await page.isHidden('#consent'), true);
  ranOn(await pageStats(page));
  // Tuning would share the CPU with the replies; it has its own tests.
  await page.evaluate(() => window.wickEngine.stopTuning());

  // The catalog: three families, the default first, from the mirror (models/ here) or their public URLs.
  await openModels(page);
  const sources = () => page.locator('#catalog a.source').evaluateAll((links) => links.map((a) => a.href));
  assert.deepEqual(await sources(), [
    `${base}/models/SmolLM2-135M-Instruct.Q4_1.gguf`,
    `${base}/models/gemma-3-270m-q4_k_m.gguf`,
    `${base}/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`,
  ]);
  assert.match(await page.textContent('#catalog'), /llama · Q4_1 · 98\.4 MB · Apache-2\.0 · in this browser.*gemma3.*qwen2/);
  const mirror = await page.inputValue('#mirror');
  await page.fill('#mirror', '');
  await page.dispatchEvent('#mirror', 'change');
  await page.waitForFunction(() => document.querySelector('#catalog a.source').href.startsWith('https://huggingface.co/'));
  assert.ok((await sources()).every((url) => /^https:\/\/huggingface\.co\/.+\/resolve\/main\/.+\.gguf$/.test(url)));
  await page.fill('#mirror', mirror);
  await page.dispatchEvent('#mirror', 'change');
  await page.waitForFunction((m) => document.querySelector('#catalog a.source').href.startsWith(m), mirror);
  await page.click('#model-name');

  // The renderer, on fixed markdown: lists, highlighted code with a copy button, a safe link, inert HTML.
  const md = await page.evaluate(async (markdown) => {
    window.injected = [];
    const { renderMarkdown } = await import('/www/markdown.js');
    const box = document.createElement('div');
    box.id = 'markdown-check';
    box.className = 'content';
    document.body.append(box);
    renderMarkdown(markdown, box);
    for (const element of box.querySelectorAll('*')) element.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    await new Promise((done) => setTimeout(done, 500));
    const link = box.querySelector('a[href^="https:"]');
    return {
      ul: box.querySelectorAll('ul > li').length,
      ol: box.querySelectorAll('ol > li').length,
      code: box.querySelector('pre > code')?.textContent,
      highlighted: box.querySelectorAll('pre > code.hljs span[class^="hljs-"]').length,
      copy: box.querySelectorAll('pre > button.copy').length,
      link: link && { href: link.href, rel: link.rel, target: link.target },
      onAttributes: [...box.querySelectorAll('*')].flatMap((e) => e.getAttributeNames().filter((n) => n.startsWith('on'))),
      active: box.querySelectorAll('script, img, iframe, object, embed').length,
      javascriptUrls: [...box.querySelectorAll('[href], [src]')].filter((e) => /javascript:/i.test(e.getAttribute('href') ?? e.getAttribute('src'))).length,
      injected: window.injected,
    };
  }, MARKDOWN);
  assert.deepEqual({ ul: md.ul, ol: md.ol, copy: md.copy }, { ul: 3, ol: 2, copy: 1 });
  assert.equal(md.code, 'const answer = 40 + 2; // a comment\nconsole.log(answer);\n');
  assert.ok(md.highlighted >= 3, `${md.highlighted} highlighted spans`);
  assert.equal(md.link.href, 'https://example.org/docs');
  assert.match(md.link.rel, /noopener/);
  assert.equal(md.link.target, '_blank');
  assert.deepEqual([md.onAttributes, md.active, md.javascriptUrls, md.injected], [[], 0, 0, []]);
  await page.click('#markdown-check pre button.copy');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), md.code);
  await page.evaluate(() => document.querySelector('#markdown-check').remove());

  // A first conversation: settings of its own, Shift+Enter breaks the line, Enter sends.
  await page.click('#new-chat');
  assert.equal(await page.locator('#transcript .message').count(), 0);
  await page.click('#settings summary');
  await page.fill('#system', '');
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', '8');
  await page.click('#settings summary');
  const question = 'What is 2+2?';
  await page.click('#prompt');
  await page.keyboard.type('What is');
  await page.keyboard.press('Shift+Enter');
  assert.equal(await page.inputValue('#prompt'), 'What is\n');
  assert.equal((await openConversation(page)).messages.length, 0, 'Shift+Enter does not send');
  await page.fill('#prompt', question);
  const sent = Date.now();
  await page.press('#prompt', 'Enter');
  const first = await replyEnded(page, 2);
  const replySeconds = (Date.now() - sent) / 1000;
  assert.equal(first[1].content, await nativeReply(question, 8));
  assert.equal((await page.textContent('#transcript .message.assistant .content')).trim(), first[1].content);
  assert.match(await page.textContent('#toks'), /tok\/s/);
  assert.deepEqual((await listed(page))[0], question);

  // Regenerate the reply (greedy: the same text again), then edit the question and send it again.
  await page.click('#transcript .message.assistant button:text("Regenerate")');
  const again = await replyEnded(page, 2);
  assert.equal(again[1].content, first[1].content);
  await page.click('#transcript .message.user button:text("Edit")');
  await page.fill('#transcript textarea', 'What is 3+3?');
  await page.press('#transcript textarea', 'Enter');
  const edited = await replyEnded(page, 2);
  assert.equal(edited[0].content, 'What is 3+3?');
  assert.equal(await page.locator('#transcript .message').count(), 2);

  // A second conversation, which starts with the first one's settings and then keeps its own.
  await page.click('#new-chat');
  assert.equal(await page.inputValue('#max-tokens'), '8');
  await page.click('#settings summary');
  await page.fill('#max-tokens', '6');
  await page.click('#settings summary');
  await page.fill('#prompt', 'Name a color.');
  await page.press('#prompt', 'Enter');
  await replyEnded(page, 2);
  assert.deepEqual((await listed(page)).slice(0, 2), ['Name a color.', 'What is 3+3?']);
  // Renamed in place.
  const firstItem = page.locator('#conversations li', { hasText: 'What is 3+3?' });
  await firstItem.hover();
  await firstItem.locator('button[aria-label="Rename"]').click();
  await page.fill('#conversations input', 'Arithmetic');
  await page.press('#conversations input', 'Enter');
  assert.deepEqual((await listed(page)).slice(0, 2), ['Name a color.', 'Arithmetic']);
  await shot('desktop-light');

  // After a reload: the model loads from the cache unasked, the last conversation is open, the first one is back.
  await page.reload();
  await pageReady(page);
  await page.evaluate(() => window.wickEngine.stopTuning());
  assert.equal(await page.isHidden('#consent'), true);
  assert.equal(await page.textContent('#transcript .message.user .content'), 'Name a color.');
  await page.click('#conversations .title:text("Arithmetic")');
  const shown = await page.locator('#transcript .message .content').allTextContents();
  assert.deepEqual(shown.map((text) => text.trim()), ['What is 3+3?', edited[1].content]);
  assert.deepEqual([await page.inputValue('#temperature'), await page.inputValue('#max-tokens')], ['0', '8']);
  assert.equal(await page.inputValue('#system'), '');
  await page.click('#conversations .title:text("Name a color.")');
  assert.equal(await page.inputValue('#max-tokens'), '6');
  await page.click('#conversations .title:text("Arithmetic")');

  // Dark mode follows the system's.
  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await background(), 'rgb(255, 255, 255)');
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await background(), 'rgb(13, 17, 23)');
  await shot('desktop-dark');

  // A phone: nothing wider than the screen; the list of conversations slides in on demand.
  await page.setViewportSize({ width: 390, height: 844 });
  const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= innerWidth);
  assert.ok(await fits(), 'the page scrolls sideways at 390 px');
  // The list of conversations is out of the way (once it has slid out).
  await page.waitForFunction(() => document.querySelector('#sidebar').getBoundingClientRect().right <= 0);
  const prompt = await page.locator('#prompt').boundingBox();
  assert.ok(prompt.x >= 0 && prompt.x + prompt.width <= 390 && prompt.y + prompt.height <= 844, JSON.stringify(prompt));
  await shot('390');
  await page.click('#toggle-sidebar');
  await page.waitForFunction(() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0);
  await page.waitForTimeout(300);
  await shot('390-conversations');
  // Deleting a conversation asks first.
  page.once('dialog', (dialog) => dialog.accept());
  await page.locator('#conversations li', { hasText: 'Name a color.' }).locator('button[aria-label="Delete"]').click();
  assert.ok(!(await listed(page)).includes('Name a color.'));
  await page.click('#conversations .title:text("Arithmetic")');
  await page.waitForFunction(() => document.querySelector('#sidebar').getBoundingClientRect().right <= 0);
  await openModels(page);
  assert.ok(await fits(), 'the model drawer is wider than the screen');
  await shot('390-models');
  console.log(`    a reply of 8 tokens in ${replySeconds.toFixed(1)} s; screenshots in target/browser-test/chat-*.png`);
  await page.close();
});

// ---- Errors -----------------------------------------------------------------------------------------

const errorCases = [
  ['a server that ignores Range', () => noRangeUrl, /ignores Range requests/],
  ['a 404', () => `${base}/models/no-such-model.gguf`, /HTTP 404/],
  ['a CORS failure', () => noCorsUrl, /CORS/],
  ['a truncated file', () => `${base}/target/browser-test/truncated.gguf`, /past the end|truncated|ends? (early|before)/i],
  ['a file that is not GGUF', () => `${base}/target/browser-test/not-a-model.gguf`, /GGUF/],
];
for (const [what, url, message] of errorCases) {
  test(`${what}: the page says so and stays usable`, async () => {
    const { status } = await loadUrlOnPage(chatPage, url());
    console.log(`    ${status}`);
    assert.match(status, message);
    assert.equal(await chatPage.isDisabled('#load-url'), false);
  });
}

test('no WebGPU: the page and the API say so', async () => {
  const page = await context.newPage();
  await page.addInitScript(() => {
    delete Navigator.prototype.gpu;
  });
  await page.goto(`${base}/www/`);
  await page.waitForFunction(() => document.querySelector('#status').textContent);
  assert.match(await page.textContent('#status'), /WebGPU is not available/);
  assert.equal(await page.isHidden('#consent'), true, 'no download is offered');
  await openModels(page);
  await page.click('#catalog button[data-file="SmolLM2-135M-Instruct.Q4_1.gguf"]');
  await page.waitForTimeout(500);
  assert.match(await page.textContent('#status'), /WebGPU is not available/);
  await page.close();
});

// ---- The package, unbundled, as a user installs it ---------------------------------------------------

let app;
/** The figures of the engine the package tests share (window.engine, loaded by the first of them). */
const appStats = () => app.evaluate(() => window.engine.stats());

test('the installed package loads a model and answers plain and streamed', async () => {
  app = await openPage('/target/browser-test/app/');
  const result = await app.evaluate(async (adapter) => {
    const { Wick } = await import('wick-llm');
    const phases = new Set();
    const engine = await Wick.load('../tiny.gguf', { ...adapter, onProgress: (p) => phases.add(p.phase) });
    window.engine = engine;
    const body = { messages: [{ role: 'user', content: 'hello there' }], temperature: 0, max_tokens: 6 };
    const plain = await engine.chat.completions.create(body);
    const stream = await engine.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    return { phases: [...phases], plain, chunks, stats: await engine.stats() };
  }, COMPAT);
  ranOn(result.stats);
  const { plain, chunks } = result;
  assert.deepEqual(result.phases.filter((p) => p !== 'tuning').sort(), ['download', 'gpu']);
  assert.equal(plain.object, 'chat.completion');
  assert.equal(plain.choices[0].message.role, 'assistant');
  assert.equal(plain.choices[0].finish_reason, 'length');
  assert.equal(plain.usage.completion_tokens, 6);
  assert.ok(plain.usage.prompt_tokens > 0);
  const streamed = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(streamed, plain.choices[0].message.content);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
  assert.deepEqual(chunks.at(-1).usage, plain.usage);
  assert.ok(result.stats.dispatchesPerToken > 0);
});

test('a reply reads back its greedy choice, its top-k candidates, or without top_k the row of logits', async () => {
  const perToken = await app.evaluate(async () => {
    const engine = window.engine;
    const ask = async (sampling) => {
      await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 4, ...sampling });
      return (await engine.stats()).readBackBytesPerToken;
    };
    return {
      greedy: await ask({ temperature: 0 }),
      topK: await ask({ temperature: 0.8, top_k: 40, seed: 1 }),
      row: await ask({ temperature: 0.8, seed: 1 }),
    };
  });
  console.log(`    bytes read back per token: ${JSON.stringify(perToken)}`);
  // A reply that ends early (an end-of-generation token) ran one more step than it has tokens.
  assert.ok(perToken.greedy >= 4 && perToken.greedy <= 8, JSON.stringify(perToken));
  assert.ok(perToken.topK >= 320 && perToken.topK <= 640, JSON.stringify(perToken));
  assert.ok(perToken.row >= 512 * 4, JSON.stringify(perToken));
  ranOn(await appStats());
});

test('load progress comes in order (download, GPU, then tuning), each byte counted once, cache flags true', async () => {
  const { state, url } = steered;
  state.files['/phases.gguf'] = { bytes: modelBytes, etag: '"phases-1"' };
  state.log.length = 0;
  const result = await app.evaluate(async ({ modelUrl, adapter }) => {
    const { Wick } = await import('wick-llm');
    const load = async (options) => {
      const events = [];
      let loaded = false;
      let firstTuning;
      const tuningStarted = new Promise((resolve) => (firstTuning = resolve));
      const onProgress = (p) => {
        events.push({ ...p, afterLoad: loaded });
        if (p.phase === 'tuning') firstTuning();
      };
      const engine = await Wick.load(modelUrl, { nCtx: 256, onProgress, ...adapter, ...options });
      loaded = true;
      const stats = await engine.stats();
      let tuned = null;
      if (options.tune !== false) {
        await tuningStarted;
        tuned = await engine.stopTuning();
      }
      await engine.unload();
      return { events, tuned, stats };
    };
    localStorage.removeItem('wick-llm:tuning');
    const first = await load({});
    const second = await load({ tune: false });
    localStorage.removeItem('wick-llm:tuning');
    return { first, second };
  }, { modelUrl: `${url}/phases.gguf`, adapter: COMPAT });
  for (const load of [result.first, result.second]) ranOn(load.stats);
  const size = modelBytes.length;
  const check = ({ events }, fromCache) => {
    const phases = events.map((e) => e.phase).filter((p, i, all) => p !== all[i - 1]);
    assert.equal(phases[0], 'download', phases.join());
    const download = events.filter((e) => e.phase === 'download');
    const gpu = events.filter((e) => e.phase === 'gpu');
    const lastUpload = events.lastIndexOf(gpu.at(-1));
    assert.ok(events.indexOf(gpu[0]) > events.indexOf(download[0]));
    assert.ok(events.slice(0, lastUpload + 1).every((e) => !e.afterLoad && e.phase !== 'tuning'));
    assert.ok(events.slice(lastUpload + 1).every((e) => e.afterLoad && e.phase === 'tuning'));
    assert.ok(download.every((e, i) => i === 0 || e.loaded > download[i - 1].loaded), 'each byte counted once');
    assert.equal(download.at(-1).loaded, size);
    assert.ok(download.every((e) => e.total === size && e.fromCache === (fromCache ? e.loaded : 0)));
    assert.equal(gpu.at(-1).loaded, gpu.at(-1).total);
    return events.filter((e) => e.phase === 'tuning');
  };
  const tuning = check(result.first, false);
  assert.ok(tuning.length >= 1 && tuning.every((e) => e.total > 0 && e.loaded <= e.total && e.shapes >= 4));
  assert.deepEqual(result.first.tuned, { finished: false, stopped: true });
  assert.deepEqual(check(result.second, true), []);
  const fetched = state.log.filter((r) => r.path === '/phases.gguf' && r.end > r.start);
  assert.equal(fetched.reduce((n, r) => n + r.end - r.start + 1, 0), size, 'the second load fetched nothing');
});

test('abort stops a reply; the engine answers the next request', async () => {
  const result = await app.evaluate(async () => {
    const engine = window.engine;
    const controller = new AbortController();
    const stream = await engine.chat.completions.create(
      { messages: [{ role: 'user', content: 'go on' }], temperature: 0.8, seed: 1, max_tokens: 200, stream: true },
      { signal: controller.signal },
    );
    let pieces = 0;
    let error = null;
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content && ++pieces === 3) controller.abort();
      }
    } catch (e) {
      error = e.name;
    }
    const next = await engine.chat.completions.create({
      messages: [{ role: 'user', content: 'again' }],
      temperature: 0,
      max_tokens: 3,
    });
    return { pieces, error, next: next.usage.completion_tokens };
  });
  assert.equal(result.error, 'AbortError');
  assert.ok(result.pieces >= 3 && result.pieces < 200);
  assert.equal(result.next, 3);
  ranOn(await appStats());
});

test('multi-turn chat reuses the cached turns', async () => {
  const processed = await app.evaluate(async () => {
    const engine = window.engine;
    const first = [{ role: 'user', content: 'one two three' }];
    const a = await engine.chat.completions.create({ messages: first, temperature: 0, max_tokens: 4 });
    const second = [...first, a.choices[0].message, { role: 'user', content: 'four' }];
    await engine.chat.completions.create({ messages: second, temperature: 0, max_tokens: 4 });
    const { lastPromptTokens, lastPromptProcessed } = await engine.stats();
    return { first: a.usage.prompt_tokens, prompt: lastPromptTokens, processed: lastPromptProcessed };
  });
  // The second prompt starts with the whole first one, which the cache still holds.
  assert.ok(processed.prompt - processed.processed >= processed.first, JSON.stringify(processed));
  ranOn(await appStats());
});

test('two requests at once are queued, never interleaved', async () => {
  const { together, apart } = await app.evaluate(async () => {
    const engine = window.engine;
    const body = (content) => ({ messages: [{ role: 'user', content }], temperature: 0, max_tokens: 8 });
    const text = (r) => r.choices[0].message.content;
    const together = (await Promise.all([engine.chat.completions.create(body('first')), engine.chat.completions.create(body('second'))])).map(text);
    const apart = [text(await engine.chat.completions.create(body('first'))), text(await engine.chat.completions.create(body('second')))];
    return { together, apart };
  });
  assert.deepEqual(together, apart);
  ranOn(await appStats());
});

test('a full context ends the reply with length, or drops the oldest turns with dropOldTurns', async () => {
  const result = await app.evaluate(async (adapter) => {
    const { Wick } = await import('wick-llm');
    const conversation = [
      { role: 'user', content: 'one two three four five six seven eight' },
      { role: 'assistant', content: 'nine ten eleven twelve' },
      { role: 'user', content: 'go on' },
    ];
    const ask = (engine, messages) =>
      engine.chat.completions
        .create({ messages, temperature: 0, max_tokens: 60 })
        .then((r) => ({ finish: r.choices[0].finish_reason, tokens: r.usage.completion_tokens }), (e) => e.message);
    const probe = await Wick.load('../tiny.gguf', { ...adapter, nCtx: 256 });
    const { usage } = await probe.chat.completions.create({ messages: conversation, max_tokens: 1 });
    const stats = await probe.stats();
    await probe.unload();
    const nCtx = usage.prompt_tokens + 10;
    const stopping = await Wick.load('../tiny.gguf', { ...adapter, nCtx });
    const stopped = await ask(stopping, conversation);
    const tooLong = await ask(stopping, [...conversation, ...conversation, ...conversation]);
    await stopping.unload();
    const dropping = await Wick.load('../tiny.gguf', { ...adapter, nCtx, dropOldTurns: true });
    const dropped = await ask(dropping, [...conversation, ...conversation, ...conversation]);
    await dropping.unload();
    return { nCtx, stopped, tooLong, dropped, stats };
  }, COMPAT);
  ranOn(result.stats);
  delete result.stats;
  console.log(`    ${JSON.stringify(result)}`);
  assert.equal(result.stopped.finish, 'length');
  assert.ok(result.stopped.tokens < 60, 'the context, not max_tokens, ended it');
  assert.match(String(result.tooLong), new RegExp(`does not fit the context of ${result.nCtx} tokens`));
  assert.ok(result.dropped.tokens > 0, JSON.stringify(result.dropped));
});

test('response_format: the default model replies with JSON that matches the schema; a schema the engine cannot take is refused', async () => {
  // Checked here by hand, apart from the engine: each reply parses, and has the fields, types and ranges asked.
  const cases = [
    {
      content: 'A person: name and age.',
      schema: {
        type: 'object',
        properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
        required: ['name', 'age'],
        additionalProperties: false,
      },
      valid: (v) =>
        Object.keys(v).sort().join() === 'age,name' && typeof v.name === 'string' && v.name.length <= 20 &&
        Number.isInteger(v.age) && v.age >= 0 && v.age <= 120,
    },
    {
      content: 'The sentiment of "I love it".',
      schema: { type: 'object', properties: { sentiment: { enum: ['positive', 'negative'] } }, required: ['sentiment'], additionalProperties: false },
      valid: (v) => Object.keys(v).join() === 'sentiment' && ['positive', 'negative'].includes(v.sentiment),
    },
    {
      content: 'Two fruits.',
      schema: { type: 'array', items: { type: 'string', maxLength: 12 }, minItems: 2, maxItems: 2 },
      valid: (v) => Array.isArray(v) && v.length === 2 && v.every((f) => typeof f === 'string' && f.length <= 12),
    },
  ];
  const result = await app.evaluate(async ({ cases, adapter }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load('/models/SmolLM2-135M-Instruct.Q4_1.gguf', { ...adapter, tune: false, nCtx: 512 });
    const ask = (content, response_format, temperature) =>
      engine.chat.completions.create({ messages: [{ role: 'user', content }], temperature, seed: 5, max_tokens: 64, response_format });
    const replies = [];
    for (const { content, schema } of cases) {
      for (const temperature of [0, 0.8]) {
        const r = await ask(content, { type: 'json_schema', json_schema: { name: 'x', schema } }, temperature);
        replies.push({ text: r.choices[0].message.content, finish: r.choices[0].finish_reason });
      }
    }
    const stats = await engine.stats(); // of the last schema's reply
    const object = await ask('Describe a cat.', { type: 'json_object' }, 0);
    const refused = await ask('x', { type: 'json_schema', json_schema: { name: 'x', schema: { $ref: 'https://example.com/s.json' } } }, 0)
      .then(() => 'answered', (e) => `${e.name}: ${e.message}`);
    await engine.unload();
    return { replies, object: object.choices[0].message.content, refused, stats };
  }, { cases: cases.map(({ content, schema }) => ({ content, schema })), adapter: COMPAT });
  ranOn(result.stats);
  result.replies.forEach(({ text, finish }, i) => {
    console.log(`    ${JSON.stringify(text)} (${finish})`);
    assert.equal(finish, 'stop', text);
    assert.ok(cases[i >> 1].valid(JSON.parse(text)), text);
  });
  console.log(`    json_object: ${JSON.stringify(result.object)}; refused: ${result.refused}`);
  const object = JSON.parse(result.object);
  assert.ok(object && typeof object === 'object' && !Array.isArray(object), result.object);
  assert.match(result.refused, /^BadRequestError: .*ref/);
  console.log(`    the grammar's share of a step: ${result.stats.stepMs.mask.toFixed(2)} ms of ${(1000 / result.stats.tokensPerSecond).toFixed(0)} ms`);
});

test('tools: the default model calls a function, plain and streamed, and takes its answer back', async () => {
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 30 } }, required: ['city'], additionalProperties: false },
    },
  };
  const result = await app.evaluate(async ({ weather, adapter }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load('/models/SmolLM2-135M-Instruct.Q4_1.gguf', { ...adapter, tune: false, nCtx: 1024 });
    const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const body = { messages: ask, tools: [weather], tool_choice: 'required', temperature: 0, max_tokens: 64 };
    const plain = await engine.chat.completions.create(body);
    const chunks = [];
    for await (const chunk of await engine.chat.completions.create({ ...body, stream: true })) chunks.push(chunk);
    const call = plain.choices[0].message.tool_calls?.[0];
    const back = await engine.chat.completions.create({
      ...body,
      tool_choice: 'auto',
      messages: [...ask, plain.choices[0].message, { role: 'tool', tool_call_id: call?.id, content: '{"sky": "clear"}' }],
    });
    const stats = await engine.stats();
    await engine.unload();
    return { plain, chunks, back: back.choices[0], stats };
  }, { weather, adapter: COMPAT });
  ranOn(result.stats);
  const choice = result.plain.choices[0];
  console.log(`    ${JSON.stringify(choice.message)}`);
  assert.equal(choice.finish_reason, 'tool_calls');
  const [call] = choice.message.tool_calls;
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args), ['city']);
  assert.ok(typeof args.city === 'string' && args.city.length <= 30);
  const streamed = result.chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
  assert.equal(streamed.length, 1);
  assert.deepEqual({ ...streamed[0], id: call.id }, { index: 0, ...call });
  assert.equal(result.chunks.at(-1).choices[0].finish_reason, 'tool_calls');
  console.log(`    after the tool's answer: ${JSON.stringify(result.back.message)} (${result.back.finish_reason})`);
  assert.ok(['stop', 'length', 'tool_calls'].includes(result.back.finish_reason));
  assert.ok(result.back.message.content || result.back.message.tool_calls?.length);
});

test('bad requests are refused with a clear message', async () => {
  const messages = await app.evaluate(async () => {
    const out = [];
    for (const body of [
      { messages: [] },
      { messages: [{ role: 'user', content: 'x' }], temperature: 3 },
      { messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b', 'c', 'd', 'e'] },
    ]) {
      await window.engine.chat.completions.create(body).catch((e) => out.push(`${e.name}: ${e.message}`));
    }
    await window.engine.chat.completions
      .create({ messages: [{ role: 'user', content: 'x' }], top_p: 'high', stream: true })
      .catch((e) => out.push(`${e.name}: ${e.message}`));
    return out;
  });
  console.log(`    ${messages.join('\n    ')}`);
  assert.equal(messages.length, 4);
  assert.ok(messages.every((m) => m.startsWith('BadRequestError: ')), messages);
  assert.match(messages[0], /messages/);
  assert.match(messages[1], /temperature/);
  assert.match(messages[2], /stop/);
  assert.match(messages[3], /top_p|invalid type/);
});

test('unload frees the engine; a new load works', async () => {
  const { stats, ...answer } = await app.evaluate(async (adapter) => {
    const { Wick } = await import('wick-llm');
    await window.engine.unload();
    const failed = await window.engine.stats().then(() => false, () => true);
    const engine = await Wick.load('../tiny.gguf', adapter);
    const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const stats = await engine.stats();
    await engine.unload();
    return { failed, tokens: r.usage.completion_tokens, stats };
  }, COMPAT);
  ranOn(stats);
  assert.deepEqual(answer, { failed: true, tokens: 2 });
});

test('tune: kernel shapes are timed once, kept by adapter and used by the next load; replies stay the same', async () => {
  const result = await app.evaluate(async (adapter) => {
    const { Wick } = await import('wick-llm');
    localStorage.removeItem('wick-llm:tuning');
    const body = { messages: [{ role: 'user', content: 'tell me' }], temperature: 0, max_tokens: 8 };
    const run = async (options) => {
      const phases = new Set();
      const engine = await Wick.load('../tiny.gguf', { ...adapter, ...options, onProgress: (p) => phases.add(p.phase) });
      await engine.tuned;
      const reply = await engine.chat.completions.create(body);
      const stats = await engine.stats();
      await engine.unload();
      const { tunedShapes: tuned, untunedShapes: untuned } = stats;
      const text = reply.choices[0].message.content;
      return { text, tuned, untuned, phases: [...phases], adapter: stats.adapter, featureLevel: stats.featureLevel };
    };
    const before = await run({ tune: false });
    const tuning = await run({});
    const kept = JSON.parse(localStorage.getItem('wick-llm:tuning'));
    const after = await run({});
    localStorage.removeItem('wick-llm:tuning');
    return { before, tuning, after, kept };
  }, COMPAT);
  const { before, tuning, after, kept } = result;
  ranOn(after);
  assert.equal(before.tuned, 0);
  assert.ok(before.untuned > 0 && tuning.untuned === 0 && after.untuned === 0, JSON.stringify(result));
  assert.equal(tuning.tuned, before.untuned);
  assert.ok(tuning.phases.includes('tuning') && !after.phases.includes('tuning'));
  assert.equal(after.tuned, tuning.tuned);
  const adapters = Object.keys(kept);
  assert.equal(adapters.length, 1);
  assert.equal(Object.keys(kept[adapters[0]].matvec).length, tuning.tuned);
  assert.equal(tuning.text, before.text);
  assert.equal(after.text, before.text);
});

test('a lost GPU device is reported through the API; a new load works', async () => {
  // A copy of the installed package whose worker destroys its GPU device when asked to in a chat
  // message, as a GPU reset or the browser reclaiming the device would leave it.
  const lostRoot = join(WORK, 'lost');
  cpSync(join(WORK, 'app'), lostRoot, { recursive: true });
  const worker = join(lostRoot, 'node_modules/wick-llm/js/worker.js');
  const hook = `
const requestDevice = GPUAdapter.prototype.requestDevice;
GPUAdapter.prototype.requestDevice = async function (...args) {
  const device = await requestDevice.apply(this, args);
  self.addEventListener('message', ({ data }) => {
    if (data.type === 'chat' && data.body.includes('lose the device')) device.destroy();
  });
  return device;
};
`;
  writeFileSync(worker, hook + readFileSync(worker, 'utf8'));
  const page = await openPage('/target/browser-test/lost/');
  const result = await page.evaluate(async (adapter) => {
    const { Wick } = await import('wick-llm');
    const ask = (engine, content) =>
      engine.chat.completions
        .create({ messages: [{ role: 'user', content }], max_tokens: 2 })
        .then((r) => r.usage.completion_tokens, (e) => e.message);
    const engine = await Wick.load('../tiny.gguf', adapter);
    const before = await ask(engine, 'hi');
    const lost = await ask(engine, 'lose the device');
    const after = await ask(engine, 'hi');
    await engine.unload();
    const fresh = await Wick.load('../tiny.gguf', adapter);
    const again = await ask(fresh, 'hi');
    const stats = await fresh.stats();
    await fresh.unload();
    return { before, lost, after, again, stats };
  }, COMPAT);
  ranOn(result.stats);
  await page.close();
  console.log(`    ${result.lost}`);
  assert.equal(result.before, 2);
  assert.match(String(result.lost), /GPU device was lost/);
  assert.match(String(result.after), /GPU device was lost/);
  assert.equal(result.again, 2);
});

test('the package bundled by Vite loads a model and answers (core WebGPU, the default)', async () => {
  // A Vite app that depends on the installed package: its worker and .wasm must come out as assets.
  const appRoot = join(WORK, 'vite-app');
  mkdirSync(join(appRoot, 'node_modules'), { recursive: true });
  cpSync(installed, join(appRoot, 'node_modules/wick-llm'), { recursive: true });
  writeFileSync(
    join(appRoot, 'index.html'),
    '<!doctype html><link rel="icon" href="data:,"><script type="module" src="./main.js"></script>\n',
  );
  writeFileSync(join(appRoot, 'main.js'), "import { Wick } from 'wick-llm';\nwindow.Wick = Wick;\n");
  const { build } = await import('vite');
  await build({ root: appRoot, base: './', logLevel: 'warn', configFile: false });
  responses.length = 0;
  const page = await openPage('/target/browser-test/vite-app/dist/');
  const seen = [];
  const onRequest = (r) => seen.push(new URL(r.url()).pathname);
  context.on('request', onRequest);
  const reply = await page.evaluate(async () => {
    await new Promise((done) => (window.Wick ? done() : addEventListener('load', done)));
    const engine = await window.Wick.load('../../tiny.gguf');
    const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    const stats = await engine.stats();
    await engine.unload();
    return { ...r, stats };
  });
  await page.close();
  ranOn(reply.stats);
  assert.equal(reply.stats.featureLevel, 'core');
  context.off('request', onRequest);
  assert.equal(reply.usage.completion_tokens, 3);
  const wasm = seen.filter((p) => p.endsWith('.wasm'));
  assert.ok(wasm.length && wasm.every((p) => p.includes('/vite-app/dist/assets/')), `wasm from ${wasm}`);
});

test("Gemma 3 270M (gemma3, no template in the file) answers in the package as the native engine does", async () => {
  const content = 'Name a color.';
  const page = app ?? (await openPage('/target/browser-test/app/'));
  const reply = await page.evaluate(async ({ content, adapter }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load('/models/gemma-3-270m-q4_k_m.gguf', { ...adapter, tune: false, nCtx: 512 });
    const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: 4 };
    const answer = await engine.chat.completions.create(body);
    const stats = await engine.stats();
    await engine.unload();
    return { text: answer.choices[0].message.content, stats };
  }, { content, adapter: COMPAT });
  ranOn(reply.stats);
  assert.equal(reply.text, await nativeReply(content, 4, GEMMA));
  assert.ok(reply.text.length > 0);
});

// The default model on each kind of adapter, greedy against native, with where a step's time goes.
// Core mode (SwiftShader here) is several times slower: a shorter reply, and no kernel profile.
for (const [featureLevel, where, maxTokens] of [
  ['compatibility', 'a compatibility-mode WebGPU adapter', 12],
  ['core', 'core WebGPU', 6],
]) {
  test(`on ${where} the default model replies as the native engine does`, async () => {
    const content = 'What is 2+2?';
    const page = app ?? (await openPage('/target/browser-test/app/'));
    const result = await page.evaluate(async ({ content, featureLevel, maxTokens }) => {
      const { Wick } = await import('wick-llm');
      const options = { tune: false, nCtx: 512, featureLevel };
      const engine = await Wick.load('/models/SmolLM2-135M-Instruct.Q4_1.gguf', options);
      const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens };
      const answer = await engine.chat.completions.create(body);
      const stats = await engine.stats();
      const profile = featureLevel === 'core' ? null : await engine.profile('decode');
      await engine.unload();
      return { text: answer.choices[0].message.content, stats, profile };
    }, { content, featureLevel, maxTokens });
    ranOn(result.stats);
    const { record, submit, wait, other } = result.stats.stepMs;
    const parts = `${record.toFixed(1)} recording, ${submit.toFixed(1)} submitting, ${wait.toFixed(0)} waiting, ${other.toFixed(1)} between`;
    let line = `${(1000 / result.stats.tokensPerSecond).toFixed(0)} ms a token (${parts})`;
    assert.ok(wait > 0 && record > 0, JSON.stringify(result));
    if (result.profile) {
      const { kernels, wholeMs } = result.profile;
      const kernelMs = kernels.reduce((sum, [, ms]) => sum + ms, 0);
      line += `; the plan alone ${wholeMs.toFixed(0)} ms, its dispatches one at a time ${kernelMs.toFixed(0)} ms`;
      assert.ok(kernels.some(([name]) => name.startsWith('matvecpairs')), JSON.stringify(kernels));
      assert.ok(kernels.every(([, ms]) => ms > 0) && wholeMs > 0, JSON.stringify(kernels));
    }
    console.log(`    ${line}`);
    assert.equal(result.stats.featureLevel, featureLevel);
    const mode = featureLevel === 'core' ? '(WebGPU)' : '(WebGPU compatibility mode)';
    assert.ok(result.stats.adapter.endsWith(mode), result.stats.adapter);
    assert.equal(result.text, await nativeReply(content, maxTokens));
  });
}

// ---- Native reference --------------------------------------------------------------------------------

/** The native engine's greedy reply to one user message, through `wick serve`'s chat API. */
async function nativeReply(content, maxTokens, model = MODEL) {
  const wick = join(ROOT, 'target/release/wick');
  if (!existsSync(wick)) throw new Error('target/release/wick is missing: cargo build --release -p wick-cli');
  const args = ['serve', '-m', join(ROOT, model), '--port', '0', '-c', '512'];
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
    return body.choices[0].message.content;
  } finally {
    child.kill();
  }
}

// ---- Run ---------------------------------------------------------------------------------------------

const filter = process.argv[2];
let failed = 0;
for (const { name, fn } of tests) {
  // The first test loads the chat page that later page tests use.
  if (filter && !new RegExp(filter).test(name) && tests[0].name !== name) continue;
  const start = Date.now();
  adaptersUsed.clear();
  const took = () => {
    const on = adaptersUsed.size ? `, on ${[...adaptersUsed].join(' and ')}` : '';
    return `(${((Date.now() - start) / 1000).toFixed(1)} s${on})`;
  };
  try {
    await fn();
    console.log(`ok   ${name} ${took()}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name} ${took()}\n    ${e.stack || e}`);
  }
}
await context.close();
for (const s of [server, noRange, noCors, steered.server]) s.close();
rmSync(profile, { recursive: true, force: true });
console.log(failed ? `${failed} browser test(s) failed` : 'browser tests passed');
process.exit(failed ? 1 : 0);
