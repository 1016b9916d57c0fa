// Types of wick-llm: GGUF language models on the user's GPU (WebGPU), with the OpenAI client's chat API.

/** Load progress, in this order. 'download': bytes of the file, each counted once (`fromCache` of them
 * came from the browser's cache, the rest from the network); 'gpu': bytes in GPU memory; 'warning':
 * something the user should know (`message`), the load goes on. After `Wick.load` resolves, 'tuning':
 * candidate kernel shapes timed (`loaded`) of those to time (`total`), and kernel shapes done
 * (`shapesDone`) of `shapes`. With a `draft` model, 'draft-download' and 'draft-gpu' say the same of it,
 * after the model's; with a vision projector (`mmproj`), 'mmproj-download' and 'mmproj-gpu'. */
export interface LoadProgress {
  phase: 'download' | 'gpu' | 'draft-download' | 'draft-gpu' | 'mmproj-download' | 'mmproj-gpu' | 'tuning' | 'warning';
  loaded: number;
  total: number;
  fromCache?: number;
  shapes?: number;
  shapesDone?: number;
  message?: string;
}

export interface LoadOptions {
  onProgress?: (progress: LoadProgress) => void;
  /** Aborting cancels the load; `Wick.load` then rejects with an AbortError. */
  signal?: AbortSignal;
  /** Context length in tokens (default 2048, at most the model's). */
  nCtx?: number;
  /** When a conversation and its reply outgrow the context: false (the default) ends the reply with
   * finish_reason 'length' (a conversation that does not fit at all is refused); true drops the oldest
   * turns, keeping system messages and the last user message, and goes on. */
  dropOldTurns?: boolean;
  /** Once loaded, time the model's kernel shapes that this adapter has no winners for yet at every
   * candidate kernel shape and use the fastest (progress phase 'tuning'): once per shape, in the
   * engine's idle moments (between requests, a candidate at a time, never during one), the largest
   * matrices first. The winners are kept in localStorage, by adapter, and every later load on the same
   * adapter starts with them. Default true; false runs the kept or default shapes. */
  tune?: boolean;
  /** 'core' (the default) takes a core WebGPU adapter, or a compatibility-mode one where the browser
   * offers only that (OpenGL ES / D3D11 class devices); 'compatibility' takes a compatibility-mode
   * adapter even where a core one exists. `stats().featureLevel` says which the engine runs on. */
  featureLevel?: 'core' | 'compatibility';
  /** How embeddings pool the tokens' states. An embedding model's file names its own (used when this
   * is absent); a chat model makes embeddings only where this names one. */
  pooling?: 'mean' | 'cls' | 'last';
  /** Speculative decoding with a draft model: a smaller GGUF (URL or File / Blob) with this model's
   * vocabulary (another vocabulary is refused, naming the first token that differs). It proposes the
   * next few tokens and the model checks them in one step; replies are as without (greedy: token for
   * token; sampled: the same distribution). */
  draft?: string | Blob;
  /** Speculative decoding with no second model: drafts from the prompt and the reply so far (where the
   * last tokens stood before, what followed them). Not with `draft`. */
  lookup?: boolean;
  /** Tokens a step proposes at most, 1 to 31 (default 6; fewer while drafts fall). */
  draftMax?: number;
  /** The draft model stops drafting after a token it gives less than this chance (its softmax there),
   * 0 to 1 (default 0.75; 0 drafts as many as the step proposes): tokens after an unsure one mostly
   * fall. */
  draftPMin?: number;
  /** The model's vision projector (an mmproj GGUF as llama.cpp makes them; Gemma 3's, Gemma 4's or Qwen3.5's), URL or File /
   * Blob: chat messages may then show images (`ImagePart`), with speculative decoding too. */
  mmproj?: string | Blob;
  /** The fewest tokens an image becomes, where the projector sizes images to their own (Gemma 4's:
   * 70 unless told; Qwen3.5's: 8), as llama.cpp's --image-min-tokens. */
  imageMinTokens?: number;
  /** The most tokens an image becomes, where the projector sizes images to their own (Gemma 4's:
   * 1120 unless told; Qwen3.5's: 4096): fewer encode faster in less GPU memory, as llama.cpp's
   * --image-max-tokens. */
  imageMaxTokens?: number;
  /** How the KV cache holds keys and values: 'f32' (exact) or 'f16' (half the GPU memory for the same
   * context, and half the bytes attention reads, as llama.cpp keeps it). Unless told, f16 on GPUs
   * and f32 where the adapter runs on the CPU (SwiftShader). */
  kvCache?: 'f32' | 'f16';
}

