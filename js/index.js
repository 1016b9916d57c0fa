// wick-llm: GGUF language models on the user's GPU, with the OpenAI client's chat API.
//
//   const engine = await Wick.load(url, { onProgress });
//   const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi' }] });
//   const { data } = await engine.embeddings.create({ input: ['a text', 'another'] }); // embedding models
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

// Tuned kernel shapes, kept in localStorage as { adapter key: tuning } (JSON). Where there is no
// localStorage (a worker, storage blocked), tuning lasts as long as the engine.
const TUNING_KEY = 'wick-llm:tuning';

function keptTuning() {
  try {
    return globalThis.localStorage?.getItem(TUNING_KEY) ?? null;
  } catch {
    return null;
  }
}

// Kind by kind (each of the record's maps of winners), shape by shape: another engine (on this page
// or in another tab) may have kept winners of its own since this one loaded. A record of another
// set of candidates is replaced: its winners would be dropped at every load.
function keepTuning(json) {
  try {
    const { adapter, tuning } = JSON.parse(json);
    const all = JSON.parse(keptTuning() || '{}');
    const kept = all[adapter];
    if (kept?.candidates === tuning.candidates) {
      for (const [kind, winners] of Object.entries(tuning)) {
        if (typeof winners === 'object') kept[kind] = { ...kept[kind], ...winners };
      }
    } else {
      all[adapter] = tuning;
    }
    globalThis.localStorage?.setItem(TUNING_KEY, JSON.stringify(all));
  } catch {
    // Not kept: the next load starts from the defaults.
  }
}

