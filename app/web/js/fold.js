// A long question folded to its first lines, with a button that unfolds it: a question
// pasted whole (a document, 32,000 characters) would otherwise fill screens above its
// answer. All of its text stays in the page, so finding in the page still reaches it.

import { h } from './dom.js';

/** Longer than this, in characters or in lines, a question is folded. */
const FOLD_CHARS = 600;
const FOLD_LINES = 8;

/** The button that folds and unfolds `paragraph` (showing `text`), folded to begin with; null
 * for a text short enough to show whole. */
export function foldButton(paragraph, text) {
  if (text.length <= FOLD_CHARS && text.split('\n').length <= FOLD_LINES) return null;
  const button = h('button', { type: 'button', class: 'fold-toggle', 'aria-expanded': 'false' });
  const show = (folded) => {
    paragraph.classList.toggle('folded', folded);
    button.setAttribute('aria-expanded', String(!folded));
    button.textContent = folded ? 'Show more' : 'Show less';
  };
  button.addEventListener('click', () => show(!paragraph.classList.contains('folded')));
  show(true);
  return button;
}
