// Byte sources for the engine: a model URL read by HTTP range requests (through the Cache API, so a
// reload reads nothing twice and an interrupted download resumes), or a local File. Each is a reader
// { size, name, read(offset, length) -> Promise<Uint8Array> }; the engine asks for the header, then for
// each tensor in pieces, and copies each piece into its GPU buffer.

import { openCache, validatorOf } from './cache.js';

/** Bytes per range request and per cache entry. */
export const CHUNK = 8 << 20;
/** Range requests kept in flight ahead of the engine. */
const AHEAD = 4;
/** Chunks kept in memory (the worker's JS heap, not wasm's) once read. */
const KEEP = 8;
/** Reads shorter than this do not start reading ahead. */
const SMALL_READ = 64 << 10;

export class SourceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SourceError';
  }
}

/** A reader over a File or Blob: slices are read as they are asked for. */
export function fileReader(file, signal) {
  return {
    size: file.size,
    name: file.name || 'local file',
    async read(offset, length) {
      signal?.throwIfAborted();
      // The engine checks the range against `size` before it asks, and the length of what it gets.
      return new Uint8Array(await file.slice(offset, offset + length).arrayBuffer());
    },
  };
}

/**
 * A reader over a URL. `onDownload(loaded, total, fromCache)` hears of the file's bytes as they arrive,
 * each byte once (a piece read again later is not counted again): `loaded` in all, `fromCache` of them
 * from the browser's cache rather than the network. `onWarning(message)` hears of trouble that does
 * not stop the load (a full cache).
 */
export async function urlReader(url, { signal, onDownload = () => {}, onWarning = () => {} } = {}) {
  const probe = await rangeFetch(url, 0, 0, signal);
  const size = totalSize(url, probe);
  const validator = validatorOf(probe.headers);
  await probe.body?.cancel();
  const cache = await openCache(url, size, validator, onWarning);

  // Chunk index -> { bytes: Promise<Uint8Array>, settled }, least recently used first. The engine reads
  // tensors in the model's order, which jumps back and forth within a layer, so chunks are kept a while
  // rather than dropped once passed; one still on its way is never dropped (it would be fetched twice).
  const chunks = new Map();
  const chunkCount = Math.ceil(size / CHUNK);
  const counted = new Set(); // chunks whose bytes are in `loaded`
  let loaded = 0;
  let fromCache = 0;
  const arrived = (index, bytes, cached) => {
    if (counted.has(index)) return;
    counted.add(index);
    loaded += bytes;
    if (cached) fromCache += bytes;
    onDownload(loaded, size, fromCache);
  };

  const fetchChunk = async (index) => {
    const start = index * CHUNK;
    const end = Math.min(size, start + CHUNK) - 1;
    const cached = await cache.get(index);
    if (cached && cached.length === end - start + 1) {
      arrived(index, cached.length, true);
      return cached;
    }
    const response = await rangeFetch(url, start, end, signal);
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (bytes.length !== end - start + 1) {
      throw new SourceError(`${url}: asked for bytes ${start}-${end}, got ${bytes.length} bytes`);
    }
    arrived(index, bytes.length, false);
    await cache.put(index, bytes);
    return bytes;
  };
  const chunk = (index) => {
    let entry = chunks.get(index);
    chunks.delete(index);
    if (!entry) {
      entry = { bytes: fetchChunk(index), settled: false };
      entry.bytes.then(
        () => (entry.settled = true),
        () => chunks.delete(index), // a failed fetch is tried again by the next read
      );
    }
    chunks.set(index, entry);
    return entry.bytes;
  };
  const evict = () => {
    let extra = chunks.size - KEEP;
    for (const [index, entry] of chunks) {
      if (extra <= 0) break;
      if (entry.settled) {
        chunks.delete(index);
        extra--;
      }
    }
  };

  return {
    size,
    name: url,
    async read(offset, length) {
      const first = Math.floor(offset / CHUNK);
      const last = Math.floor((offset + length - 1) / CHUNK);
      const wanted = [];
      for (let i = first; i <= last; i++) wanted.push(chunk(i));
      // Reads ahead while the engine loads tensors in order; not for the small scattered reads after
      // loading (a token's row of Gemma 4's per-layer table), where the next chunks are not wanted, nor
      // for the header's prefixes (from offset 0): the engine allocates every buffer before it reads a
      // weight, and a model the adapter cannot hold is refused with nothing more fetched.
      if (length >= SMALL_READ && offset > 0) {
        for (let i = last + 1; i <= Math.min(chunkCount - 1, last + AHEAD); i++) if (!chunks.has(i)) chunk(i);
      }
      evict();
      const out = new Uint8Array(length);
      for (let i = first; i <= last; i++) {
        const bytes = await wanted[i - first];
        const from = Math.max(offset, i * CHUNK);
        const to = Math.min(offset + length, i * CHUNK + bytes.length);
        out.set(bytes.subarray(from - i * CHUNK, to - i * CHUNK), from - offset);
      }
      return out;
    },
  };
}

/** A 206 response for bytes start..=end, or an error that says what the server did instead. */
async function rangeFetch(url, start, end, signal) {
  let response;
  try {
    // no-store: the bytes go to the Cache API below; the HTTP cache would keep a second copy, and may
    // split or revalidate range requests on its own.
    response = await fetch(url, { headers: { Range: `bytes=${start}-${end}` }, signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new SourceError(
      `cannot fetch ${url}: a network error, or the server does not allow this page's origin (CORS)`,
    );
  }
  if (response.status === 206) return response;
  await response.body?.cancel();
  if (response.status === 200) {
    throw new SourceError(
      `the server of ${url} ignores Range requests (it answered with the whole file); ` +
        'Wick streams models by range and needs a server that answers 206 Partial Content',
    );
  }
  if (response.status === 416) {
    throw new SourceError(`${url}: the file is shorter than its header says (HTTP 416)`);
  }
  throw new SourceError(`cannot fetch ${url}: HTTP ${response.status} ${response.statusText}`.trim());
}

function totalSize(url, response) {
  const match = /\/(\d+)$/.exec(response.headers.get('Content-Range') || '');
  if (!match) {
    throw new SourceError(
      `${url}: the server answered a range request without the file's size (Content-Range); ` +
        'if it is on another origin, it must expose Content-Range to this page (CORS)',
    );
  }
  return Number(match[1]);
}
