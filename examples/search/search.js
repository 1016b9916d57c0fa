// Search by meaning: each paragraph's embedding once per model, the query's each time, ranked by cosine
// (the vectors are unit length, so a dot product). ?model=URL&pooling=NAME fill the fields.

import { Wick } from 'wick-llm';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
$('model').value = params.get('model') ?? '../../models/SmolLM2-135M-Instruct.Q4_1.gguf';
$('pooling').value = params.get('pooling') ?? 'mean';
$('paragraphs').value = [
  'The cat slept on the warm windowsill all afternoon.',
  'Interest rates rose again, and the markets fell.',
  'A kitten curled up in the sun by the window.',
  'The train to the coast leaves at nine.',
].join('\n');
$('query').value = 'a sleepy cat in the sunshine';

let loaded = null; // { key, engine, paragraphs: [{ text, vector }] }

const status = (text) => ($('status').textContent = text);
const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);

async function engineFor(url, pooling) {
  const key = `${url} ${pooling}`;
  if (loaded?.key !== key) {
    await loaded?.engine.unload();
    loaded = null;
    const onProgress = ({ phase, loaded: done, total }) =>
      status(`loading (${phase}) ${total ? Math.round((100 * done) / total) : 0}%`);
    const engine = await Wick.load(url, { onProgress, pooling: pooling || undefined, tune: false });
    loaded = { key, engine, paragraphs: [] };
  }
  return loaded;
}

async function search() {
  const { engine, paragraphs } = await engineFor($('model').value, $('pooling').value.trim());
  const texts = $('paragraphs').value.split('\n').map((t) => t.trim()).filter(Boolean);
  const known = new Map(paragraphs.map((p) => [p.text, p.vector]));
  const fresh = texts.filter((t) => !known.has(t));
  if (fresh.length) {
    status(`embedding ${fresh.length} paragraphs`);
    const { data } = await engine.embeddings.create({ input: fresh });
    data.forEach(({ embedding }, i) => known.set(fresh[i], embedding));
    loaded.paragraphs = [...known].map(([text, vector]) => ({ text, vector }));
  }
  const start = performance.now();
  const { data } = await engine.embeddings.create({ input: $('query').value });
  const query = data[0].embedding;
  const ranked = texts.map((text) => ({ text, score: dot(query, known.get(text)) })).sort((a, b) => b.score - a.score);
  $('results').replaceChildren(
    ...ranked.map(({ text, score }) => {
      const li = document.createElement('li');
      const s = document.createElement('span');
      s.className = 'score';
      s.textContent = score.toFixed(3);
      li.append(s, text);
      return li;
    }),
  );
  status(`ranked ${texts.length} paragraphs (the query took ${(performance.now() - start).toFixed(0)} ms)`);
}

$('search').onclick = () => search().catch((e) => status(`${e.name}: ${e.message}`));
