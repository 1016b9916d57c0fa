// Wick's chat page: pick a model, watch it stream into the GPU, chat. Everything goes through the
// public package API, as any page would use it.

import { Wick } from 'wick-llm';

const DEFAULT_MODEL = new URL('../models/SmolLM2-135M-Instruct.Q4_1.gguf', location.href).href;
// `?featureLevel=compatibility` takes a WebGPU compatibility-mode adapter even where a core one exists
// (the package falls back to one by itself where the browser offers only that).
const FEATURE_LEVEL = new URLSearchParams(location.search).get('featureLevel') || 'core';
const $ = (id) => document.getElementById(id);

let engine = null;
let loading = null; // AbortController of the load in progress
let generating = null; // AbortController of the reply in progress
let history = [];

function showError(e) {
  $('status').textContent = e ? (e.message || String(e)) : '';
}

function setBusy() {
  const ready = engine && !loading;
  $('prompt').disabled = !ready;
  $('send').disabled = !ready || Boolean(generating);
  $('stop').disabled = !generating;
  $('cancel-load').hidden = !loading;
  for (const id of ['load-url', 'load-default']) $(id).disabled = Boolean(loading);
  $('model-file').disabled = Boolean(loading);
}

const megabytes = (n) => `${(n / 1e6).toFixed(1)} MB`;

async function loadModel(source) {
  showError(null);
  loading = new AbortController();
  setBusy();
  $('progress').value = 0;
  $('progress-text').textContent = 'starting…';
  if (engine) {
    await engine.unload();
    engine = null;
  }
  $('progress-box').hidden = false;
  $('tuning-box').hidden = true;
  const started = performance.now();
  // The file's bytes arrive a few pieces ahead of the GPU upload: one line says both.
  let download = '';
  let gpu = '';
  const show = () => ($('progress-text').textContent = [download, gpu].filter(Boolean).join(' · '));
  const onProgress = (p) => {
    if (p.phase === 'warning') return showError(p.message);
    if (p.phase === 'tuning') return showTuning(p);
    if (p.phase === 'download') download = downloadText(p, (performance.now() - started) / 1000);
    if (p.phase === 'gpu') {
      gpu = `${megabytes(p.loaded)} of ${megabytes(p.total)} in GPU memory`;
      $('progress').value = p.total ? p.loaded / p.total : 0;
    }
    show();
  };
  try {
    const loaded = await Wick.load(source, { onProgress, signal: loading.signal, featureLevel: FEATURE_LEVEL });
    engine = loaded;
    tuningStarted = performance.now();
    loaded.tuned.then((result) => showTuned(result, loaded));
    window.wickEngine = engine; // for the console
    // The figures of the load itself: stats() would wait for the tuning step under way.
    $('adapter').textContent = `${engine.model.split('/').pop()} on ${engine.info.adapter}`;
    $('progress-text').textContent += ' · ready';
    $('prompt').placeholder = 'Write a message';
    history = [];
    $('transcript').replaceChildren();
  } catch (e) {
    engine = null;
    $('progress-box').hidden = true;
    showError(e.name === 'AbortError' ? new Error('Loading was cancelled.') : e);
  } finally {
    loading = null;
    setBusy();
    listCached();
  }
}

/** Where the file's bytes came from, truthfully: the network, this browser's cache, or some of each. */
function downloadText({ loaded, total, fromCache }, seconds) {
  const from =
    fromCache === loaded
      ? "from this browser's cache"
      : fromCache
        ? `${megabytes(fromCache)} from this browser's cache, the rest downloaded`
        : 'downloaded';
  return `${megabytes(loaded)} of ${megabytes(total)} ${from} · ${megabytes(loaded / seconds)}/s`;
}

// Tuning times kernel shapes for this GPU while the engine is idle (between replies), once per shape.
let tuningStarted = 0;

