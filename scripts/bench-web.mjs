#!/usr/bin/env node
// Decode speed in the browser: loads a model through the package in headless Chromium and times
// replies that read back the greedy choice, the top-k candidates, or the whole row of logits. Prints a
// markdown table: per round and readback, the prompt's tokens run and their rate, tokens, decode tok/s
// and ms/token (from the package's stats), a step's parts (recording, submitting, waiting for the GPU
// and the readback, and the rest: sampling, detokenizing, messages), and bytes read back per token. WebGPU is core mode on SwiftShader unless --compat: then
// compatibility mode on Dawn's OpenGL ES backend over ANGLE over Vulkan (here lavapipe, the adapter
// native Wick uses). Default kernel shapes unless --tune: then the package tunes them first, from
// nothing (the browser profile is new), and the header counts the kernels the tuner gave subgroup
// sums and their lanes. --profile then times each kernel of a decode
// step alone and the whole plan without readback, as `wick bench --profile` does natively. --embed
// TEXTS.json (a JSON array of strings) times embeddings instead: the texts in one request, after one
// of the first that warms up, the model pooled by --pooling (mean by default; it overrides what a
// file names). Needs `npm run build` (pkg/) and the model.
// --greedy runs the greedy reply alone and prints its text and its tokens' bytes (to set against
// `wick serve`'s for the same request, with `logprobs: true`), with the time the load took: for models too large to time every readback of.
// --draft FILE or --lookup speculates (`Wick.load`'s draft and lookup) and times the greedy reply alone,
// with what the checks kept.
// --mmproj FILE --image FILE times an image in a chat message instead: per round, the image with one
// pixel changed (so that it is encoded again, not found among those encoded before) and the prompt,
// to the first token; the prompt's part from the package's stats, the rest the image's encoding.
// Usage: node scripts/bench-web.mjs MODEL [--tokens N] [--rounds N] [--prompt TEXT] [--compat] [--tune] [--profile] [--greedy]
//        [--draft FILE | --lookup]
//        node scripts/bench-web.mjs MODEL --embed TEXTS.json [--pooling mean|cls|last] [--compat]
//        node scripts/bench-web.mjs MODEL --mmproj FILE --image FILE [--rounds N] [--prompt TEXT] [--compat]

import { chromium } from 'playwright-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './serve-web.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args.splice(i, 2)[1] : fallback;
};
const tokens = Number(option('--tokens', 6));
const rounds = Number(option('--rounds', 2));
const prompt = option('--prompt', 'Hi');
const flag = (name) => args.includes(name) && args.splice(args.indexOf(name), 1).length > 0;
const compat = flag('--compat');
const profiled = flag('--profile');
const tuned = flag('--tune');
const greedyOnly = flag('--greedy');
const embedTexts = option('--embed', null);
const pooling = option('--pooling', undefined);
const draftFile = option('--draft', null);
const lookup = flag('--lookup');
const mmprojFile = option('--mmproj', null);
const imageFile = option('--image', null);
if (args.length !== 1 || !mmprojFile !== !imageFile) {
  console.error('usage: node scripts/bench-web.mjs MODEL [--tokens N] [--rounds N] [--prompt TEXT]');
  process.exit(2);
}
const model = '/' + relative(ROOT, resolve(args[0]));
const speculation = { ...(draftFile ? { draft: '/' + relative(ROOT, resolve(draftFile)) } : {}), ...(lookup ? { lookup } : {}) };

const server = await serve({ root: ROOT, port: 0 });
const base = `http://127.0.0.1:${server.address().port}`;
const browserProfile = mkdtempSync(join(tmpdir(), 'wick-bench-'));
const context = await chromium.launchPersistentContext(browserProfile, {
  headless: true,
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--no-first-run',
    '--disable-background-networking',
    '--enable-unsafe-webgpu',
    '--enable-webgpu-developer-features', // fills adapter.info
    ...(compat ? ['--use-angle=vulkan', '--use-webgpu-adapter=opengles'] : []),
  ],
});
context.setDefaultTimeout(3_600_000);
const page = await context.newPage();
page.on('console', (m) => m.type() === 'error' && console.error(`console: ${m.text()}`));
// A page of an app that imports the package from this repository.
await page.route(`${base}/bench.html`, (route) =>
  route.fulfill({
    contentType: 'text/html',
    body: `<!doctype html><script type="importmap">{ "imports": { "wick-llm": "/js/index.js" } }</script>`,
  }),
);
await page.goto(`${base}/bench.html`);

