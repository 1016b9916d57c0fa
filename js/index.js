// wick-llm: GGUF language models on the user's GPU, with the OpenAI client's chat API.
//
//   const engine = await Wick.load(url, { onProgress });
//   const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] });
//
// The engine runs in a Web Worker (./worker.js), so the page never freezes.

import { cachedModels, deleteCachedModel } from './cache.js';

let nextId = 1;

/** The worker side of one engine: requests out, events back, matched by id. */
class Channel {
  constructor(worker) {
    this.worker = worker;
    this.pending = new Map(); // id -> { resolve, reject, onEvent }
    this.closedWith = null;
    worker.onmessage = ({ data }) => {
      const request = this.pending.get(data.id);
      if (!request) return;
      if (data.type === 'result') {
        this.pending.delete(data.id);
        request.resolve(data.value);
      } else if (data.type === 'error') {
        this.pending.delete(data.id);
        request.reject(errorFrom(data));
      } else {
        request.onEvent?.(data);
      }
    };
    worker.onerror = (e) => {
      e.preventDefault?.();
      this.close(new Error(`the Wick worker failed: ${e.message || 'it could not start'}`));
    };
  }

  request(message, { signal, onEvent } = {}) {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const id = nextId++;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError());
      const onAbort = () => this.worker.postMessage({ type: 'abort', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        resolve: (v) => (done(), resolve(v)),
        reject: (e) => (done(), reject(e)),
        onEvent,
      });
      this.worker.postMessage({ ...message, id });
    });
  }

  close(error) {
    this.closedWith = error;
    for (const { reject } of this.pending.values()) reject(error);
    this.pending.clear();
    this.worker.terminate();
  }
}

function errorFrom({ name, message }) {
  if (name === 'AbortError') return abortError();
  const error = new Error(message);
  error.name = name === 'Error' ? 'WickError' : name;
  return error;
}

function abortError() {
  return new DOMException('the request was aborted', 'AbortError');
}

export class Wick {
  /**
   * Loads a model: a URL (read by range requests and cached) or a File / Blob. `onProgress` receives
   * `{ phase, loaded, total }`: phase 'download' (bytes from the network or the cache; `cached` says
   * which), 'gpu' (bytes in GPU memory), 'warning' (with `message`, the load goes on).
   */
  static async load(source, { onProgress, signal, nCtx = 2048, dropOldTurns = false } = {}) {
    if (typeof source !== 'string' && !(source instanceof Blob)) {
      throw new TypeError('Wick.load takes a model URL or a File / Blob');
    }
    if (!globalThis.navigator?.gpu) {
      throw new Error(
        'WebGPU is not available in this browser: Wick needs a browser with WebGPU ' +
          '(Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows), on a secure (https or localhost) page',
      );
    }
    const url = typeof source === 'string' ? new URL(source, location.href).href : source;
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    const channel = new Channel(worker);
    try {
      const stats = await channel.request(
        { type: 'load', source: url, options: { nCtx, dropOldTurns } },
        { signal, onEvent: (e) => e.type === 'progress' && onProgress?.(e.event) },
      );
      return new Wick(channel, typeof source === 'string' ? url : source.name || 'local file', stats);
    } catch (e) {
      channel.close(e);
      throw e;
    }
  }

  /** Cached models: [{ url, size, cachedBytes, saved }]. */
  static cachedModels() {
    return cachedModels();
  }

  static deleteCachedModel(url) {
    return deleteCachedModel(url);
  }

