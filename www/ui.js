// The few DOM helpers the page's modules share.

export const $ = (id) => document.getElementById(id);

/** Shows an error (an Error or a message) in the status line; null clears it. */
export function showError(e) {
  $('status').textContent = e ? e.message || String(e) : '';
}

/** A button with a text label (and, for icon buttons, an accessible name). */
export function button(text, onclick, { label, className } = {}) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.onclick = onclick;
  if (label) {
    b.setAttribute('aria-label', label);
    b.title = label;
  }
  if (className) b.className = className;
  return b;
}
