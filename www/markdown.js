// A reply's markdown as DOM: marked parses it, DOMPurify keeps only inert HTML (a model's text is
// untrusted: it may echo a page or a prompt that holds markup), highlight.js colours code blocks, and
// each block gets a copy button.

import { Marked } from 'marked';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js';

const marked = new Marked({ gfm: true, breaks: true });

// Links open in a new tab that cannot reach back into this one.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const SANITIZE = {
  RETURN_DOM_FRAGMENT: true,
  USE_PROFILES: { html: true },
  // Images would fetch whatever a model names; forms and inputs have no place in a reply.
  FORBID_TAGS: ['img', 'style', 'form', 'input', 'button', 'textarea', 'select'],
};

/** Renders `text` (markdown) into `element`, replacing what it held. */
export function renderMarkdown(text, element) {
  const fragment = DOMPurify.sanitize(marked.parse(text), SANITIZE);
  for (const code of fragment.querySelectorAll('pre > code')) highlight(code);
  element.replaceChildren(fragment);
}

function highlight(code) {
  const language = /language-(\S+)/.exec(code.className)?.[1];
  const known = language && hljs.getLanguage(language);
  // highlight.js writes escaped markup of its own from the block's text.
  const { value } = known
    ? hljs.highlight(code.textContent, { language, ignoreIllegals: true })
    : hljs.highlightAuto(code.textContent);
  code.innerHTML = value;
  code.classList.add('hljs');
  code.parentElement.prepend(copyButton(() => code.textContent, 'Copy code'));
}

/** A button that copies `text()` to the clipboard and says so for a moment. */
export function copyButton(text, label = 'Copy') {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy';
  button.textContent = label;
  button.onclick = async () => {
    try {
      await navigator.clipboard.writeText(text());
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Copy failed';
    }
    setTimeout(() => (button.textContent = label), 1500);
  };
  return button;
}
