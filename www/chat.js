// The conversation side of the page: the list of conversations kept in this browser, the transcript
// (replies rendered as markdown), the prompt, and the settings of the conversation open.

import * as store from './conversations.js';
import { copyButton, renderMarkdown } from './markdown.js';
import { $, button, showError } from './ui.js';

let engine = null;
let readsImages = false; // the engine was loaded with a vision projector
let generating = null; // { controller, id }: the reply in progress and its conversation
let openId = null; // the conversation shown
let pending = []; // images (data: URLs) that go with the next message

/** Starts the chat side on the conversation last open (or a new one). */
export function startChat() {
  const last = store.get(store.currentId()) ?? store.list()[0] ?? store.create();
  show(last.id);
  store.onOtherTab(() => {
    if (!store.get(openId)) return show((store.list()[0] ?? store.create()).id);
    renderList();
    if (!generating) renderTranscript();
  });
}

/** The engine replies come from; null while none is loaded. `images`: it reads images. */
export function useEngine(loaded, { images = false } = {}) {
  engine = loaded;
  readsImages = Boolean(loaded) && images;
  if (!readsImages) setPending([]);
  updateControls();
}

const open = () => store.get(openId);

function updateControls() {
  const busy = Boolean(generating);
  $('prompt').disabled = !engine;
  $('send').disabled = !engine || busy;
  $('send').hidden = busy;
  $('stop').disabled = !busy;
  $('stop').hidden = !busy;
  $('attach').hidden = !readsImages;
  for (const b of $('transcript').querySelectorAll('.needs-engine')) b.disabled = !engine || busy;
}

function show(id) {
  generating?.controller.abort(); // a reply goes on only where it is seen
  openId = id;
  store.setCurrent(id);
  renderList();
  renderTranscript();
  showSettings();
  closeSidebar();
}

function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  $('toggle-sidebar').setAttribute('aria-expanded', 'false');
}

// ---- The list of conversations ------------------------------------------------------------------------

function renderList() {
  const items = store.list().map((c) => {
    const li = document.createElement('li');
    li.classList.toggle('current', c.id === openId);
    const title = button(store.titleOf(c), () => (c.id === openId ? closeSidebar() : show(c.id)), { className: 'title' });
    const rename = button('✎', () => startRename(li, c), { label: 'Rename', className: 'icon' });
    const remove = button('✕', () => removeConversation(c), { label: 'Delete', className: 'icon' });
    li.append(title, rename, remove);
    return li;
  });
  $('conversations').replaceChildren(...items);
}

function startRename(li, conversation) {
  const input = document.createElement('input');
  input.value = store.titleOf(conversation);
  input.setAttribute('aria-label', 'Conversation name');
  let done = false;
  const finish = (keep) => {
    if (done) return;
    done = true;
    if (keep) store.update(conversation.id, { title: input.value.trim() });
    renderList();
  };
  input.onkeydown = (e) => {
    if (e.key === 'Enter') finish(true);
    if (e.key === 'Escape') finish(false);
  };
  input.onblur = () => finish(true);
  li.querySelector('.title').replaceWith(input);
  input.select();
}

function removeConversation(conversation) {
  if (!confirm(`Delete “${store.titleOf(conversation)}”?`)) return;
  store.remove(conversation.id);
  if (conversation.id === openId) show((store.list()[0] ?? store.create()).id);
  else renderList();
}

$('new-chat').onclick = () => {
  const current = open();
  // An empty conversation is already a new chat.
  const next = current?.messages.length === 0 ? current : store.create(current ?? {});
  show(next.id);
  $('prompt').focus();
};
$('toggle-sidebar').onclick = () => {
  const opened = document.body.classList.toggle('sidebar-open');
  $('toggle-sidebar').setAttribute('aria-expanded', String(opened));
};
$('scrim').onclick = closeSidebar;

// ---- Settings, per conversation -----------------------------------------------------------------------

const SETTINGS = [
  ['system', 'system'],
  ['temperature', 'temperature'],
  ['top-p', 'top_p'],
  ['max-tokens', 'max_tokens'],
];

function showSettings() {
  const conversation = open();
  for (const [id, key] of SETTINGS) $(id).value = conversation[key];
}

for (const [id, key] of SETTINGS) {
  $(id).oninput = () => {
    const input = $(id);
    if (input.type === 'number' && (input.value === '' || !input.checkValidity())) return;
    store.update(openId, { [key]: input.type === 'number' ? input.valueAsNumber : input.value });
  };
}

// ---- The transcript -----------------------------------------------------------------------------------