export class Wick {
  /**
   * Loads a model: a URL (read by range requests and cached) or a File / Blob, and resolves once its
   * weights are in GPU memory. `onProgress` receives `{ phase, loaded, total }`: phase 'download'
   * (bytes of the file, each counted once; `fromCache` of them came from the browser's cache), 'gpu'
   * (bytes in GPU memory), 'warning' (with `message`; the load goes on), then, after `load` has
   * resolved, 'tuning' (candidate kernel shapes timed of those to time, with `shapes` and
   * `shapesDone`). Unless `tune` is false, the model's kernel shapes this adapter has no winners for
   * yet are timed in the engine's idle moments: between requests, never during one, a candidate at a
   * time, the largest matrices first. Each winner is used from then on and kept in localStorage by
   * adapter for every later load. `engine.tuned` says when tuning ends; `engine.stopTuning()` skips
   * the rest. `featureLevel` 'compatibility' takes a WebGPU compatibility-mode adapter even where a
   * core one exists; by default core is taken, and compatibility mode where the browser offers only it.
   * `pooling` ('mean', 'cls' or 'last') makes embeddings of a chat model; an embedding model's file
   * names its own. Speculative decoding: `draft` (a URL or File / Blob) loads a smaller model with the
   * same vocabulary beside this one, which proposes up to `draftMax` tokens (6 unless told) for the model
   * to check in one step, stopping after a token it gives less than `draftPMin` chance (0.75 unless
   * told; 0 drafts them all) (its load reports phases 'draft-download' and 'draft-gpu'); `lookup: true`
   * proposes them from the prompt and the reply so far instead. Replies are as without: greedy, token for
   * token; sampled, from the same distribution. Images: `mmproj` (a URL or File / Blob) loads the
   * model's vision projector (an mmproj GGUF, as llama.cpp's: Gemma 3's, Gemma 4's or Qwen3.5's)
   * after it (phases 'mmproj-download' and 'mmproj-gpu'); chat messages may then hold `image_url`
   * parts, each image decoded by the browser. `imageMinTokens` and `imageMaxTokens` bound the tokens
   * an image becomes where the projector sizes images to their own (Gemma 4's: 70 and 1120 unless
   * told; Qwen3.5's: 8 and 4096). `kvCache` is how the KV cache holds keys and values: 'f16' (half the
   * GPU memory for the same context, and half the bytes attention reads, as llama.cpp keeps it) or
   * 'f32' (exact); unless told f16 on GPUs, f32 where the adapter runs on the CPU (SwiftShader).
   */
  static async load(
    source,
    {
      onProgress,
      signal,
      nCtx = 2048,
      dropOldTurns = false,
      tune = true,
      featureLevel = 'core',
      pooling,
      draft,
      draftMax = 6,
      draftPMin = 0.75,
      lookup = false,
      mmproj,
      imageMinTokens,
      imageMaxTokens,
      kvCache,
    } = {},
  ) {
    if (typeof source !== 'string' && !(source instanceof Blob)) {
      throw new TypeError('Wick.load takes a model URL or a File / Blob');
    }
    if (!globalThis.navigator?.gpu) {
      throw new Error(
        'WebGPU is not available in this browser: Wick needs a browser with WebGPU ' +
          '(Chrome or Edge 113+, Safari 26+, or Firefox 141+ on Windows), on a secure (https or localhost) page',
      );
    }
    if (featureLevel !== 'core' && featureLevel !== 'compatibility') {
      throw new TypeError(`featureLevel is 'core' or 'compatibility', not ${JSON.stringify(featureLevel)}`);
    }
    if (draft !== undefined && typeof draft !== 'string' && !(draft instanceof Blob)) {
      throw new TypeError('draft is a model URL or a File / Blob');
    }
    if (draft !== undefined && lookup) throw new TypeError('draft and lookup: one or the other');
    if (mmproj !== undefined && typeof mmproj !== 'string' && !(mmproj instanceof Blob)) {
      throw new TypeError('mmproj is a vision projector URL or a File / Blob');
    }
    for (const [name, value] of [['imageMinTokens', imageMinTokens], ['imageMaxTokens', imageMaxTokens]]) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new TypeError(`${name} is a whole number of 1 or more, not ${JSON.stringify(value)}`);
      }
    }
    if (kvCache !== undefined && kvCache !== 'f32' && kvCache !== 'f16') {
      throw new TypeError(`kvCache is 'f32' or 'f16', not ${JSON.stringify(kvCache)}`);
    }
    if (!Number.isInteger(draftMax) || draftMax < 1 || draftMax > 31) {
      throw new TypeError(`draftMax is a whole number from 1 to 31, not ${JSON.stringify(draftMax)}`);
    }
    if (typeof draftPMin !== 'number' || !(draftPMin >= 0 && draftPMin <= 1)) {
      throw new TypeError(`draftPMin is a number from 0 to 1, not ${JSON.stringify(draftPMin)}`);
    }
    const url = typeof source === 'string' ? new URL(source, location.href).href : source;
    const draftUrl = typeof draft === 'string' ? new URL(draft, location.href).href : draft;
    const speculation = draft !== undefined || lookup ? { draft: draftUrl, draftMax, draftPMin, lookup } : null;
    const projector = typeof mmproj === 'string' ? new URL(mmproj, location.href).href : mmproj;
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    const channel = new Channel(worker);
    let stats;
    try {
      stats = await channel.request(
        {
          type: 'load',
          source: url,
          options: {
            nCtx,
            dropOldTurns,
            featureLevel,
            pooling,
            tuning: keptTuning(),
            speculation,
            mmproj: projector,
            imageMinTokens,
            imageMaxTokens,
            kvCache,
          },
        },
        { signal, onEvent: (e) => e.type === 'progress' && onProgress?.(e.event) },
      );
    } catch (e) {
      channel.close(e);
      throw e;
    }
    const engine = new Wick(channel, typeof source === 'string' ? url : source.name || 'local file', stats);
    if (tune && stats.untunedShapes > 0) engine.#tuneWhenIdle(onProgress);
    return engine;
  }

  /** Cached models: [{ url, size, cachedBytes, saved }]. */
  static cachedModels() {
    return cachedModels();
  }

  static deleteCachedModel(url) {
    return deleteCachedModel(url);
  }

  #stopTuning = null;

  constructor(channel, model, info) {
    this.channel = channel;
    this.model = model;
    this.info = info;
    this.chat = { completions: { create: (body, options) => this.#create(body, options) } };
    // Answered whole, as OpenAI's API answers; checked and shaped by the engine as `wick serve` does.
    this.embeddings = {
      create: (body, { signal } = {}) =>
        this.channel.request({ type: 'embed', body: JSON.stringify(body ?? null), model: this.model }, { signal }),
    };
    /** Resolves to { finished, stopped } when tuning ends (at once where there is none to do). */
    this.tuned = Promise.resolve({ finished: true, stopped: false });
  }

  #tuneWhenIdle(onProgress) {
    const stop = new AbortController();
    this.#stopTuning = () => stop.abort();
    const onEvent = (e) => {
      if (e.type !== 'progress') return;
      const { tuning, ...event } = e.event;
      if (tuning) keepTuning(tuning);
      onProgress?.(event);
    };
    this.tuned = this.channel.request({ type: 'tune' }, { signal: stop.signal, onEvent }).then(
      (result) => result,
      // Unloaded, or the device failed (the next request says so): tuning is an optimization.
      (e) => ({ finished: false, stopped: true, error: e.message }),
    );
  }

  /** Stops tuning after the candidate being timed; the shapes tuned so far keep their winners. */
  stopTuning() {
    this.#stopTuning?.();
    return this.tuned;
  }

  /** What a token costs and how fast the last reply went: tok/s, dispatches per token, the adapter. */
  stats() {
    return this.channel.request({ type: 'stats' });
  }

  /**
   * Times a decode step ('decode') or a prompt's chunk ('prefill') on the GPU, after the work under
   * way: resolves to { kernels: [[kernel, ms per run], ...] slowest first, each dispatch timed on its
   * own; wholeMs: the whole plan, its runs back to back in one submit }, or null for 'prefill' where the
   * model has no prefill plan. A profile, for seeing where a step's time goes; it writes only KV cache
   * rows later steps write again.
   */
  profile(plan = 'decode') {
    return this.channel.request({ type: 'profile', plan });
  }

  /** Frees the GPU memory and ends the worker. */
  async unload() {
    await this.channel.request({ type: 'unload' }).catch(() => {});
    this.channel.close(new Error('the model was unloaded'));
  }

  async #create(body, { signal } = {}) {
    // The engine parses and checks the body exactly as `wick serve` does; a bad one rejects with a
    // BadRequestError naming the field.
    const message = { type: 'chat', body: JSON.stringify(body ?? null) };
    const id = `chatcmpl-${crypto.randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const envelope = (object) => ({ id, object, created, model: this.model });
    // The reply's calls as OpenAI lists them, each with an id of this answer's.
    const toolCalls = (r) =>
      r.toolCalls.map(({ name, arguments: args }, i) => ({
        id: `call_${id.slice(9)}_${i}`,
        type: 'function',
        function: { name, arguments: args },
      }));
    if (!body?.stream) {
      const r = await this.channel.request(message, { signal });
      const reply = r.toolCalls.length
        ? { role: 'assistant', content: r.text || null, tool_calls: toolCalls(r) }
        : { role: 'assistant', content: r.text };
      // The model's reasoning, where its chat template marks it, apart from the answer.
      if (r.reasoning) reply.reasoning_content = r.reasoning;
      return {
        ...envelope('chat.completion'),
        choices: [{ index: 0, message: reply, finish_reason: r.finishReason, logprobs: logProbs(r) }],
        usage: usage(r),
      };
    }
    const includeUsage = Boolean(body.stream_options?.include_usage);
    const stream = new ChunkStream();
    const chunk = (delta, finish, logprobs = null) => ({
      ...envelope('chat.completion.chunk'),
      choices: [{ index: 0, delta, finish_reason: finish, logprobs }],
    });
    stream.push(chunk({ role: 'assistant', content: '' }, null));
    // The stream is handed out once the engine has taken the request (its first text, or the end), so
    // a request it refuses rejects here, as the OpenAI client's does.
    let accepted;
    let piecesHadLogProbs = false;
    const taken = new Promise((resolve, reject) => (accepted = { resolve, reject }));
    this.channel
      .request(message, {
        signal,
        onEvent: (e) => {
          if (e.type !== 'text') return;
          // Each piece's tokens' log-probabilities, where asked for, come with it.
          const logprobs = e.logprobs ? JSON.parse(e.logprobs) : null;
          piecesHadLogProbs ||= Boolean(logprobs);
          stream.push(chunk(delta(e.piece, e.reasoning), null, logprobs));
          accepted.resolve();
        },
      })
      .then(
        (r) => {
          // With tools the text comes whole at the end, read apart from the calls.
          if (body.tools?.length && (r.text || r.reasoning)) stream.push(chunk(delta(r.text, r.reasoning), null));
          if (r.toolCalls.length) {
            stream.push(chunk({ tool_calls: toolCalls(r).map((call, index) => ({ index, ...call })) }, null));
          }
          // A reply read as tool calls sent no pieces: its log-probabilities come with the last chunk.
          stream.push(chunk({}, r.finishReason, piecesHadLogProbs ? null : logProbs(r)));
          if (includeUsage) stream.push({ ...envelope('chat.completion.chunk'), choices: [], usage: usage(r) });
          stream.end();
          accepted.resolve();
        },
        (e) => {
          stream.fail(e);
          accepted.reject(e);
        },
      );
    await taken;
    return stream;
  }
}

/** A chunk's delta: the answer's new text and the reasoning's, each where there is some. */
function delta(content, reasoning) {
  const d = {};
  if (content) d.content = content;
  if (reasoning) d.reasoning_content = reasoning;
  return d;
}

/** OpenAI's `logprobs` of the reply (`{ content: [{ token, logprob, bytes, top_logprobs }] }`), or null. */
function logProbs(r) {
  return r.logProbs ? JSON.parse(r.logProbs) : null;
}

function usage(r) {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.promptTokens + r.completionTokens,
    // The prompt's tokens the KV cache already held from the conversation before.
    prompt_tokens_details: { cached_tokens: r.promptTokens - Math.min(r.promptProcessed, r.promptTokens) },
    // Where the request gave a prediction: its tokens the checks kept, and those they did not.
    ...(r.prediction && {
      completion_tokens_details: {
        accepted_prediction_tokens: r.prediction.accepted,
        rejected_prediction_tokens: r.prediction.rejected,
      },
    }),
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