/** OpenAI's embeddings request. */
export interface EmbeddingRequest {
  /** A text, texts, token ids, or lists of them. */
  input: string | string[] | number[] | number[][];
  model?: string;
  /** 'float' (the default): number arrays; 'base64': each vector's little-endian f32 bytes. */
  encoding_format?: 'float' | 'base64';
  /** Keep the first this many values, normalized again (Matryoshka-trained models). */
  dimensions?: number;
  /** Cut an input longer than the context to fit rather than refuse it (not OpenAI's). */
  truncate?: boolean;
}

/** OpenAI's embeddings answer: unit vectors, one per input in order. */
export interface CreateEmbeddingResponse {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export type TextPart = { type: 'text'; text: string };
/** An image, for a model loaded with `mmproj`: any URL the page can fetch (a data: URL, a blob: URL of
 * a File, an http(s) URL), decoded by the browser. It stands where the part stands in the message. */
export type ImagePart = { type: 'image_url'; image_url: { url: string } };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string | (TextPart | ImagePart)[] | null;
  /** An assistant's calls, as a reply returned them. */
  tool_calls?: ToolCall[];
  /** A tool's answer (`role: 'tool'`): the id of the call it answers. */
  tool_call_id?: string;
}

/** A call the model made; `arguments` is a JSON object as text, matching the tool's parameters. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A function the model may call; `parameters` is a JSON schema of its arguments object. */
export interface Tool {
  type: 'function';
  function: { name: string; description?: string; parameters?: object };
}

export interface ChatCompletionRequest {
  messages: ChatMessage[];
  /** 0 to 2; 0 is greedy. Default 1. */
  temperature?: number;
  /** 0 to 1. Default 1. */
  top_p?: number;
  /** -2 to 2, over the last 64 tokens (default 0, none): subtracted from a token's logit once if it
   * is there (presence), once a time it is there (frequency). */
  presence_penalty?: number;
  frequency_penalty?: number;
  /** Token id (as a string) to a bias from -100 to 100, added to the token's logit before the
   * penalties: -100 all but bans it, 100 all but forces it. An id past the vocabulary is refused. */
  logit_bias?: Record<string, number>;
  /** llama.cpp's server's fields. top_k: the k most likely tokens only (0, the default: all); from 1
   * to 64 they are found on the GPU and only they are read back. min_p: 0 to 1 (default 0).
   * repeat_penalty: over the last 64 tokens (default 1, none). */
  top_k?: number;
  min_p?: number;
  repeat_penalty?: number;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  seed?: number;
  /** Up to 4 strings; the reply ends before the first one and leaves it out. */
  stop?: string | string[] | null;
  n?: 1;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  /** JSON that always parses: any object, or matching a schema (a grammar masks every token). */
  response_format?:
    | { type: 'text' }
    | { type: 'json_object' }
    | { type: 'json_schema'; json_schema: { name: string; schema?: object; strict?: boolean | null } };
  /** Functions the model may call; the reply's calls come back in `message.tool_calls`. */
  tools?: Tool[];
  /** 'auto' (the default with tools): text or a call; 'required': a call; 'none': text; or one named function. */
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
  /** Whether a reply may make several calls (the default), where the model's template writes
   * several (`<tool_call>` blocks); false: one call at most. */
  parallel_tool_calls?: boolean;
  /** Each reply token's log-probability (after the penalties), with the `top_logprobs` (0 to 20)
   * likeliest tokens at its step. Streamed, each chunk carries its own tokens'. */
  logprobs?: boolean;
  top_logprobs?: number;
  /** What the reply is expected to say (a file with a few lines to change): where the model was
   * loaded to speculate (`draft` or `lookup`), the reply's drafts come from it first. The reply is the
   * model's own either way. */
  prediction?: { type: 'content'; content: string | { type: 'text'; text: string }[] } | null;
  /** Accepted and ignored: there is one model. */
  model?: string;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** cached_tokens: the prompt's tokens the KV cache already held from the conversation before. */
  prompt_tokens_details: { cached_tokens: number };
  /** Where the request gave a prediction: its tokens the checks kept, and those drafted and not kept. */
  completion_tokens_details?: { accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

export interface TokenLogProb {
  token: string;
  logprob: number;
  /** The token's bytes (its `token` text shows a piece of a character as U+FFFD). */
  bytes: number[];
}

export interface ChoiceLogProbs {
  content: (TokenLogProb & { top_logprobs: TokenLogProb[] })[];
  refusal: null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    /** reasoning_content: what a reasoning model (Qwen 3, gpt-oss) thought before its answer. */
    message: { role: 'assistant'; content: string | null; reasoning_content?: string; tool_calls?: ToolCall[] };
    finish_reason: FinishReason;
    /** With `logprobs: true`. */
    logprobs: ChoiceLogProbs | null;
  }[];
  usage: CompletionUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: 'assistant';
      content?: string;
      reasoning_content?: string;
      tool_calls?: (ToolCall & { index: number })[];
    };
    finish_reason: FinishReason | null;
    /** With `logprobs: true`, on the chunk that finishes. */
    logprobs: ChoiceLogProbs | null;
  }[];
  /** Only on the last chunk, and only with `stream_options.include_usage`. */
  usage?: CompletionUsage;
}

