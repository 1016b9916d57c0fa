// Conversations kept in this browser's localStorage: each one its messages, its system prompt and its
// sampling settings. Small JSON, read afresh and written whole on every change, so that two tabs of the
// page never write back a stale copy of each other's conversations.

const KEY = 'wick-chat:conversations';
const CURRENT_KEY = 'wick-chat:current';

export const DEFAULT_SETTINGS = {
  system: 'You are a helpful assistant.',
  temperature: 0.7,
  top_p: 0.95,
  max_tokens: 256,
};

function readAll() {
  try {
    return JSON.parse(localStorage.getItem(KEY)) || [];
  } catch {
    return [];
  }
}

function writeAll(all) {
  localStorage.setItem(KEY, JSON.stringify(all));
}

/** Every conversation, the one with the latest message first. */
export function list() {
  return readAll().sort((a, b) => b.updated - a.updated);
}

export function get(id) {
  return readAll().find((c) => c.id === id) ?? null;
}

/** The id of the conversation open when the page was last used. */
export function currentId() {
  return localStorage.getItem(CURRENT_KEY);
}

export function setCurrent(id) {
  localStorage.setItem(CURRENT_KEY, id);
}

/** A new empty conversation with the settings given (a new chat keeps those of the one it follows). */
export function create(settings = {}) {
  const { system, temperature, top_p, max_tokens } = { ...DEFAULT_SETTINGS, ...settings };
  const now = Date.now();
  const conversation = { id: crypto.randomUUID(), title: '', created: now, updated: now, messages: [] };
  Object.assign(conversation, { system, temperature, top_p, max_tokens });
  writeAll([...readAll(), conversation]);
  return conversation;
}

/**
 * Sets fields of a conversation: `change` is an object, or a function from the conversation to one.
 * A change of messages moves it to the top of the list; a new title or new settings do not.
 */
export function update(id, change) {
  const all = readAll();
  const conversation = all.find((c) => c.id === id);
  if (!conversation) return null;
  const fields = typeof change === 'function' ? change(conversation) : change;
  Object.assign(conversation, fields);
  if ('messages' in fields) conversation.updated = Date.now();
  writeAll(all);
  return conversation;
}

export function remove(id) {
  writeAll(readAll().filter((c) => c.id !== id));
}

/** Calls `listener` when another tab of the page changes the conversations. */
export function onOtherTab(listener) {
  addEventListener('storage', (e) => e.key === KEY && listener());
}

/** What the list shows: the title given, else the start of the first message. */
export function titleOf(conversation) {
  const first = conversation.messages.find((m) => m.role === 'user')?.content ?? '';
  return conversation.title || first.replace(/\s+/g, ' ').trim().slice(0, 60) || 'New chat';
}
