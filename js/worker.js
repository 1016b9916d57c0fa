// The engine's thread: the page talks to it by messages, so loading and generating never block the page.
// Requests run one at a time in arrival order; an abort stops the one it names, queued or running.
// Tuning runs in the gaps: one candidate kernel shape per turn of the queue, so a request that arrives
// meanwhile waits for at most one timing, and never shares the GPU with one.

import init, { load } from '../pkg/wick_web.js';
import { fileReader, urlReader } from './sources.js';

let model = null;
let adapterName = null; // as the browser names the adapter (wgpu's web backend cannot), read at load
let featureLevel = null; // 'core' or 'compatibility': the WebGPU adapter the engine runs on
let queue = Promise.resolve();
const aborted = new Set();
const loads = new Map(); // load id -> AbortController
let tuning = null; // { id, model, stopped }: the tuning request of the loaded model

// The browser's own adapter request, before chooseFeatureLevel answers wgpu's.
const requestAdapter = self.navigator.gpu?.requestAdapter.bind(self.navigator.gpu);

const ready = init({ module_or_path: new URL('../pkg/wick_web_bg.wasm', import.meta.url) });

const post = (message) => self.postMessage(message);
const fail = (id, e) =>
  post({ type: 'error', id, name: e?.name || 'Error', message: e?.message || String(e) });

self.onmessage = ({ data }) => {
  const { type, id } = data;
  if (type === 'abort') {
    aborted.add(id);
    loads.get(id)?.abort();
    if (tuning?.id === id) tuning.stopped = true;
    return;
  }
  if (type === 'tune') return tuneWhenIdle(id);
  // Everything else waits its turn.
  inTurn(() => handle(data)).catch((e) => fail(id, e));
};

/** Runs `job` after everything queued before it; resolves to what it returns. */
function inTurn(job) {
  const turn = queue.then(job);
  queue = turn.catch(() => {});
  return turn;
}

async function handle({ type, id, ...data }) {
  if (aborted.has(id)) {
    aborted.delete(id);
    return fail(id, abortError());
  }
  switch (type) {
    case 'load':
      return loadModel(id, data);
    case 'chat':
      return chat(id, data.body);
    case 'embed':
      if (!model) throw new Error('no model is loaded');
      return post({ type: 'result', id, value: JSON.parse(await model.embed(data.body, data.model)) });
    case 'stats':
      return post({ type: 'result', id, value: model ? stats() : null });
    case 'profile':
      if (!model) throw new Error('no model is loaded');
      return post({ type: 'result', id, value: await model.profile(data.plan) });
    case 'unload':
      model?.free();
      model = null;
      return post({ type: 'result', id, value: null });
    default:
      throw new Error(`unknown request ${type}`);
  }
}

async function loadModel(id, { source, options }) {
  if (!self.navigator.gpu) {
    // The page has WebGPU (Wick.load checked), but this browser does not offer it to workers.
    throw new Error('WebGPU is not available in Web Workers in this browser: Wick runs its engine in one');
  }
  await ready;
  const controller = new AbortController();
  loads.set(id, controller);
  const progress = (phase, loaded, total, extra = {}) =>
    post({ type: 'progress', id, event: { phase, loaded, total, ...extra } });
  try {
    const reader =
      typeof source === 'string'
        ? await urlReader(source, {
            signal: controller.signal,
            onDownload: (loaded, total, fromCache) => progress('download', loaded, total, { fromCache }),
            onWarning: (message) => progress('warning', 0, 0, { message }),
          })
        : fileReader(source, controller.signal);
    const { nCtx, dropOldTurns, tuning, pooling, speculation, mmproj, imageMinTokens, imageMaxTokens, kvCache } = options;
    const { level, subgroups } = await chooseFeatureLevel(options.featureLevel);
    const checkTokens = speculation ? speculation.draftMax + 1 : undefined;
    const projector =
      mmproj === undefined
        ? undefined
        : typeof mmproj === 'string'
          ? await urlReader(mmproj, {
              signal: controller.signal,
              onDownload: (loaded, total, fromCache) => progress('mmproj-download', loaded, total, { fromCache }),
              onWarning: (message) => progress('warning', 0, 0, { message }),
            })
          : fileReader(mmproj, controller.signal);
    const loaded = await load(
      reader,
      { nCtx, dropOldTurns, tuning, pooling, checkTokens, imageMinTokens, imageMaxTokens, kvCache, subgroups },
      (loaded, total) => progress('gpu', loaded, total),
      projector,
      (loaded, total) => progress('mmproj-gpu', loaded, total),
    );
    try {
      await speculate(loaded, speculation, controller.signal, progress);
    } catch (e) {
      loaded.free();
      throw e;
    }
    model?.free();
    model = loaded;
    featureLevel = level;
    const info = (await self.navigator.gpu.requestAdapter())?.info;
    adapterName = [info?.vendor, info?.architecture, info?.description].filter(Boolean).join(' ') || null;
    post({ type: 'result', id, value: stats() });
  } catch (e) {
    if (controller.signal.aborted) throw abortError();
    throw e;
  } finally {
    loads.delete(id);
    aborted.delete(id);
  }
}

/** Sets `model` speculating as `speculation` says ({ draft, draftMax, draftPMin, lookup }), if at all. */
async function speculate(model, speculation, signal, progress) {
  if (!speculation) return;
  const { draft, draftMax, draftPMin, lookup } = speculation;
  if (lookup) return model.lookup(draftMax);
  const reader =
    typeof draft === 'string'
      ? await urlReader(draft, {
          signal,
          onDownload: (loaded, total, fromCache) => progress('draft-download', loaded, total, { fromCache }),
          onWarning: (message) => progress('warning', 0, 0, { message }),
        })
      : fileReader(draft, signal);
  await model.draft(reader, draftMax, draftPMin, (loaded, total) => progress('draft-gpu', loaded, total));
}

