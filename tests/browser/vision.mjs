// Browser tests of images: the random Gemma 3 model with its vision projector (tests/vision.rs's files),
// an image in a chat message through the package (with a draft model too) and through the chat page,
// each reply against the native engine's (`wick run --mmproj --image`, whose reply tests/vision.rs
// checks against llama.cpp's);
// then the random Gemma 4 and Qwen3.5 models with their own (tests/vision_gemma4.rs's and
// tests/vision_qwen35.rs's files) through the package, against `wick chat`. Registered by run.mjs.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPAT, ROOT, base, openPage, ranOn, test } from './harness.mjs';

const MODEL = 'tests/data/random-gemma3.gguf';
const MMPROJ = 'tests/data/random-gemma3-mmproj.gguf';
const IMAGE = 'tests/data/vision-test.png';
const TOKENS = 12;

/**
 * The native engine's greedy reply to `text` with the image at its marker (the model's chat template
 * writes the messages' text alone), and the prompt's tokens.
 */
function nativeImageReply(text) {
  const args = ['run', '-m', MODEL, '--mmproj', MMPROJ, '--image', IMAGE, '-p', text, '-n', String(TOKENS)];
  const run = spawnSync(join(ROOT, 'target/release/wick'), [...args, '--temp', '0', '-c', '64'], {
    cwd: ROOT,
    env: { ...process.env, WICK_TUNING: 'off' },
  });
  assert.equal(run.status, 0, run.stderr.toString());
  const prompt = Number(/prompt (\d+) tokens/.exec(run.stderr.toString())[1]);
  return { reply: run.stdout.toString().trimEnd(), prompt };
}

const dataUrl = `data:image/png;base64,${readFileSync(join(ROOT, IMAGE)).toString('base64')}`;

test('the package reads an image in a chat message as the native engine does', async () => {
  const { reply: want, prompt } = nativeImageReply('<__media__>look at this');
  const page = await openPage('/target/browser-test/app/');
  const result = await page.evaluate(
    async ({ model, mmproj, url, tokens, adapter }) => {
      const { Wick } = await import('wick-llm');
      const phases = new Set();
      const engine = await Wick.load(model, { ...adapter, mmproj, tune: false, nCtx: 64, onProgress: (p) => phases.add(p.phase) });
      const image = { type: 'image_url', image_url: { url } };
      const ask = (content) =>
        engine.chat.completions.create({ messages: [{ role: 'user', content }], temperature: 0, max_tokens: tokens });
      const reply = await ask([image, { type: 'text', text: 'look at this' }]);
      // The same image from a blob: URL, as a page makes of a File.
      const blob = await (await fetch(url)).blob();
      const again = await ask([{ type: 'image_url', image_url: { url: URL.createObjectURL(blob) } }, { type: 'text', text: 'look at this' }]);
      const refused = async (content) => {
        try {
          await ask(content);
          return null;
        } catch (e) {
          return { name: e.name, message: e.message };
        }
      };
      const notAnImage = await refused([{ type: 'image_url', image_url: { url: 'data:image/png;base64,aGVsbG8=' } }]);
      const stats = await engine.stats();
      await engine.unload();
      const plain = await Wick.load(model, { ...adapter, tune: false, nCtx: 64 });
      const withoutProjector = await (async () => {
        try {
          await plain.chat.completions.create({ messages: [{ role: 'user', content: [image] }], max_tokens: 1 });
          return null;
        } catch (e) {
          return { name: e.name, message: e.message };
        }
      })();
      await plain.unload();
      // Speculating, drafted by the model itself (which reads the text alone): the same reply.
      const speculating = await Wick.load(model, { ...adapter, mmproj, draft: model, draftMax: 4, tune: false, nCtx: 64 });
      const drafted = await speculating.chat.completions.create({
        messages: [{ role: 'user', content: [image, { type: 'text', text: 'look at this' }] }],
        temperature: 0,
        max_tokens: tokens,
      });
      const speculation = (await speculating.stats()).speculation;
      await speculating.unload();
      return { reply, again, notAnImage, withoutProjector, phases: [...phases], stats, drafted, speculation };
    },
    { model: `/${MODEL}`, mmproj: `/${MMPROJ}`, url: dataUrl, tokens: TOKENS, adapter: COMPAT },
  );
  await page.close();
  ranOn(result.stats);
  console.log(`    reply ${JSON.stringify(result.reply.choices[0].message.content)}, native ${JSON.stringify(want)}`);
  assert.equal(result.reply.choices[0].message.content, want);
  assert.equal(result.reply.usage.prompt_tokens, prompt, 'BOS, the image between its markers, the text');
  assert.equal(result.again.choices[0].message.content, want);
  for (const phase of ['mmproj-download', 'mmproj-gpu']) assert.ok(result.phases.includes(phase), result.phases);
  assert.equal(result.notAnImage?.name, 'BadRequestError', JSON.stringify(result.notAnImage));
  assert.match(result.notAnImage.message, /image 1 cannot be decoded/);
  assert.equal(result.withoutProjector?.name, 'BadRequestError', JSON.stringify(result.withoutProjector));
  assert.match(result.withoutProjector.message, /vision projector/);
  console.log(`    with a draft: ${JSON.stringify(result.speculation)}`);
  assert.equal(result.drafted.choices[0].message.content, want, 'the reply with a draft model');
  assert.ok(result.speculation?.checks > 0, JSON.stringify(result.speculation));
});

