// Where an answer's facts come from: the reference list, and the `[n]` citations in the
// answer that point into it. A web source opens in a new tab; a passage of an uploaded
// document (a `/file/download/{id}#page=N&passage=S` reference) opens in place, its text
// shown with a download of the whole file, so a reader sees the passage itself, not
// the whole file, and never the service's own host name as if it were a website.

import { download } from './api.js';
import { h } from './dom.js';
import { safeUrl } from './markdown.js';
import { view } from './viewer.js';

const CITATION = /\[(\d{1,3})\]/g;
const SKIPPED = new Set(['A', 'CODE', 'PRE']);

/** Whether `url` is a passage of one of this service's files. */
function isPassage(url) {
  const parsed = new URL(url);
  return parsed.origin === location.origin && parsed.pathname.startsWith('/file/download/');
}

/** A link to a reference; `label` is its text (the title, or `[n]` in an answer). */
export function sourceLink(ref, label) {
  const url = safeUrl(ref.url);
  const title = ref.title || ref.url || 'Source';
  if (!url) return null;
  if (!isPassage(url)) {
    return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer', title }, label);
  }
  return h(
    'a',
    {
      href: url,
      class: 'passage-link',
      title,
      onclick: (event) => {
        event.preventDefault();
        view(
          title,
          h('blockquote', { class: 'passage' }, ref.content || 'No text was kept of this passage.'),
          h('p', {}, fileLink(url, ref.title || 'file')),
        );
      },
    },
    label,
  );
}

/** The whole file of a passage, fetched with the page's credential: a plain link would
 * reach the service without it, and a signed-in user would get a 401 page. */
function fileLink(url, name) {
  const link = h(
    'a',
    {
      href: url,
      download: name,
      onclick: (event) => {
        event.preventDefault();
        download(url, name).catch((error) => {
          link.replaceWith(h('span', { class: 'muted' }, error.message));
        });
      },
    },
    'Download the file',
  );
  return link;
}

/** The items of a reference list: a link each, with the website's host after it. */
export function referenceItems(refs) {
  return refs.map((ref) => {
    const title = ref.title || ref.url || 'Source';
    const link = sourceLink(ref, title);
    if (!link) return h('li', {}, title);
    const host = link.classList.contains('passage-link') ? '' : ` ${new URL(link.href).hostname}`;
    return h('li', {}, link, host ? h('span', { class: 'host' }, host) : null);
  });
}

/** Turn each `[n]` of a rendered answer into a link to its reference (when there is one). */
export function linkCitations(answer, refs) {
  if (!refs.length) return;
  const walker = document.createTreeWalker(answer, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement?.closest('a, code, pre')
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  });
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode);
  for (const node of texts) {
    if (SKIPPED.has(node.parentElement?.tagName)) continue;
    const parts = [];
    let last = 0;
    for (const match of node.data.matchAll(CITATION)) {
      const ref = refs[Number(match[1]) - 1];
      const link = ref ? sourceLink(ref, match[0]) : null;
      if (!link) continue;
      link.classList.add('citation');
      parts.push(node.data.slice(last, match.index), link);
      last = match.index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(node.data.slice(last));
    node.replaceWith(...parts);
  }
}
