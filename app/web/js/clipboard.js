// Copying text for the reader: an answer's Markdown, a code block's code. The Clipboard API
// needs a secure context (HTTPS, or this machine); a service reached over plain HTTP on
// a network falls back to the older selection copy, which every browser still honours
// from a click.

import { h } from './dom.js';

const SAID_MS = 2000;

export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (no permission, the page not focused): the selection copy may still work.
    }
  }
  const box = h('textarea', { class: 'visually-hidden', readonly: true, 'aria-hidden': 'true' });
  box.value = text;
  document.body.append(box);
  box.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  } finally {
    box.remove();
  }
}

/**
 * A Copy button (named `name` for screen readers) that copies `text()`, in a `span.copy`
 * with `className`; beside it, for a moment, a status says whether it did. The button's
 * own text stays put, so its name always matches what it shows.
 */
export function copyButton({ className, name }, text) {
  const said = h('span', { class: 'copy-said', role: 'status' });
  const button = h('button', { type: 'button', class: 'button', 'aria-label': name }, 'Copy');
  let timer = null;
  button.addEventListener('click', async () => {
    said.textContent = (await copyText(text())) ? 'Copied' : 'Copy failed';
    clearTimeout(timer);
    timer = setTimeout(() => {
      said.textContent = '';
    }, SAID_MS);
  });
  return h('span', { class: `copy ${className}` }, button, said);
}
