// Searching every conversation (`/session/search`) from the sidebar. While there is a
// query the results take the list's place: each names its conversation and shows the
// matching text with the match marked. The snippet is the reader's own text, which can
// hold anything, so it is only ever set as text: the marks are elements around text
// nodes, never markup built from a string.

import { getJson } from './api.js';
import { h } from './dom.js';

const TYPING_PAUSE_MS = 250;
const PAGE_SIZE = 20;

/** `text` as nodes, each case-insensitive occurrence of `query` in a <mark>. */
export function marked(text, query) {
  const pattern = new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'giu');
  const nodes = [];
  let from = 0;
  for (const match of text.matchAll(pattern)) {
    nodes.push(text.slice(from, match.index), h('mark', {}, match[0]));
    from = match.index + match[0].length;
  }
  nodes.push(text.slice(from));
  return nodes.filter((node) => node !== '');
}

export class ConversationSearch {
  /**
   * `hide` are the elements the results stand in for (the list and its buttons);
   * `onOpen(conversationId, turnId)` opens a result, `onError` shows a failure.
   */
  constructor({ form, input, results, status, hide, onOpen, onError }) {
    this.input = input;
    this.results = results;
    this.status = status;
    this.hide = hide;
    this.onOpen = onOpen;
    this.onError = onError;
    this.timer = null;
    /** Counts the searches, so an answer that arrives after a newer one's is dropped. */
    this.searches = 0;
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.run();
    });
    input.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), TYPING_PAUSE_MS);
    });
    input.addEventListener('keydown', (event) => {
      // Escape empties the box first; on an empty box it is left to close the drawer.
      if (event.key === 'Escape' && input.value) {
        event.preventDefault();
        event.stopPropagation();
        input.value = '';
        this.run();
      }
    });
  }

  /** Search for what the box holds; an empty box shows the list again. */
  async run() {
    clearTimeout(this.timer);
    const query = this.input.value.trim();
    const search = ++this.searches;
    if (!query) {
      this.show(false);
      return;
    }
    const params = new URLSearchParams({ q: query, pageSize: String(PAGE_SIZE) });
    let page;
    try {
      page = await getJson(`/session/search?${params}`);
    } catch (error) {
      if (search === this.searches) this.onError(error);
      return;
    }
    if (search !== this.searches) return;
    this.results.replaceChildren(...page.records.map((record) => this.item(record, query)));
    this.status.textContent =
      page.total === 0
        ? 'No matches.'
        : `${page.total} ${page.total === 1 ? 'match' : 'matches'}` +
          (page.total > page.records.length ? `, the newest ${page.records.length} shown` : '');
    this.show(true);
  }

  show(searching) {
    if (!searching) this.results.replaceChildren();
    this.results.hidden = !searching;
    this.status.hidden = !searching;
    for (const element of this.hide) element.classList.toggle('searching', searching);
  }

  item(record, query) {
    return h(
      'li',
      {},
      h(
        'button',
        {
          type: 'button',
          class: 'open',
          onclick: () => this.onOpen(record.conversationId, record.turnId),
        },
        h('span', { class: 'title' }, record.title),
        h('span', { class: 'snippet' }, ...marked(record.snippet, query)),
      ),
    );
  }
}