/** A request the engine refused: a field of the wrong type or out of range, or a conversation that
 * does not fit the context. `message` names what is wrong; `name` is 'BadRequestError'. */
export type BadRequestError = Error & { name: 'BadRequestError' };

export interface RequestOptions {
  /** Aborting stops the reply; the request rejects (or the stream throws) with an AbortError. */
  signal?: AbortSignal;
}

export interface EngineStats {
  /** As the browser names it, with the feature level: "(WebGPU)" or "(WebGPU compatibility mode)". */
  adapter: string;
  featureLevel: 'core' | 'compatibility';
  architecture: string;
  nCtx: number;
  dispatchesPerToken: number;
  submitsPerToken: number;
  weightBytesPerToken: number;
  /** Bytes a token reads from the model file itself: its rows of a table left off the GPU (Gemma 4's
   * per-layer embeddings, read through the model's reader); 0 for most models. */
  rowBytesPerToken: number;
  /** This model's kernel shapes (matvecs', a prompt's recurrence's and attention's forms) that run
   * tuned on this adapter. */
  tunedShapes: number;
  /** This model's kernel shapes with no tuned kernel shape on this adapter yet (tuning is under way, was
   * stopped, or `tune: false`). */
  untunedShapes: number;
  /** The fewest lanes of the device's subgroups (WebGPU's `subgroups`, asked for where the adapter
   * has them), which the tuner may give kernels that pass its check on the device; null where it has
   * none. */
  subgroupSize: number | null;
  /** Of the last reply; null before the first. */
  tokensPerSecond: number | null;
  promptTokensPerSecond: number | null;
  /** The last prompt's tokens, and how many of them were run (the rest came from earlier turns). */
  lastPromptTokens: number | null;
  lastPromptProcessed: number | null;
  /** Of the last reply: bytes copied back from the GPU per token for the sampler (the top-k
   * candidates, 8 bytes each; the greedy choice, 4; or the whole row of logits where the sampler
   * needs it: top_k 0 or above 64). */
  readBackBytesPerToken: number | null;
  /** Of the last reply: a generating step's wall time in parts, in ms. */
  stepMs: StepMs | null;
  /** The worker's wasm heap, which never holds the model. */
  wasmMemoryBytes: number;
  /** Where the model speculates (`draft`, `lookup`): what its checks so far proposed and kept. */
  speculation: {
    checks: number;
    proposed: number;
    accepted: number;
    tokensPerCheck: number;
    /** What the sizing of drafts measured (ms): a plain step, a check by its rows ([rows, ms] pairs), a drafted token. */
    stepMs: number | null;
    checkMs: [number, number][];
    draftedTokenMs: number | null;
  } | null;
}

