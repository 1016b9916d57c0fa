// Browser tests of the chat page (www/): loading models by range requests and from the cache, tuning,
// conversations, markdown, themes, and the errors a user can meet. Registered by run.mjs.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { MODEL, QWEN35, ROOT, TINY, WORK, base, context, keptShapes, modelBytes, nativeReply, noCorsUrl, noRangeUrl, openPage, pageStats, ranOn, responses, server, steered, test, tests } from './harness.mjs';

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
  const shapes = Object.values(kept).map(keptShapes);
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

test("a reasoning model's thoughts fold away above its answer", async () => {
  const { status } = await loadOnPage(chatPage, () => chatPage.setInputFiles('#model-file', join(ROOT, QWEN35)));
  assert.equal(status, '');
  // The progress line said ready for the model before: wait for this one's name.
  await chatPage.waitForFunction(() => /random-qwen35/.test(document.querySelector('#adapter').textContent));
  await chatPage.fill('#max-tokens', '6');
  await chatPage.fill('#prompt', 'What is 2 + 2?');
  await chatPage.click('#send');
  await chatPage.waitForFunction(() => !document.querySelector('#send').disabled);
  // Qwen3.5's template opens the reasoning: all six tokens are thoughts, shown folded, kept on redraw.
  const thinking = await chatPage.evaluate(() => {
    const last = [...document.querySelectorAll('.message.assistant')].at(-1);
    const details = last.querySelector('details.thinking');
    return { hidden: details.hidden, open: details.open, thought: details.querySelector('.thought').textContent };
  });
  assert.equal(thinking.hidden, false);
  assert.equal(thinking.open, false);
  assert.ok(thinking.thought.trim().length > 0, JSON.stringify(thinking));
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

  // The catalog: three families (four models), the default first, from the mirror (models/ here) or their public URLs.
  await openModels(page);
  const sources = () => page.locator('#catalog a.source').evaluateAll((links) => links.map((a) => a.href));
  assert.deepEqual(await sources(), [
    `${base}/models/SmolLM2-135M-Instruct.Q4_1.gguf`,
    `${base}/models/gemma-3-270m-q4_k_m.gguf`,
    `${base}/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`,
    `${base}/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`,
  ]);
  // The pair the catalog names: the 1.5B may be loaded with the 0.5B drafting for it.
  assert.equal(
    await page.getAttribute('#catalog button[data-draft]', 'data-draft'),
    'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  );
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
