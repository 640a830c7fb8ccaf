// Code blocks in a rendered answer: each gets a Copy button, and, once the answer is
// whole, colours by language (highlight.js, vendored, loaded the first time an answer
// has code, so a page that never shows code never fetches it). Highlighting escapes
// the code's text itself: nothing the model wrote becomes markup.

import { copyButton } from './clipboard.js';

let library = null;

function highlighter() {
  library ??= import('../vendor/highlight/highlight.min.js').then((module) => module.default);
  return library;
}

/** The language a block's `language-x` class names; '' when it names none. */
function languageOf(code) {
  const named = [...code.classList].find((name) => name.startsWith('language-'));
  return named ? named.slice('language-'.length) : '';
}

async function highlight(blocks) {
  const hljs = await highlighter();
  for (const code of blocks) {
    // Drawn again since (a newer render replaced it), or a language it does not know.
    if (!code.isConnected) continue;
    const language = languageOf(code);
    if (language && !hljs.getLanguage(language)) continue;
    hljs.highlightElement(code);
  }
}

/** Dress `element`'s code blocks: a Copy button each; colours too when `final` (the
 * answer will not be drawn again). */
export function dressCodeBlocks(element, final) {
  const blocks = [];
  for (const pre of element.querySelectorAll('pre')) {
    const code = pre.querySelector('code') ?? pre;
    pre.classList.add('has-copy');
    pre.prepend(
      copyButton({ className: 'code-copy', name: 'Copy code' }, () =>
        code.textContent.replace(/\n$/, ''),
      ),
    );
    if (code !== pre) blocks.push(code);
  }
  if (final && blocks.length) highlight(blocks).catch(() => {});
}
