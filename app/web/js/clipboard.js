// Copying text for the reader: an answer's Markdown, a code block's code. The Clipboard API
// needs a secure context (HTTPS, or this machine); a service reached over plain HTTP on
// a network falls back to the older selection copy, which every browser still honours
// from a click.

import { h } from './dom.js';

const SAID_MS = 2000;

async function copyText(text) {
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

/** A button that copies `text()` when pressed and says for a moment whether it did. */
export function copyButton(attributes, label, text) {
  const button = h('button', { type: 'button', ...attributes }, label);
  let timer = null;
  button.addEventListener('click', async () => {
    const copied = await copyText(text());
    button.textContent = copied ? 'Copied' : 'Copy failed';
    clearTimeout(timer);
    timer = setTimeout(() => {
      button.textContent = label;
    }, SAID_MS);
  });
  return button;
}

/** A copy button on each code block of rendered Markdown (drawn again with each render). */
export function addCodeCopy(element) {
  for (const pre of element.querySelectorAll('pre')) {
    const code = pre.querySelector('code') ?? pre;
    pre.classList.add('has-copy');
    pre.prepend(
      copyButton({ class: 'code-copy', 'aria-label': 'Copy code' }, 'Copy', () =>
        code.textContent.replace(/\n$/, ''),
      ),
    );
  }
}
