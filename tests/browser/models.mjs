// Browser tests of models through the package: the Vite-bundled package, each family the chat page
// offers beside the default one, and the default model on each kind of adapter, each reply against
// the native engine's. Registered by run.mjs.

import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPAT, GEMMA, GEMMA4, QWEN35, ROOT, TINY, WORK, apart, base, context, installed, keptShapes, nativeReply, openPage, profile, ranOn, responses, steered, test } from './harness.mjs';

test('the package bundled by Vite loads a model and answers (core WebGPU, the default)', async () => {
  // A Vite app that depends on the installed package: its worker and .wasm must come out as assets.
  const appRoot = join(WORK, 'vite-app');
  mkdirSync(join(appRoot, 'node_modules'), { recursive: true });
  cpSync(installed, join(appRoot, 'node_modules/wick-llm'), { recursive: true });
  writeFileSync(
    join(appRoot, 'index.html'),
    '<!doctype html><link rel="icon" href="data:,"><script type="module" src="./main.js"></script>\n',
  );
  writeFileSync(join(appRoot, 'main.js'), "import { Wick } from 'wick-llm';\nwindow.Wick = Wick;\n");
  const { build } = await import('vite');
  await build({ root: appRoot, base: './', logLevel: 'warn', configFile: false });
  responses.length = 0;
  const page = await openPage('/target/browser-test/vite-app/dist/');
  const seen = [];
  const onRequest = (r) => seen.push(new URL(r.url()).pathname);
  context.on('request', onRequest);
  const reply = await page.evaluate(async () => {
    await new Promise((done) => (window.Wick ? done() : addEventListener('load', done)));
    const engine = await window.Wick.load('../../tiny.gguf');
    const r = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    const stats = await engine.stats();
    await engine.unload();
    return { ...r, stats };
  });
  await page.close();
  ranOn(reply.stats);
  assert.equal(reply.stats.featureLevel, 'core');
  context.off('request', onRequest);
  assert.equal(reply.usage.completion_tokens, 3);
  const wasm = seen.filter((p) => p.endsWith('.wasm'));
  assert.ok(wasm.length && wasm.every((p) => p.includes('/vite-app/dist/assets/')), `wasm from ${wasm}`);
});

/**
 * A greedy reply of the package, on a page of its own, to one user message (asked twice: the second, a
 * regenerate, goes back to the state the first left where the prompt ended), with the engine's figures
 * and, where asked, its decode step's profile.
 */
async function packageReply(model, content, maxTokens, { profile = false, kvCache = 'f32' } = {}) {
  const page = await openPage('/target/browser-test/app/');
  const reply = await page.evaluate(async ({ model, content, maxTokens, adapter, profile, kvCache }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load(model, { ...adapter, tune: false, nCtx: 512, kvCache });
    const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens };
    const answer = await engine.chat.completions.create(body);
    const again = await engine.chat.completions.create(body);
    const stats = await engine.stats();
    const steps = profile ? await engine.profile('decode') : null;
    await engine.unload();
    const said = ({ reasoning_content, content }) => [reasoning_content, content].filter(Boolean).join('\n\n');
    const [text, regenerated] = [answer, again].map((a) => said(a.choices[0].message));
    const reasoning = answer.choices[0].message.reasoning_content ?? '';
    return { text, reasoning, again: regenerated, stats, profile: steps };
  }, { model, content, maxTokens, adapter: COMPAT, profile, kvCache });
  await page.close();
  ranOn(reply.stats);
  assert.equal(reply.again, reply.text, 'the same request again');
  return reply;
}

test("Gemma 3 270M (gemma3, no template in the file) answers in the package as the native engine does", async () => {
  const content = 'Name a color.';
  const reply = await packageReply(`/${GEMMA}`, content, 4);
  assert.equal(reply.text, await nativeReply(content, 4, GEMMA));
  assert.ok(reply.text.length > 0);
});