export interface StepMs {
  /** Writing the step's inputs and recording its GPU pass. */
  record: number;
  /** Recording the next step's GPU pass while the GPU ran this one (in none of the parts a step waits on). */
  recordAhead: number;
  /** The submit call. */
  submit: number;
  /** From the submit to the values read back: the GPU's work, then the map. */
  wait: number;
  /** A `response_format`'s grammar: the mask of allowed tokens and its move past the token picked (0 without one). */
  mask: number;
  /** Everything else between two steps: sampling, detokenizing, streaming the text to the page. */
  other: number;
}

export interface Profile {
  /** [kernel, ms per run] pairs, slowest first; each dispatch timed on its own. */
  kernels: [string, number][];
  /** The whole plan per run, its runs back to back in one submit (no readback, no work between). */
  wholeMs: number;
  /**
   * [kind, layers, ms per run] for each kind of layer (`attention`, `linear attention`), where the
   * model names them (the dense block's families; deepseek2 does not): a Qwen3.5 step's share in its
   * linear-attention layers.
   */
  layerKinds: [string, number, number][];
}

export interface TuningResult {
  finished: boolean;
  stopped: boolean;
  /** Why tuning ended early, where it failed (the next request reports a lost device itself). */
  error?: string;
}

export interface CachedModel {
  url: string;
  /** The file's size, and how much of it is cached. */
  size: number;
  cachedBytes: number;
  /** When it was first cached, in ms since the epoch. */
  saved: number;
}

export declare class Wick {
  /** Loads a model from a URL (read by range requests, cached) or a File / Blob. */
  static load(source: string | Blob, options?: LoadOptions): Promise<Wick>;
  static cachedModels(): Promise<CachedModel[]>;
  static deleteCachedModel(url: string): Promise<void>;

  /** The model's URL or file name. */
  readonly model: string;
  /** The engine's figures as the load left them (`stats()` asks again, after the work under way). */
  readonly info: EngineStats;
  readonly chat: {
    completions: {
      create(body: ChatCompletionRequest & { stream: true }, options?: RequestOptions): Promise<AsyncIterable<ChatCompletionChunk>>;
      create(body: ChatCompletionRequest & { stream?: false | null }, options?: RequestOptions): Promise<ChatCompletion>;
      create(body: ChatCompletionRequest, options?: RequestOptions): Promise<ChatCompletion | AsyncIterable<ChatCompletionChunk>>;
    };
  };
  /** Embeddings, for models that make them (an embedding model, or a chat model loaded with a
   * `pooling`); others reject with a BadRequestError, as a bad request does. */
  readonly embeddings: {
    create(body: EmbeddingRequest, options?: RequestOptions): Promise<CreateEmbeddingResponse>;
  };
  stats(): Promise<EngineStats>;
  /** Times a decode step or a prompt's chunk on the GPU, kernel by kernel and whole (null for
   * 'prefill' where the model has no prefill plan). */
  profile(plan?: 'decode' | 'prefill'): Promise<Profile | null>;
  /** Settles when tuning ends: every shape timed (`finished`), or stopped (`stopTuning`, an unload).
   * Resolved at once where there was nothing to tune. */
  readonly tuned: Promise<TuningResult>;
  /** Stops tuning after the candidate being timed; shapes already tuned keep their winners. */
  stopTuning(): Promise<TuningResult>;
  /** Frees the GPU memory and ends the engine's worker; later calls reject. */
  unload(): Promise<void>;
}