function renderTranscript() {
  const { messages } = open();
  $('transcript').replaceChildren(...messages.map((m, i) => messageElement(m, i, messages.length)));
  updateControls();
}

/** Where a reasoning model's thoughts go, folded away: hidden while it has none. */
function thinkingElement() {
  const details = document.createElement('details');
  details.className = 'thinking';
  const summary = document.createElement('summary');
  summary.textContent = 'Thinking';
  const text = document.createElement('div');
  text.className = 'thought';
  details.append(summary, text);
  return details;
}

function showThinking(div, message) {
  const details = div.querySelector('.thinking');
  details.hidden = !message.reasoning;
  details.querySelector('.thought').textContent = message.reasoning ?? '';
}

/** One message with its actions; `count` is the number of messages (the last reply can be redone). */
function messageElement(message, index, count) {
  const div = document.createElement('div');
  div.className = `message ${message.role}`;
  const content = document.createElement('div');
  content.className = 'content';
  if (message.role === 'assistant') {
    div.append(thinkingElement());
    showThinking(div, message);
    renderMarkdown(message.content, content);
  } else content.textContent = message.content;
  if (message.images?.length) {
    const strip = document.createElement('div');
    strip.className = 'images';
    strip.append(...message.images.map((url) => thumbnail(url, 'An image of this message')));
    div.append(strip);
  }
  const actions = document.createElement('div');
  actions.className = 'actions';
  actions.append(copyButton(() => message.content));
  if (message.role === 'user') {
    actions.append(button('Edit', () => startEdit(div, index), { className: 'needs-engine' }));
  }
  if (message.role === 'assistant' && index === count - 1) {
    actions.append(button('Regenerate', regenerate, { className: 'needs-engine' }));
  }
  div.append(content, actions);
  return div;
}

/** Edit a message in place; sending it drops what followed and asks again. */
function startEdit(div, index) {
  const editor = document.createElement('textarea');
  editor.value = open().messages[index].content;
  editor.setAttribute('aria-label', 'Edit message');
  editor.rows = Math.min(10, editor.value.split('\n').length + 1);
  const resend = () => {
    const text = editor.value.trim();
    if (!text || !engine || generating) return;
    store.update(openId, (c) => {
      const { images } = c.messages[index]; // an edit keeps the message's images
      return { messages: [...c.messages.slice(0, index), { role: 'user', content: text, ...(images && { images }) }] };
    });
    renderTranscript();
    reply();
  };
  onEnter(editor, resend);
  div.querySelector('.content').replaceWith(editor);
  div.querySelector('.actions').replaceChildren(
    button('Send', resend, { className: 'primary needs-engine' }),
    button('Cancel', renderTranscript),
  );
  editor.focus();
}

function regenerate() {
  if (!engine || generating) return;
  store.update(openId, (c) => ({ messages: c.messages.slice(0, -1) }));
  renderTranscript();
  reply();
}

// ---- Asking the engine --------------------------------------------------------------------------------

/** Enter sends; Shift+Enter starts a new line. */
function onEnter(textarea, send) {
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
}

$('prompt-form').onsubmit = (e) => {
  e.preventDefault();
  const text = $('prompt').value.trim();
  if ((!text && !pending.length) || !engine || generating) return;
  const message = { role: 'user', content: text, ...(pending.length && { images: pending }) };
  try {
    store.update(openId, (c) => ({ messages: [...c.messages, message] }));
  } catch (e) {
    // The browser's storage is full (images take room): nothing is lost, the message stays to send.
    return showError(`This browser cannot keep the message: ${e.message}. Remove an image or an old conversation.`);
  }
  $('prompt').value = '';
  setPending([]);
  renderList();
  renderTranscript();
  reply();
};
onEnter($('prompt'), () => $('prompt-form').requestSubmit());
$('stop').onclick = () => generating?.controller.abort();