if (embedTexts) {
  const texts = JSON.parse(readFileSync(embedTexts, 'utf8'));
  const r = await page.evaluate(
    async ({ model, texts, featureLevel, pooling }) => {
      const { Wick } = await import('wick-llm');
      const engine = await Wick.load(model, { tune: false, nCtx: 512, featureLevel, pooling });
      await engine.embeddings.create({ input: texts[0] });
      const start = performance.now();
      const tokens = (await engine.embeddings.create({ input: texts })).usage.prompt_tokens;
      const ms = performance.now() - start;
      const { adapter } = await engine.stats();
      await engine.unload();
      return { adapter, tokens, ms };
    },
    { model, texts, featureLevel: compat ? 'compatibility' : 'core', pooling: pooling ?? 'mean' },
  );
  const seconds = r.ms / 1000;
  console.log(`${model} in headless Chromium on ${r.adapter}, default kernel shapes: ${texts.length} embeddings ` +
    `(${r.tokens} tokens) in ${seconds.toFixed(2)} s: ${(texts.length / seconds).toFixed(3)} a second, ` +
    `${(r.tokens / seconds).toFixed(1)} tokens a second`);
  await context.close();
  server.close();
  rmSync(browserProfile, { recursive: true, force: true });
  process.exit(0);
}

if (mmprojFile) {
  const type = imageFile.endsWith('.png') ? 'image/png' : 'image/jpeg';
  const url = `data:${type};base64,${readFileSync(imageFile).toString('base64')}`;
  const r = await page.evaluate(
    async ({ model, mmproj, url, rounds, prompt, featureLevel }) => {
      const { Wick } = await import('wick-llm');
      const loadStart = performance.now();
      const engine = await Wick.load(model, { tune: false, nCtx: 2048, featureLevel, mmproj });
      const loadSeconds = (performance.now() - loadStart) / 1000;
      const bitmap = await createImageBitmap(await (await fetch(url)).blob());
      // The image with its first pixel set to a colour of the round's own.
      const variant = async (round) => {
        const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
        const ctx = canvas.getContext('2d');
        ctx.drawImage(bitmap, 0, 0);
        ctx.fillStyle = `rgb(${round * 37 % 256}, 0, 0)`;
        ctx.fillRect(0, 0, 1, 1);
        return URL.createObjectURL(await canvas.convertToBlob({ type: 'image/png' }));
      };
      const rows = [];
      for (let round = 1; round <= rounds; round++) {
        const content = [{ type: 'image_url', image_url: { url: await variant(round) } }, { type: 'text', text: prompt }];
        const start = performance.now();
        await engine.chat.completions.create({ messages: [{ role: 'user', content }], max_tokens: 1, temperature: 0 });
        const seconds = (performance.now() - start) / 1000;
        const s = await engine.stats();
        rows.push({ round, seconds, prompt: s.lastPromptProcessed, promptSeconds: s.lastPromptProcessed / s.promptTokensPerSecond });
      }
      const { adapter } = await engine.stats();
      await engine.unload();
      return { adapter, rows, loadSeconds };
    },
    { model, mmproj: '/' + relative(ROOT, resolve(mmprojFile)), url, rounds, prompt, featureLevel: compat ? 'compatibility' : 'core' },
  );
  console.log(`${model} with ${mmprojFile} in headless Chromium on ${r.adapter}, default kernel shapes, ` +
    `${imageFile} and "${prompt}"; loaded in ${r.loadSeconds.toFixed(1)} s\n`);
  console.log('| round | to the first token | the prompt (tokens) | the image\'s encoding |');
  console.log('| ---: | ---: | ---: | ---: |');
  for (const x of r.rows) {
    console.log(`| ${x.round} | ${x.seconds.toFixed(2)} s | ${x.promptSeconds.toFixed(2)} s (${x.prompt}) | ${(x.seconds - x.promptSeconds).toFixed(2)} s |`);
  }
  await context.close();
  server.close();
  rmSync(browserProfile, { recursive: true, force: true });
  process.exit(0);
}

const allReadbacks = [
  ['choice (greedy)', { temperature: 0 }],
  ['top_k 40: the choice among the candidates, made on the GPU', { temperature: 0.8, top_k: 40, seed: 1 }],
  ['no top_k: a token drawn on the GPU', { temperature: 0.8, seed: 1 }],
  ['top_p 0.9 without top_k: a token drawn on the GPU', { temperature: 0.8, top_p: 0.9, seed: 1 }],
  ['top_k 100 (above 64): the row, sampled on the CPU', { temperature: 0.8, top_k: 100, seed: 1 }],
  ['choice among a JSON object grammar\'s tokens (greedy)', { temperature: 0, response_format: { type: 'json_object' } }],
];
// The greedy reply alone, with its tokens' bytes (logprobs), to set against the native engine's.
const readbacks = greedyOnly
  ? [['choice (greedy), its tokens', { temperature: 0, logprobs: true }]]
  : draftFile || lookup
    ? [[`choice (greedy), ${draftFile ? 'drafted by ' + draftFile : 'lookup drafts'}`, { temperature: 0 }]]
    : allReadbacks;
