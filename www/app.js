// Wick's chat page: pick a model, watch it stream into the GPU, chat. Everything goes through the
// public package API, as any page would use it. The model side lives here; conversations in chat.js.

import { Wick } from 'wick-llm';
import { CATALOG, DEFAULT_MODEL, megabytes, mirror, modelUrl, setMirror } from './catalog.js';
import { startChat, useEngine } from './chat.js';
import { $, button, showError } from './ui.js';

// `?featureLevel=compatibility` takes a WebGPU compatibility-mode adapter even where a core one exists
// (the package falls back to one by itself where the browser offers only that).
const FEATURE_LEVEL = new URLSearchParams(location.search).get('featureLevel') || 'core';

let engine = null;
let loading = null; // AbortController of the load in progress

function setLoading(controller) {
  loading = controller;
  $('cancel-load').hidden = !loading;
  for (const b of document.querySelectorAll('#load-url, #load-default, #catalog button')) b.disabled = Boolean(loading);
  $('model-file').disabled = Boolean(loading);
}

// The vision projector the next load the user asks for takes: a URL typed, or a file opened (which
// wins).
let mmprojFile = null;
const mmproj = () => mmprojFile ?? ($('mmproj-url').value.trim() || undefined);

/**
 * Loads what the user chose, with the projector the models drawer names: the drawer closes, so the
 * progress and Cancel show under the top bar.
 */
function choose(source, draft) {
  $('models').open = false;
  return loadModel(source, draft, mmproj());
}

/**
 * Loads `source`, with the draft model at `draft` (a URL) proposing tokens for it and the vision
 * projector `vision` (a URL or File) where given. The models drawer stays as it is: a load the page
 * starts by itself must not close it under the user.
 */
