// One modal dialog for looking at something closely: a slide at full size, or the
// passage of a document a source points to. The native <dialog> keeps the keyboard
// inside while it is open, closes on Escape, and gives the focus back on closing.

import { h } from './dom.js';

let dialog = null;

function ensureDialog() {
  if (dialog) return dialog;
  const title = h('h2', { id: 'viewer-title' });
  const body = h('div', { class: 'viewer-body' });
  const close = h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Close' }, '×');
  dialog = h(
    'dialog',
    { class: 'viewer', 'aria-labelledby': 'viewer-title' },
    h('div', { class: 'viewer-head' }, title, close),
    body,
  );
  close.addEventListener('click', () => dialog.close());
  // A click on the backdrop (the dialog itself, outside its content) closes it too.
  dialog.addEventListener('click', (event) => {
    if (event.target === dialog) dialog.close();
  });
  dialog.addEventListener('close', () => body.replaceChildren());
  document.body.append(dialog);
  return dialog;
}

/** Show `content` (nodes) under `title` in the dialog. */
export function view(title, ...content) {
  const box = ensureDialog();
  box.querySelector('#viewer-title').textContent = title;
  box.querySelector('.viewer-body').replaceChildren(...content);
  if (!box.open) box.showModal();
}