const { adapter, rows, profile, loadSeconds, shapes } = await page.evaluate(
  async ({ model, tokens, rounds, prompt, readbacks, featureLevel, profiled, speculation, tuned }) => {
    const { Wick } = await import('wick-llm');
    const loadStart = performance.now();
    const engine = await Wick.load(model, { tune: tuned, nCtx: 512, featureLevel, ...speculation });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    await engine.tuned;
    // The step's products the tuner kept shapes for (not a prompt's tiles, which have no threads a
    // row), and those summing a row by subgroup shuffles.
    const matvec = Object.values(JSON.parse(localStorage.getItem('wick-llm:tuning') ?? '{}'))[0]?.matvec ?? {};
    const kept = Object.values(matvec).filter((k) => k.threads_per_row > 0);
    const { subgroupSize } = await engine.stats();
    const shapes = tuned && {
      matvecs: kept.length,
      bySubgroups: kept.filter((k) => k.subgroup_sum).length,
      subgroupSize,
      tuneSeconds: (performance.now() - loadStart) / 1000 - loadSeconds,
    };
    const rows = [];
    for (let round = 1; round <= rounds; round++) {
      for (const [name, sampling] of readbacks) {
        const body = { messages: [{ role: 'user', content: prompt }], max_tokens: tokens, ...sampling };
        const reply = await engine.chat.completions.create(body);
        const s = await engine.stats();
        rows.push({
          round,
          name,
          prompt: s.lastPromptProcessed,
          promptTps: s.promptTokensPerSecond,
          tokens: reply.usage.completion_tokens,
          tps: s.tokensPerSecond,
          bytes: s.readBackBytesPerToken,
          step: s.stepMs,
          text: reply.choices[0].message.content,
          tokenBytes: reply.choices[0].logprobs?.content.map((t) => t.bytes),
          speculation: s.speculation,
        });
      }
    }
    const { adapter } = await engine.stats();
    const profile = profiled ? await engine.profile('decode') : null;
    await engine.unload();
    return { adapter, rows, profile, loadSeconds, shapes };
  },
  { model, tokens, rounds, prompt, readbacks, featureLevel: compat ? 'compatibility' : 'core', profiled, speculation, tuned },
);

const kernels = shapes
  ? `kernel shapes tuned here in ${shapes.tuneSeconds.toFixed(0)} s (${shapes.bySubgroups} of ${shapes.matvecs} step products ` +
    `summed by subgroups${shapes.subgroupSize ? ` of ${shapes.subgroupSize} lanes` : ': the adapter has none'})`
  : 'default kernel shapes';
console.log(`${model} in headless Chromium on ${adapter}, ${kernels}, "${prompt}", ${tokens} tokens at most\n`);
console.log('| round | read back | prompt tokens run | prompt tok/s | tokens | decode tok/s | ms/token | record | submit | wait | other | bytes back/token |');
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const cells = [r.round, r.name, r.prompt, r.promptTps?.toFixed(2) ?? '-', r.tokens, r.tps?.toFixed(3) ?? '-', r.tps ? (1000 / r.tps).toFixed(0) : '-'];
  const parts = ['record', 'submit', 'wait', 'other'].map((p) => r.step?.[p].toFixed(2) ?? '-');
  console.log(`| ${[...cells, ...parts].join(' | ')} | ${r.bytes.toFixed(0)} |`);
}
console.log('\nrecord, submit, wait, other: ms per decode step after the prompt (see StepMs in index.d.ts)');
for (const r of rows.filter((r) => r.speculation)) {
  const s = r.speculation;
  console.log(`round ${r.round}: ${s.checks} checks of ${s.proposed} drafted tokens kept ${s.accepted} (over the rounds so far), ` +
    `${s.tokensPerCheck.toFixed(2)} tokens a check; measured: a step ${s.stepMs?.toFixed(0) ?? '-'} ms, checks of ` +
    `${s.checkMs.map(([rows, ms]) => `${rows} rows ${ms.toFixed(0)} ms`).join(', ')}, a drafted token ${s.draftedTokenMs?.toFixed(0) ?? '-'} ms`);
}
if (greedyOnly) {
  console.log(`\nloaded in ${loadSeconds.toFixed(1)} s; the greedy replies:`);
  for (const r of rows) console.log(JSON.stringify(r.text), JSON.stringify(r.tokenBytes));
}
if (profile) {
  const total = profile.kernels.reduce((sum, [, ms]) => sum + ms, 0);
  console.log(`\ntime of a decode step by kernel, each dispatch alone (${total.toFixed(2)} ms in all):`);
  for (const [name, ms] of profile.kernels) {
    console.log(`  ${name.padEnd(48)} ${ms.toFixed(3).padStart(9)} ms ${((100 * ms) / total).toFixed(1).padStart(5)}%`);
  }
  console.log(`  the whole plan, its runs back to back in one submit: ${profile.wholeMs.toFixed(2)} ms a run`);
}
await context.close();
server.close();
rmSync(browserProfile, { recursive: true, force: true });