test('an f16 KV cache (kvCache): Gemma 3 270M answers in the package as the native engine does with --cache-type f16', async () => {
  const content = 'Name three colors.';
  const reply = await packageReply(`/${GEMMA}`, content, 12, { kvCache: 'f16' });
  assert.equal(reply.text, await nativeReply(content, 12, GEMMA, ['--cache-type', 'f16']));
  assert.ok(reply.text.length > 0);
});

test('a random-weight Qwen3.5 file (qwen35: Gated DeltaNet beside gated attention) answers in the package as the native engine does', async () => {
  const content = 'What is the capital of France?';
  const reply = await packageReply(`/${QWEN35}`, content, 16, { profile: true });
  const kinds = reply.profile.layerKinds.map(([kind, layers, ms]) => `${layers} ${kind} layers ${ms.toFixed(1)} ms`);
  console.log(`    ${reply.stats.dispatchesPerToken} dispatches a token; a step's ${kinds.join(', ')}`);
  // The file's recurrent_layers: [true, false, true, false].
  assert.deepEqual(reply.profile.layerKinds.map(([kind, layers]) => [kind, layers]).sort(), [['attention', 2], ['linear attention', 2]]);
  assert.equal(reply.text, await nativeReply(content, 16, QWEN35));
  // Qwen3.5's template opens the reasoning: the reply is read as reasoning, as natively.
  assert.ok(reply.reasoning.length > 0);
});

// The mixture-of-experts families (experts read by index on the GPU; gpt-oss's MXFP4 experts, sinks
// and harmony template), tiny random-weight files, each reply against the native engine's.
for (const [family, file] of [
  ['qwen3moe', 'tests/data/random-qwen3moe-q8_0.gguf'],
  ['qwen35moe', 'tests/data/random-qwen35moe-q8_0.gguf'],
  ['gpt-oss', 'tests/data/random-gpt-oss-mxfp4.gguf'],
]) {
  test(`a random-weight ${family} file (experts) answers in the package as the native engine does`, async () => {
    const content = 'What is the capital of France?';
    const reply = await packageReply(`/${file}`, content, 12);
    console.log(`    ${reply.stats.dispatchesPerToken} dispatches a token; ${JSON.stringify(reply.text.slice(0, 48))}`);
    assert.equal(reply.text, await nativeReply(content, 12, file));
  });
}

/**
 * Where a GGUF file's tensor `name` lies: { at, length } of its data, and `field`, where the header holds
 * its offset (a u64 from the start of the data section), and `dataStart`, `alignment`.
 */
function tensorPlace(bytes, name) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 8; // magic, version
  const u64 = () => Number(view.getBigUint64((p += 8) - 8, true));
  const u32 = () => view.getUint32((p += 4) - 4, true);
  const str = () => {
    const n = u64();
    return new TextDecoder().decode(bytes.subarray(p, (p += n)));
  };
  const nTensors = u64();
  const nKv = u64();
  const sizes = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (type) => {
    if (type === 8) return void str();
    if (type === 9) {
      const inner = u32();
      const n = u64();
      for (let i = 0; i < n; i++) skip(inner);
      return;
    }
    p += sizes[type];
  };
  let alignment = 32;
  for (let i = 0; i < nKv; i++) {
    const key = str();
    const type = u32();
    if (key === 'general.alignment') alignment = view.getUint32(p, true);
    skip(type);
  }
  let found = null;
  for (let i = 0; i < nTensors; i++) {
    const tensor = str();
    const dims = Array.from({ length: u32() }, u64);
    const type = u32();
    const field = p;
    const offset = u64();
    if (tensor === name) found = { dims, type, field, offset };
  }
  const dataStart = Math.ceil(p / alignment) * alignment;
  assert.equal(found.type, 8, `${name} is Q8_0 in this file`);
  const length = (found.dims.reduce((a, b) => a * b) / 32) * 34;
  return { at: dataStart + found.offset, length, field: found.field, dataStart, alignment };
}

