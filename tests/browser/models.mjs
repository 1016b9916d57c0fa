// Browser tests of models through the package: the Vite-bundled package, each family the chat page
// offers beside the default one, and the default model on each kind of adapter, each reply against
// the native engine's. Registered by run.mjs.

import assert from 'node:assert/strict';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPAT, GEMMA, QWEN35, WORK, base, context, installed, nativeReply, openPage, profile, ranOn, responses, test } from './harness.mjs';

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
async function packageReply(model, content, maxTokens, { profile = false } = {}) {
  const page = await openPage('/target/browser-test/app/');
  const reply = await page.evaluate(async ({ model, content, maxTokens, adapter, profile }) => {
    const { Wick } = await import('wick-llm');
    const engine = await Wick.load(model, { ...adapter, tune: false, nCtx: 512 });
    const body = { messages: [{ role: 'user', content }], temperature: 0, max_tokens: maxTokens };
    const answer = await engine.chat.completions.create(body);
    const again = await engine.chat.completions.create(body);
    const stats = await engine.stats();
    const steps = profile ? await engine.profile('decode') : null;
    await engine.unload();
    const [text, regenerated] = [answer, again].map((a) => a.choices[0].message.content);
    return { text, again: regenerated, stats, profile: steps };
  }, { model, content, maxTokens, adapter: COMPAT, profile });
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

test('a random-weight Qwen3.5 file (qwen35: Gated DeltaNet beside gated attention) answers in the package as the native engine does', async () => {
  const content = 'What is the capital of France?';
  const reply = await packageReply(`/${QWEN35}`, content, 16, { profile: true });
  const kinds = reply.profile.layerKinds.map(([kind, layers, ms]) => `${layers} ${kind} layers ${ms.toFixed(1)} ms`);
  console.log(`    ${reply.stats.dispatchesPerToken} dispatches a token; a step's ${kinds.join(', ')}`);
  // The file's recurrent_layers: [true, false, true, false].
  assert.deepEqual(reply.profile.layerKinds.map(([kind, layers]) => [kind, layers]).sort(), [['attention', 2], ['linear attention', 2]]);
  assert.equal(reply.text, await nativeReply(content, 16, QWEN35));
  assert.ok(reply.text.length > 0);
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