/**
 * Makes the adapter requests that follow (wgpu's among them) ask for `wanted`, or for compatibility
 * mode where the browser offers no core adapter. wgpu's web backend requests
 * adapters without a feature level, which gives core WebGPU only, and wgpu has no option for it; the
 * engine needs nothing compatibility mode lacks (no textures, and the limits it asks for are the
 * adapter's own), so answering wgpu's request here is all it takes. Returns { level, subgroups }:
 * whether that adapter has WebGPU's subgroups, which the engine's device then asks for.
 */
async function chooseFeatureLevel(wanted) {
  let level = wanted;
  let adapter = await requestAdapter({ featureLevel: level });
  if (!adapter && level === 'core') {
    level = 'compatibility';
    adapter = await requestAdapter({ featureLevel: level });
  }
  self.navigator.gpu.requestAdapter = async (options = {}) =>
    withSubgroups(await requestAdapter({ ...options, featureLevel: level }));
  return { level, subgroups: Boolean(adapter?.features.has('subgroups')) };
}

/**
 * The adapter, whose devices ask for WebGPU's subgroups where it has them: wgpu's web backend asks
 * only for the features it knows, and the engine's kernels that shuffle values between lanes need
 * them (load's `subgroups` tells the engine it has them).
 */
function withSubgroups(adapter) {
  if (!adapter?.features.has('subgroups')) return adapter;
  const requestDevice = adapter.requestDevice.bind(adapter);
  adapter.requestDevice = (descriptor = {}) =>
    requestDevice({ ...descriptor, requiredFeatures: [...(descriptor.requiredFeatures ?? []), 'subgroups'] });
  return adapter;
}

/**
 * Times the loaded model's untuned kernel shapes, a candidate per turn of the queue, posting each step
 * as a 'tuning' progress event ({ loaded: candidates timed, total, shapes, shapesDone, tuning: the
 * winners so far once a shape is done }). Ends when every shape is timed, when aborted, or when the
 * model is unloaded or replaced; a shape cut short keeps the kernel shape it had.
 */
async function tuneWhenIdle(id) {
  const job = { id, model, stopped: false };
  if (tuning) tuning.stopped = true;
  tuning = job;
  let last = null;
  try {
    while (!last?.finished) {
      const step = await inTurn(() => (job.stopped || model !== job.model ? null : job.model.tuneStep()));
      if (!step) break;
      last = step;
      const { timed, candidates, ...rest } = step;
      post({ type: 'progress', id, event: { phase: 'tuning', loaded: timed, total: candidates, ...rest } });
    }
    post({ type: 'result', id, value: { finished: Boolean(last?.finished), stopped: job.stopped } });
  } catch (e) {
    fail(id, e);
  } finally {
    if (tuning === job) tuning = null;
    aborted.delete(id);
  }
}

async function chat(id, body) {
  if (!model) throw new Error('no model is loaded');
  try {
    const images = await requestImages(body);
    const result = await model.chat(
      body,
      (piece, logprobs, reasoning) => {
        if (aborted.has(id)) return false;
        post({ type: 'text', id, piece, logprobs, reasoning });
        return true;
      },
      images,
    );
    if (aborted.has(id)) throw abortError();
    post({ type: 'result', id, value: result });
  } finally {
    aborted.delete(id);
  }
}

/**
 * The pixels of a chat request's image parts, in order, decoded by the browser: `[{ width, height, data:
 * Uint8Array of RGBA }]`. An image part's URL is anything fetch reads (a data: URL, a blob: URL of the
 * page's, an http(s) URL the page may read).
 */
async function requestImages(body) {
  const urls = [];
  for (const message of JSON.parse(body).messages ?? []) {
    if (!Array.isArray(message?.content)) continue;
    for (const part of message.content) if (part?.type === 'image_url') urls.push(part.image_url?.url);
  }
  return Promise.all(urls.map((url, i) => decodeImage(url, i + 1)));
}

async function decodeImage(url, n) {
  if (typeof url !== 'string') throw badRequest(`image ${n}: an image_url part needs image_url.url`);
  let blob;
  try {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    blob = await response.blob();
  } catch (e) {
    throw badRequest(`image ${n} cannot be read: ${e.message}`);
  }
  let bitmap;
  try {
    // The pixels as the file has them, as llama.cpp reads them: no color management, alpha apart.
    bitmap = await createImageBitmap(blob, { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
  } catch (e) {
    throw badRequest(`image ${n} cannot be decoded: ${e.message}`);
  }
  const { width, height } = bitmap;
  const canvas = new OffscreenCanvas(width, height);
  const context = canvas.getContext('2d', { colorSpace: 'srgb' });
  context.drawImage(bitmap, 0, 0);
  bitmap.close();
  const { data } = context.getImageData(0, 0, width, height);
  return { width, height, data: new Uint8Array(data.buffer) };
}

function badRequest(message) {
  const error = new Error(message);
  error.name = 'BadRequestError';
  return error;
}

/** The engine's figures, with the adapter as the browser names it and the feature level. */
function stats() {
  const figures = model.stats();
  const mode = featureLevel === 'compatibility' ? 'WebGPU compatibility mode' : 'WebGPU';
  return { ...figures, featureLevel, adapter: adapterName ? `${adapterName} (${mode})` : figures.adapter };
}

function abortError() {
  return new DOMException('the request was aborted', 'AbortError');
}
