// Model output is untrusted text. It is rendered from Markdown and then sanitised by
// DOMPurify, so no markup in an answer (an <img onerror>, a javascript: link, a
// <script>, an inline style) survives to run; the page's Content-Security-Policy is
// the second wall behind this one. Links open in a new tab without a referrer.

import { Marked } from '../vendor/marked/marked.esm.js';
import DOMPurify from '../vendor/dompurify/purify.es.js';

const parser = new Marked({ gfm: true, breaks: false, async: false });

const POLICY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'option'],
  FORBID_ATTR: ['style'],
  RETURN_DOM_FRAGMENT: true,
};

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/** Replace `element`'s content with `text` rendered as sanitised Markdown. */
export function renderMarkdown(element, text) {
  element.replaceChildren(DOMPurify.sanitize(parser.parse(text), POLICY));
}

/** An http(s) URL as given, anything else (javascript:, data:, no URL at all) as null. */
export function safeUrl(value) {
  // `new URL(undefined, base)` is "<base>/undefined": a missing URL is no URL.
  if (typeof value !== 'string' || value.trim() === '') return null;
  try {
    const url = new URL(value, location.href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}