function showTuning({ loaded, total, shapes, shapesDone }) {
  $('tuning-box').hidden = false;
  $('skip-tuning').disabled = false;
  $('tuning-progress').value = total ? loaded / total : 0;
  $('tuning-text').textContent =
    `timing kernel shapes for this GPU between replies (once): ${loaded} of ${total} ` +
    `(${shapesDone} of ${shapes} shapes done)`;
}

function showTuned({ finished }, tuned) {
  if (tuned !== engine || $('tuning-box').hidden) return;
  $('skip-tuning').disabled = true;
  const seconds = ((performance.now() - tuningStarted) / 1000).toFixed(0);
  $('tuning-text').textContent = finished
    ? `kernel shapes tuned for this GPU in ${seconds} s, kept for next time`
    : 'tuning skipped: the shapes not yet timed run with their defaults (it resumes on the next load)';
}

function addMessage(role, text) {
  const div = document.createElement('div');
  div.className = `message ${role}`;
  div.textContent = text;
  $('transcript').append(div);
  return div;
}

async function send(text) {
  showError(null);
  history.push({ role: 'user', content: text });
  addMessage('user', text);
  const out = addMessage('assistant', '');
  generating = new AbortController();
  setBusy();
  const system = $('system').value.trim();
  let reply = '';
  try {
    const stream = await engine.chat.completions.create(
      {
        messages: [...(system ? [{ role: 'system', content: system }] : []), ...history],
        temperature: Number($('temperature').value),
        top_p: Number($('top-p').value),
        // llama.cpp's server's field: the top 40 are found on the GPU, and only they come back.
        top_k: 40,
        max_tokens: Number($('max-tokens').value),
        stream: true,
      },
      { signal: generating.signal },
    );
    for await (const chunk of stream) {
      reply += chunk.choices[0]?.delta?.content ?? '';
      out.textContent = reply;
      $('transcript').scrollTop = $('transcript').scrollHeight;
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(e);
  } finally {
    // What was said stays in the conversation, also when stopped.
    history.push({ role: 'assistant', content: reply });
    generating = null;
    setBusy();
    const stats = await engine?.stats().catch(() => null);
    if (stats?.tokensPerSecond) {
      $('toks').textContent =
        `${stats.tokensPerSecond.toFixed(1)} tok/s · ${stats.dispatchesPerToken} dispatches per token`;
    }
  }
}

async function listCached() {
  const list = $('cached-list');
  const models = await Wick.cachedModels().catch(() => []);
  list.replaceChildren(
    ...models.map((m) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = `${m.url.split('/').pop()} · ${megabytes(m.cachedBytes)} of ${megabytes(m.size)}`;
      const load = document.createElement('button');
      load.textContent = 'Load';
      load.onclick = () => loadModel(m.url);
      const remove = document.createElement('button');
      remove.textContent = 'Delete';
      remove.onclick = async () => {
        await Wick.deleteCachedModel(m.url);
        listCached();
      };
      li.append(name, load, remove);
      return li;
    }),
  );
  if (!models.length) list.textContent = 'None yet.';
}

$('url-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('model-url').value.trim();
  if (url) loadModel(url);
};
$('load-default').onclick = () => loadModel(DEFAULT_MODEL);
$('model-file').onchange = () => $('model-file').files[0] && loadModel($('model-file').files[0]);
$('cancel-load').onclick = () => loading?.abort();
$('skip-tuning').onclick = () => engine?.stopTuning();
$('prompt-form').onsubmit = (e) => {
  e.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || !engine || generating) return;
  $('prompt').value = '';
  send(text);
};
$('prompt').onkeydown = (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('prompt-form').requestSubmit();
  }
};
$('stop').onclick = () => generating?.abort();
$('clear').onclick = () => {
  history = [];
  $('transcript').replaceChildren();
};

if (!navigator.gpu) {
  showError('WebGPU is not available in this browser: Wick needs a browser with WebGPU (Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows), on a secure (https or localhost) page.');
}
$('model-url').value = DEFAULT_MODEL;
setBusy();
listCached();