  constructor(channel, model, info) {
    this.channel = channel;
    this.model = model;
    this.info = info;
    this.chat = { completions: { create: (body, options) => this.#create(body, options) } };
  }

  /** What a token costs and how fast the last reply went: tok/s, dispatches per token, the adapter. */
  stats() {
    return this.channel.request({ type: 'stats' });
  }

  /** Frees the GPU memory and ends the worker. */
  async unload() {
    await this.channel.request({ type: 'unload' }).catch(() => {});
    this.channel.close(new Error('the model was unloaded'));
  }

  // async, so that a bad request rejects like any other failure rather than throwing.
  async #create(body, { signal } = {}) {
    const request = checkRequest(body);
    const id = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const envelope = (object) => ({ id, object, created, model: this.model });
    if (!body.stream) {
      return this.channel.request({ type: 'chat', request }, { signal }).then((r) => ({
        ...envelope('chat.completion'),
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: r.text },
            finish_reason: r.finishReason,
            logprobs: null,
          },
        ],
        usage: usage(r),
      }));
    }
    const includeUsage = Boolean(body.stream_options?.include_usage);
    const stream = new ChunkStream();
    const chunk = (delta, finish) => ({
      ...envelope('chat.completion.chunk'),
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
    stream.push(chunk({ role: 'assistant', content: '' }, null));
    this.channel
      .request(
        { type: 'chat', request },
        { signal, onEvent: (e) => e.type === 'text' && stream.push(chunk({ content: e.piece }, null)) },
      )
      .then((r) => {
        stream.push(chunk({}, r.finishReason));
        if (includeUsage) stream.push({ ...envelope('chat.completion.chunk'), choices: [], usage: usage(r) });
        stream.end();
      }, (e) => stream.fail(e));
    return stream;
  }
}

function usage(r) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.promptTokens + r.completionTokens,
  };
}

/** The chunks of a streamed reply, as an async iterable. */
class ChunkStream {
  #items = [];
  #waiting = null;
  #done = false;
  #error = null;

  push(item) {
    this.#items.push(item);
    this.#wake();
  }
  end() {
    this.#done = true;
    this.#wake();
  }
  fail(error) {
    this.#error = error;
    this.#wake();
  }
  #wake() {
    this.#waiting?.();
    this.#waiting = null;
  }
  async *[Symbol.asyncIterator]() {
    for (;;) {
      if (this.#items.length) yield this.#items.shift();
      else if (this.#error) throw this.#error;
      else if (this.#done) return;
      else await new Promise((resolve) => (this.#waiting = resolve));
    }
  }
}

/** The OpenAI request, checked and defaulted as the OpenAI API does; what the engine takes. */
function checkRequest(body) {
  const bad = (message) => {
    throw new TypeError(message);
  };
  if (!body || !Array.isArray(body.messages) || body.messages.length === 0) {
    bad('messages must be a non-empty array of { role, content }');
  }
  const messages = body.messages.map((m, i) => {
    if (!m || typeof m.role !== 'string') bad(`messages[${i}].role must be a string`);
    let content = m.content ?? '';
    if (Array.isArray(content)) {
      content = content.map((p) => (p?.type === 'text' ? p.text : bad(`messages[${i}]: only text parts are supported`))).join('');
    }
    if (typeof content !== 'string') bad(`messages[${i}].content must be a string or text parts`);
    return { role: m.role, content };
  });
  const number = (name, fallback, min, max) => {
    const v = body[name] ?? fallback;
    if (typeof v !== 'number' || !(v >= min && v <= max)) bad(`${name} must be a number from ${min} to ${max}`);
    return v;
  };
  if ((body.n ?? 1) !== 1) bad('only n = 1 is supported');
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? null;
  if (maxTokens !== null && !(Number.isInteger(maxTokens) && maxTokens >= 1)) {
    bad('max_tokens must be a whole number of at least 1');
  }
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (!Array.isArray(stop) || stop.length > 4 || stop.some((s) => typeof s !== 'string')) {
    bad('stop must be a string or at most 4 strings');
  }
  const seed = body.seed ?? Math.floor(Math.random() * 2 ** 32);
  if (!Number.isSafeInteger(seed) || seed < 0) bad('seed must be a non-negative whole number');
  return {
    messages,
    temperature: number('temperature', 1, 0, 2),
    topP: number('top_p', 1, 0, 1),
    seed,
    maxTokens,
    stop,
  };
}
