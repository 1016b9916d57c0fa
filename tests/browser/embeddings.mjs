// Browser tests of embeddings: the package's embeddings.create against llama.cpp's vectors for the same
// texts (tests/goldens/embeddings.json), and the example search page ranking by them. Registered by run.mjs.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPAT, ROOT, openPage, ranOn, test } from './harness.mjs';

// The random llama3 file, loaded with mean pooling: llama.cpp's record for it pooled the same way.
const FILE = 'tests/data/random-llama3.gguf';
const golden = JSON.parse(readFileSync(join(ROOT, 'tests/goldens/embeddings.json'), 'utf8'));
const record = golden.records.find((r) => r.file === FILE && r.pooling === 'mean' && !r.add_eos);
const texts = record.inputs.map((i) => i.text);
const want = record.inputs.map((i) => i.llama_cpp);

const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
const cosine = (a, b) => dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));

test("the package's embeddings match llama.cpp's, as floats and as base64", async () => {
  const page = await openPage('/target/browser-test/app/');
  const r = await page.evaluate(async ({ file, texts, adapter }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load(file, { ...adapter, tune: false, nCtx: 64, pooling: 'mean' });
    const floats = await engine.embeddings.create({ input: texts });
    const packed = await engine.embeddings.create({ input: texts[0], encoding_format: 'base64' });
    const bytes = Uint8Array.from(atob(packed.data[0].embedding), (c) => c.charCodeAt(0));
    const decoded = [...new Float32Array(bytes.buffer)];
    const refused = await engine.embeddings.create({ input: [] }).then(
      () => null,
      (e) => `${e.name}: ${e.message}`,
    );
    const stats = await engine.stats();
    await engine.unload();
    return { floats, decoded, refused, stats };
  }, { file: `/${FILE}`, texts, adapter: COMPAT });
  await page.close();
  ranOn(r.stats);
  assert.equal(r.floats.object, 'list');
  assert.deepEqual(r.floats.data.map((d) => d.index), [0, 1, 2, 3]);
  const cosines = r.floats.data.map((d, i) => cosine(d.embedding, want[i]));
  console.log(`    cosines with llama.cpp: ${cosines.map((c) => c.toFixed(7)).join(', ')}`);
  assert.ok(Math.min(...cosines) >= 0.9999, `cosines ${cosines}`);
  assert.equal(r.floats.usage.prompt_tokens, record.inputs.reduce((n, i) => n + i.ids.length, 0));
  assert.ok(r.decoded.every((x, i) => Math.abs(x - r.floats.data[0].embedding[i]) < 1e-7), 'base64 holds the floats');
  assert.match(r.refused, /^BadRequestError: input must not be empty/);
});

test('the example search page ranks paragraphs as llama.cpp\'s vectors do (core WebGPU)', async () => {
  const [query, ...paragraphs] = texts;
  const page = await openPage(`/examples/search/?model=/${FILE}&pooling=mean`);
  await page.fill('#paragraphs', paragraphs.join('\n'));
  await page.fill('#query', query);
  await page.click('#search');
  await page.waitForFunction(() => /^ranked|Error/.test(document.getElementById('status').textContent), null, {
    timeout: 300_000,
  });
  const status = await page.textContent('#status');
  const ranked = await page.$$eval('#results li', (items) => items.map((li) => li.childNodes[1].textContent));
  await page.close();
  assert.match(status, /^ranked 3 paragraphs/);
  const byLlamaCpp = paragraphs
    .map((text, i) => ({ text, score: dot(want[0], want[i + 1]) }))
    .sort((a, b) => b.score - a.score)
    .map((p) => p.text);
  assert.deepEqual(ranked, byLlamaCpp);
});