test('a random-weight Gemma 4 file (gemma4: per-layer embeddings read by rows, shared KV layers) answers in the package as the native engine does, its per-layer table left on the server until read', async () => {
  // The file with its per-layer table moved 48 MiB out, past the chunks the reader fetches (and reads
  // ahead) while loading; the old copy stays where it was, unread.
  const original = readFileSync(join(ROOT, GEMMA4));
  const table = tensorPlace(original, 'per_layer_token_embd.weight');
  const offset = Math.ceil(((48 << 20) - table.dataStart) / table.alignment) * table.alignment;
  const moved = new Uint8Array(table.dataStart + offset + table.length);
  moved.set(original);
  moved.set(original.subarray(table.at, table.at + table.length), table.dataStart + offset);
  new DataView(moved.buffer).setBigUint64(table.field, BigInt(offset), true);
  const { state, url } = steered;
  state.files['/gemma4-far.gguf'] = { bytes: moved, etag: '"gemma4-far"' };
  state.log.length = 0;
  const [from, to] = [table.dataStart + offset, table.dataStart + offset + table.length - 1];
  const touched = () => state.log.filter((r) => r.path === '/gemma4-far.gguf' && r.end >= from && r.start <= to);

  const content = 'What is the capital of France?';
  const page = await openPage('/target/browser-test/app/');
  await page.evaluate(async ({ model, adapter }) => {
    const { Wick } = await import('wick-llm');
    window.engine = await Wick.load(model, { ...adapter, tune: false, nCtx: 512 });
  }, { model: `${url}/gemma4-far.gguf`, adapter: COMPAT });
  assert.deepEqual(touched(), [], 'the per-layer table was fetched while loading');
  const reply = await page.evaluate(async ({ content }) => {
    const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: 16 };
    const answer = await window.engine.chat.completions.create(body);
    const stats = await window.engine.stats();
    await window.engine.unload();
    return { text: answer.choices[0].message.content, stats };
  }, { content });
  await page.close();
  ranOn(reply.stats);
  assert.ok(touched().length > 0, 'the rows were read from the server');
  // Each token's row: 6 layers of 32 values, Q8_0.
  assert.equal(reply.stats.rowBytesPerToken, (6 * 32 * 34) / 32);
  assert.equal(reply.text, await nativeReply(content, 16, GEMMA4));
  assert.ok(reply.text.length > 0);
  delete state.files['/gemma4-far.gguf'];
});

// The default model on each kind of adapter, greedy against native, with where a step's time goes.
// Core mode (SwiftShader here) is several times slower: a shorter reply, and no kernel profile.
for (const [featureLevel, where, maxTokens] of [
  ['compatibility', 'a compatibility-mode WebGPU adapter', 12],
  ['core', 'core WebGPU', 6],
]) {
  test(`on ${where} the default model replies as the native engine does`, async () => {
    const content = 'What is 2+2?';
    const page = await openPage('/target/browser-test/app/');
    const result = await page.evaluate(async ({ content, featureLevel, maxTokens }) => {
      const { Wick } = await import('wick-llm');
      const options = { tune: false, nCtx: 512, featureLevel };
      const engine = await Wick.load('/models/SmolLM2-135M-Instruct.Q4_1.gguf', options);
      const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens };
      const answer = await engine.chat.completions.create(body);
      const stats = await engine.stats();
      const profile = featureLevel === 'core' ? null : await engine.profile('decode');
      await engine.unload();
      return { text: answer.choices[0].message.content, stats, profile };
    }, { content, featureLevel, maxTokens });
    await page.close();
    ranOn(result.stats);
    const { record, submit, wait, other } = result.stats.stepMs;
    const parts = `${record.toFixed(1)} recording, ${submit.toFixed(1)} submitting, ${wait.toFixed(0)} waiting, ${other.toFixed(1)} between`;
    let line = `${(1000 / result.stats.tokensPerSecond).toFixed(0)} ms a token (${parts})`;
    assert.ok(wait > 0 && record > 0, JSON.stringify(result));
    if (result.profile) {
      const { kernels, wholeMs } = result.profile;
      const kernelMs = kernels.reduce((sum, [, ms]) => sum + ms, 0);
      line += `; the plan alone ${wholeMs.toFixed(0)} ms, its dispatches one at a time ${kernelMs.toFixed(0)} ms`;
      assert.ok(kernels.some(([name]) => name.startsWith('matvecpairs')), JSON.stringify(kernels));
      assert.ok(kernels.every(([, ms]) => ms > 0) && wholeMs > 0, JSON.stringify(kernels));
    }
    console.log(`    ${line}`);
    assert.equal(result.stats.featureLevel, featureLevel);
    const mode = featureLevel === 'core' ? '(WebGPU)' : '(WebGPU compatibility mode)';
    assert.ok(result.stats.adapter.endsWith(mode), result.stats.adapter);
    assert.equal(result.text, await nativeReply(content, maxTokens));
  });
}