async function loadModel(source, draft, vision) {
  showError(null);
  $('consent').hidden = true;
  setLoading(new AbortController());
  $('progress').value = 0;
  $('progress-text').textContent = 'starting…';
  if (engine) {
    useEngine(null);
    await engine.unload();
    engine = null;
  }
  $('progress-box').hidden = false;
  $('tuning-box').hidden = true;
  const started = performance.now();
  // The file's bytes arrive a few pieces ahead of the GPU upload: one line says both.
  let download = '';
  let gpu = '';
  let drafting = '';
  let projecting = '';
  const show = () =>
    ($('progress-text').textContent = [download, gpu, drafting, projecting].filter(Boolean).join(' · '));
  const onProgress = (p) => {
    if (p.phase === 'warning') return showError(p.message);
    if (p.phase === 'tuning') return showTuning(p);
    if (p.phase === 'download') download = downloadText(p, (performance.now() - started) / 1000);
    if (p.phase === 'gpu') {
      gpu = `${megabytes(p.loaded)} of ${megabytes(p.total)} in GPU memory`;
      $('progress').value = p.total ? p.loaded / p.total : 0;
    }
    if (p.phase === 'mmproj-download' || p.phase === 'mmproj-gpu') {
      projecting =
        `vision projector: ${megabytes(p.loaded)} of ${megabytes(p.total)}` + (p.phase === 'mmproj-gpu' ? ' in GPU memory' : '');
      $('progress').value = p.total ? p.loaded / p.total : 0;
    }
    if (p.phase === 'draft-download' || p.phase === 'draft-gpu') {
      drafting = `draft: ${megabytes(p.loaded)} of ${megabytes(p.total)}` + (p.phase === 'draft-gpu' ? ' in GPU memory' : '');
      $('progress').value = p.total ? p.loaded / p.total : 0;
    }
    show();
  };
  try {
    const options = { onProgress, signal: loading.signal, featureLevel: FEATURE_LEVEL, mmproj: vision };
    const loaded = await Wick.load(source, draft ? { ...options, draft } : options);
    engine = loaded;
    tuningStarted = performance.now();
    loaded.tuned.then((result) => showTuned(result, loaded));
    window.wickEngine = engine; // for the console
    // The figures of the load itself: stats() would wait for the tuning step under way.
    const file = engine.model.split('/').pop();
    $('model-name').textContent = CATALOG.find((entry) => entry.file === file)?.name ?? file;
    const drafter = draft && (CATALOG.find((entry) => entry.file === draft.split('/').pop())?.name ?? draft);
    const seeing = vision ? ', reading images' : '';
    $('adapter').textContent = `${file} on ${engine.info.adapter}` + (drafter ? `, drafted by ${drafter}` : '') + seeing;
    $('adapter').title = $('adapter').textContent;
    $('progress-text').textContent += ' · ready';
    // The load's figures stay in the progress line, out of sight: the chat needs the room.
    $('progress-box').hidden = true;
    $('prompt').placeholder = 'Write a message (Enter sends, Shift+Enter starts a new line)';
    useEngine(engine, { images: Boolean(vision) });
  } catch (e) {
    engine = null;
    $('model-name').textContent = 'Choose a model';
    $('progress-box').hidden = true;
    showError(e.name === 'AbortError' ? new Error('Loading was cancelled.') : e);
  } finally {
    setLoading(null);
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

// ---- The catalog and the cache ------------------------------------------------------------------------

/** The catalog, each model with its facts, where it comes from, and whether this browser has it. */
function renderCatalog(cached) {
  const items = CATALOG.map((entry) => {
    const url = modelUrl(entry);
    const have = cached.find((m) => m.url === url && m.cachedBytes === m.size);
    const li = document.createElement('li');
    const name = document.createElement('strong');
    name.textContent = entry.name;
    const facts = document.createElement('span');
    facts.className = 'muted';
    facts.textContent =
      `${entry.family} · ${entry.quant} · ${megabytes(entry.bytes)} · ${entry.license}` +
      (have ? ' · in this browser' : '');
    const source = document.createElement('a');
    source.href = url;
    source.textContent = entry.file;
    source.className = 'muted source';
    source.rel = 'noopener';
    const load = button('Load', () => choose(url));
    load.dataset.file = entry.file;
    load.disabled = Boolean(loading);
    const text = document.createElement('div');
    text.append(name, facts, source);
    li.append(text, load);
    // A smaller model of the same vocabulary drafts the next tokens, which this one checks several at
    // a time: the same replies, sooner where the GPU reads weights faster than it computes.
    const drafter = entry.draft && CATALOG.find((other) => other.file === entry.draft);
    if (drafter) {
      const both = button('Load with draft', () => choose(url, modelUrl(drafter)));
      both.title = `${drafter.name} drafts for it (${megabytes(drafter.bytes)} more)`;
      both.dataset.file = entry.file;
      both.dataset.draft = drafter.file;
      both.disabled = Boolean(loading);
      li.append(both);
    }
    return li;
  });
  $('catalog').replaceChildren(...items);
}

async function listCached() {
  const models = await Wick.cachedModels().catch(() => []);
  renderCatalog(models);
  const list = $('cached-list');
  list.replaceChildren(
    ...models.map((m) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = `${m.url.split('/').pop()} · ${megabytes(m.cachedBytes)} of ${megabytes(m.size)}`;
      const remove = button('Delete', async () => {
        await Wick.deleteCachedModel(m.url);
        listCached();
      });
      li.append(name, button('Load', () => choose(m.url)), remove);
      return li;
    }),
  );
  if (!models.length) list.textContent = 'None yet.';
  return models;
}

// ---- First visit, later visits ------------------------------------------------------------------------

/** The default model loads at once where this browser has it whole; otherwise the page asks first. */
async function start() {
  const cached = await listCached();
  if (!navigator.gpu) {
    showError('WebGPU is not available in this browser: Wick needs a browser with WebGPU (Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows), on a secure (https or localhost) page.');
    return;
  }
  const url = modelUrl(DEFAULT_MODEL);
  // A model the user chose while the cache was listed is theirs: the default does not replace it.
  if (loading || engine) return;
  if (cached.some((m) => m.url === url && m.cachedBytes === m.size)) return loadModel(url);
  const { name, family, license, bytes } = DEFAULT_MODEL;
  $('consent-text').textContent =
    `Wick runs language models on your GPU, inside this page: nothing you write leaves your computer. ` +
    `To start, it downloads ${name} (${family} family; license ${license}), ${megabytes(bytes)}, ` +
    `once: this browser keeps it for your next visits.`;
  $('load-default').textContent = `Download ${megabytes(bytes)} and start`;
  $('consent').hidden = false;
}

$('load-default').onclick = () => choose(modelUrl(DEFAULT_MODEL));
$('choose-other').onclick = () => ($('models').open = true);
$('url-form').onsubmit = (e) => {
  e.preventDefault();
  const url = $('model-url').value.trim();
  if (url) choose(url);
};
$('model-file').onchange = () => $('model-file').files[0] && choose($('model-file').files[0]);
$('mmproj-file').onchange = () => {
  mmprojFile = $('mmproj-file').files[0] ?? null;
  $('mmproj-chosen').textContent = mmprojFile ? `${mmprojFile.name}, for the next model loaded` : '';
};
$('cancel-load').onclick = () => loading?.abort();
$('skip-tuning').onclick = () => engine?.stopTuning();
$('mirror').value = mirror();
$('mirror').onchange = () => {
  setMirror($('mirror').value);
  listCached();
};

// One drawer open at a time: they share the space under the top bar.
for (const [id, other] of [['models', 'settings'], ['settings', 'models']]) {
  $(id).addEventListener('toggle', () => $(id).open && ($(other).open = false));
}

$('model-url').value = modelUrl(DEFAULT_MODEL);
startChat();
start();