/**
 * The package's greedy reply to an image and a line of text, with `model` and its projector `mmproj`,
 * against `wick chat`'s; `markers` names the text around the image that the prompt's count shows.
 */
async function packageReadsAnImageAsTheNativeChat(model, mmproj, markers) {
  // `wick chat` puts its --image before the first message's text, as the package's parts below do.
  const chat = spawnSync(
    join(ROOT, 'target/release/wick'),
    ['chat', '-m', model, '--mmproj', mmproj, '--image', IMAGE, '--temp', '0', '-n', String(TOKENS), '-c', '256'],
    { cwd: ROOT, env: { ...process.env, WICK_TUNING: 'off' }, input: 'look at this\n' },
  );
  assert.equal(chat.status, 0, chat.stderr.toString());
  const want = chat.stdout.toString().trim();
  // The reasoning, where the template opens it (Qwen3.5's thinks first), goes to standard error
  // after the prompt's "> ".
  const thought = /^> ([\s\S]*?)\nwick: \d+ new prompt tokens/m.exec(chat.stderr.toString());
  const wantReasoning = (thought?.[1] ?? '').trim();
  assert.ok(want || wantReasoning, `the native reply says something: ${chat.stderr}`);
  const prompt = Number(/(\d+) new prompt tokens/.exec(chat.stderr.toString())[1]);
  const page = await openPage('/target/browser-test/app/');
  const result = await page.evaluate(
    async ({ model, mmproj, url, tokens, adapter }) => {
      const { Wick } = await import('wick-llm');
      const engine = await Wick.load(model, { ...adapter, mmproj, tune: false, nCtx: 256 });
      const content = [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'look at this' }];
      const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content }], temperature: 0, max_tokens: tokens });
      const stats = await engine.stats();
      await engine.unload();
      return { reply, stats };
    },
    { model: `/${model}`, mmproj: `/${mmproj}`, url: dataUrl, tokens: TOKENS, adapter: COMPAT },
  );
  await page.close();
  ranOn(result.stats);
  const message = result.reply.choices[0].message;
  const reasoning = (message.reasoning_content ?? '').trim();
  console.log(`    reply ${JSON.stringify(message.content)} (reasoning ${JSON.stringify(reasoning)}), native ${JSON.stringify(want)} (${JSON.stringify(wantReasoning)})`);
  assert.equal(message.content, want);
  assert.equal(reasoning, wantReasoning);
  assert.equal(result.reply.usage.prompt_tokens, prompt, `the chat template around the image between ${markers}`);
}

test('the package reads an image for Gemma 4 as the native chat does', () =>
  packageReadsAnImageAsTheNativeChat('tests/data/random-gemma4-f32.gguf', 'tests/data/random-gemma4-mmproj.gguf', '<|image> and <image|>'));

test('the package reads an image for Qwen3.5 as the native chat does (multimodal RoPE)', () =>
  packageReadsAnImageAsTheNativeChat('tests/data/random-qwen35-f16.gguf', 'tests/data/random-qwen35-mmproj.gguf', '<|vision_start|> and <|vision_end|>'));

test('the chat page takes an image from its picker, shows it in the message, keeps it, and replies as the native engine', async () => {
  const { reply: want } = nativeImageReply('<__media__>what is this');
  const page = await openPage('/www/?featureLevel=compatibility');
  await page.evaluate(() => document.querySelector('#new-chat').click());
  // Greedy, no system prompt: the conversation is the image and the text, as the native run's.
  await page.evaluate(() => (document.querySelector('#settings').open = true));
  await page.fill('#system', '');
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', String(TOKENS));
  await page.evaluate(() => (document.querySelector('#models').open = true));
  // Whole URLs: the URL boxes take nothing else.
  await page.fill('#mmproj-url', `${base}/${MMPROJ}`);
  await page.fill('#model-url', `${base}/${MODEL}`);
  // The page may be loading the default model from the cache: the load asked for replaces it.
  await page.click('#load-url');
  await page.waitForFunction(
    () => document.querySelector('#adapter').textContent.includes('random-gemma3') || document.querySelector('#status').textContent,
    null,
    { timeout: 120_000 },
  );
  assert.equal(await page.textContent('#status'), '');
  assert.match(await page.textContent('#adapter'), /reading images/);
  assert.equal(await page.isHidden('#attach'), false);
  await page.setInputFiles('#image-file', join(ROOT, IMAGE));
  await page.waitForSelector('#attachments img.thumb');
  await page.fill('#prompt', 'what is this');
  await page.click('#send');
  await page.waitForFunction(() => !document.querySelector('#send').hidden, null, { timeout: 120_000 });
  const kept = await page.evaluate(() => {
    const id = localStorage.getItem('wick-chat:current');
    return JSON.parse(localStorage.getItem('wick-chat:conversations')).find((c) => c.id === id).messages;
  });
  assert.equal(await page.textContent('#status'), '');
  assert.equal(kept.length, 2);
  assert.equal(kept[0].images?.length, 1);
  assert.ok(kept[0].images[0].startsWith('data:image/png;base64,'));
  assert.equal(kept[1].content, want);
  assert.equal(await page.locator('#transcript .message.user .images img').count(), 1);
  assert.equal(await page.isHidden('#attachments'), true);
  // A reload shows the conversation with its image.
  await page.reload();
  await page.waitForSelector('#transcript .message.user .images img');
  await page.close();
});