/** Streams the reply to the open conversation's last message into the transcript, then keeps it. */
async function reply() {
  showError(null);
  const conversation = open();
  const message = { role: 'assistant', content: '' };
  const out = messageElement(message, -1, 0);
  out.classList.add('streaming');
  out.querySelector('.actions').replaceChildren();
  $('transcript').append(out);
  generating = { controller: new AbortController(), id: conversation.id };
  updateControls();
  const { system, temperature, top_p, max_tokens } = conversation;
  const messages = conversation.messages.map(({ role, content, images }) => ({ role, content: parts(content, images) }));
  if (system.trim()) messages.unshift({ role: 'system', content: system.trim() });
  const redraw = throttled(() => {
    const follow = isAtBottom();
    showThinking(out, message);
    renderMarkdown(message.content, out.querySelector('.content'));
    if (follow) $('transcript').scrollTop = $('transcript').scrollHeight;
  });
  try {
    const stream = await engine.chat.completions.create(
      // top_k: llama.cpp's server's field: the top 40 are found on the GPU, and only they come back.
      { messages, temperature, top_p, top_k: 40, max_tokens, stream: true },
      { signal: generating.controller.signal },
    );
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      message.content += delta?.content ?? '';
      if (delta?.reasoning_content) message.reasoning = (message.reasoning ?? '') + delta.reasoning_content;
      redraw();
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(e);
  } finally {
    // What was said stays in the conversation, also when stopped.
    store.update(conversation.id, (c) => ({ messages: [...c.messages, message] }));
    const mine = generating?.id === openId;
    generating = null;
    renderList();
    if (mine) renderTranscript();
    updateControls();
    showStats();
  }
}

async function showStats() {
  const stats = await engine?.stats().catch(() => null);
  if (stats?.tokensPerSecond) {
    const drafted = stats.speculation?.checks
      ? ` · ${stats.speculation.tokensPerCheck.toFixed(2)} tokens a step (${stats.speculation.accepted} of ` +
        `${stats.speculation.proposed} drafted kept)`
      : '';
    $('toks').textContent =
      `${stats.tokensPerSecond.toFixed(1)} tok/s · ${stats.dispatchesPerToken} dispatches per token${drafted} ·`;
  }
}

// ---- Images --------------------------------------------------------------------------------------------

/** A message's content as the API takes it: its images first (as mtmd-cli puts them), then its text. */
function parts(content, images) {
  if (!images?.length) return content;
  const shown = images.map((url) => ({ type: 'image_url', image_url: { url } }));
  return content ? [...shown, { type: 'text', text: content }] : shown;
}

function thumbnail(url, alt) {
  const img = document.createElement('img');
  img.className = 'thumb';
  img.src = url;
  img.alt = alt;
  return img;
}

function setPending(images) {
  pending = images;
  const figures = pending.map((url, i) => {
    const figure = document.createElement('figure');
    const remove = button('✕', () => setPending(pending.filter((_, j) => j !== i)), { label: 'Remove the image' });
    figure.append(thumbnail(url, 'An image to send'), remove);
    return figure;
  });
  $('attachments').replaceChildren(...figures);
  $('attachments').hidden = !pending.length;
}

/** Images kept with a conversation in localStorage: one larger than this is kept as a smaller JPEG. */
const KEEP_BYTES = 1.5e6;
const KEEP_SIDE = 1536;

/** Adds image files to the next message, as data: URLs (large ones made smaller to keep). */
async function addImages(files) {
  if (!readsImages) return showError('The model loaded reads no images: load it with a vision projector.');
  const images = [...files].filter((f) => f.type.startsWith('image/'));
  try {
    const urls = await Promise.all(images.map(keepable));
    setPending([...pending, ...urls]);
  } catch (e) {
    showError(`The image cannot be read: ${e.message}`);
  }
}

async function keepable(file) {
  const url = await new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  if (url.length <= KEEP_BYTES) return url;
  const bitmap = await createImageBitmap(file);
  const scale = Math.min(1, KEEP_SIDE / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.round(bitmap.width * scale);
  canvas.height = Math.round(bitmap.height * scale);
  canvas.getContext('2d').drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  return canvas.toDataURL('image/jpeg', 0.92);
}

$('image-file').onchange = () => {
  addImages($('image-file').files);
  $('image-file').value = '';
};
$('prompt').addEventListener('paste', (e) => {
  const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
  if (!files.length || !readsImages) return;
  e.preventDefault();
  addImages(files);
});
$('prompt-form').addEventListener('dragover', (e) => {
  if (!readsImages) return;
  e.preventDefault();
  $('prompt-form').classList.add('dropping');
});
$('prompt-form').addEventListener('dragleave', () => $('prompt-form').classList.remove('dropping'));
$('prompt-form').addEventListener('drop', (e) => {
  $('prompt-form').classList.remove('dropping');
  if (!readsImages) return;
  e.preventDefault();
  addImages(e.dataTransfer.files);
});

/** `draw` at most once per frame, however often the returned function is called. */
function throttled(draw) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw();
    });
  };
}

function isAtBottom() {
  const t = $('transcript');
  return t.scrollHeight - t.scrollTop - t.clientHeight < 40;
}