// WebGPU's subgroups, which wgpu's web backend neither asks for nor reports: the worker asks for them
// where the adapter has them (core WebGPU here, SwiftShader's subgroups of 4 lanes; the
// compatibility-mode adapter has none), and the engine's kernels that shuffle between lanes run. The
// tiny model tuned on core (the tuner checks every subgroup sum on the device first), then every
// matvec it tuned forced to sum its rows by shuffles, 4 threads a row: the reply is the native one.
test('on core WebGPU the device has subgroups, and products summed by shuffles reply as the native engine does', async () => {
  const content = 'tell me';
  const page = await openPage('/target/browser-test/app/', apart);
  const result = await page.evaluate(async (content) => {
    const { Wick } = await import('wick-llm');
    localStorage.removeItem('wick-llm:tuning');
    const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: 8 };
    const run = async (options) => {
      const engine = await Wick.load('../tiny.gguf', { featureLevel: 'core', ...options });
      await engine.tuned;
      const reply = await engine.chat.completions.create(body);
      const stats = await engine.stats();
      await engine.unload();
      return { text: reply.choices[0].message.content, stats };
    };
    const compat = await run({ featureLevel: 'compatibility', tune: false });
    const tuned = await run({});
    const kept = JSON.parse(localStorage.getItem('wick-llm:tuning'));
    const [adapter] = Object.keys(kept);
    let forced = 0;
    for (const [shape, kernel] of Object.entries(kept[adapter].matvec)) {
      if (kernel.threads_per_row === 0) continue; // a prompt's tile
      kept[adapter].matvec[shape] = { workgroup: 64, threads_per_row: 4, subgroup_sum: true, split: 'chunks' };
      forced++;
    }
    localStorage.setItem('wick-llm:tuning', JSON.stringify(kept));
    const shuffled = await run({ tune: false });
    localStorage.removeItem('wick-llm:tuning');
    return { compat, tuned, shuffled, forced, kept: kept[adapter] };
  }, content);
  await page.close();
  const { compat, tuned, shuffled, forced, kept } = result;
  ranOn(compat.stats);
  ranOn(shuffled.stats);
  assert.equal(compat.stats.subgroupSize ?? null, null, JSON.stringify(compat.stats));
  assert.equal(tuned.stats.subgroupSize, 4, JSON.stringify(tuned.stats));
  assert.equal(tuned.stats.untunedShapes, 0, JSON.stringify(tuned.stats)); // its tuning ran to the end
  assert.ok(forced > 0, JSON.stringify(kept));
  // Every shape ran as the kept tuning says: none dropped, none left to the default.
  assert.equal(shuffled.stats.tunedShapes, keptShapes(kept));
  assert.equal(shuffled.stats.untunedShapes, 0);
  console.log(`    ${forced} matvec shapes summed by shuffles of ${shuffled.stats.subgroupSize} lanes`);
  assert.equal(shuffled.text, await nativeReply(content, 8, TINY));
  assert.equal(tuned.text, shuffled.text);
});
