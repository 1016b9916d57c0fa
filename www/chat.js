// The conversation side of the page: the list of conversations kept in this browser, the transcript
// (replies rendered as markdown), the prompt, and the settings of the conversation open.

import * as store from './conversations.js';
import { copyButton, renderMarkdown } from './markdown.js';
import { $, button, showError } from './ui.js';

let engine = null;
let generating = null; // { controller, id }: the reply in progress and its conversation
let openId = null; // the conversation shown

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

/** The engine replies come from; null while none is loaded. */
export function useEngine(loaded) {
  engine = loaded;
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
    store.update(openId, (c) => ({ messages: [...c.messages.slice(0, index), { role: 'user', content: text }] }));
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
  if (!text || !engine || generating) return;
  $('prompt').value = '';
  store.update(openId, (c) => ({ messages: [...c.messages, { role: 'user', content: text }] }));
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
  const messages = conversation.messages.map(({ role, content }) => ({ role, content }));
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
