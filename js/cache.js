// Downloaded model bytes, kept in the browser's Cache API in CHUNK-sized pieces. Each piece remembers
// the validator (ETag, else Last-Modified) of the file it came from: a file that changed on the server
// is fetched again. A model's manifest entry makes it listable and deletable.

const CACHE_NAME = 'wick-models-v1';

function pieceKey(url, index) {
  const key = new URL(url, self.location.href);
  key.searchParams.set('wick-piece', String(index));
  return key.href;
}

function manifestKey(url) {
  const key = new URL(url, self.location.href);
  key.searchParams.set('wick-manifest', '1');
  return key.href;
}

/** The header that tells whether a file changed, or null when the server sends none. */
export function validatorOf(headers) {
  return headers.get('ETag') || headers.get('Last-Modified') || null;
}

function available() {
  return typeof caches !== 'undefined';
}

/**
 * The cache of one model file. Without a validator (or without the Cache API, as on plain http from
 * another host) nothing is cached: a changed file could not be told from the one kept.
 */
export async function openCache(url, size, validator, onWarning) {
  if (!available() || !validator) {
    return { get: async () => null, put: async () => {} };
  }
  const cache = await caches.open(CACHE_NAME);
  let full = false;
  const manifest = { url: new URL(url, self.location.href).href, size, validator, saved: Date.now() };
  await cache.put(manifestKey(url), new Response(JSON.stringify(manifest))).catch(() => {});
  return {
    async get(index) {
      const response = await cache.match(pieceKey(url, index));
      if (!response) return null;
      if (response.headers.get('x-wick-validator') !== validator) {
        await cache.delete(pieceKey(url, index));
        return null;
      }
      return new Uint8Array(await response.arrayBuffer());
    },
    async put(index, bytes) {
      if (full) return;
      const headers = {
        'x-wick-validator': validator,
        'x-wick-bytes': String(bytes.length),
        'Content-Type': 'application/octet-stream',
      };
      try {
        await cache.put(pieceKey(url, index), new Response(bytes, { headers }));
      } catch (e) {
        full = true;
        onWarning(
          e.name === 'QuotaExceededError'
            ? 'the browser storage is full: the rest of this model is not cached and will download again next time'
            : `the model could not be cached: ${e.message}`,
        );
      }
    },
  };
}

/** Models with bytes in the cache: [{ url, size, cachedBytes, saved }]. */
export async function cachedModels() {
  if (!available()) return [];
  const cache = await caches.open(CACHE_NAME);
  const models = new Map();
  for (const request of await cache.keys()) {
    const key = new URL(request.url);
    if (key.searchParams.has('wick-manifest')) {
      const manifest = await (await cache.match(request)).json();
      const entry = models.get(manifest.url) || { cachedBytes: 0 };
      models.set(manifest.url, { ...entry, ...manifest });
    }
  }
  for (const request of await cache.keys()) {
    const key = new URL(request.url);
    if (!key.searchParams.has('wick-piece')) continue;
    key.searchParams.delete('wick-piece');
    const model = models.get(key.href);
    const piece = await cache.match(request);
    if (model && piece) model.cachedBytes += Number(piece.headers.get('x-wick-bytes')) || 0;
  }
  return [...models.values()].map(({ url, size, cachedBytes, saved }) => ({ url, size, cachedBytes, saved }));
}

/** Deletes every cached byte of a model. */
export async function deleteCachedModel(url) {
  if (!available()) return;
  const cache = await caches.open(CACHE_NAME);
  const base = new URL(url, self.location.href).href;
  for (const request of await cache.keys()) {
    const key = new URL(request.url);
    key.searchParams.delete('wick-piece');
    key.searchParams.delete('wick-manifest');
    if (key.href === base) await cache.delete(request);
  }
}
