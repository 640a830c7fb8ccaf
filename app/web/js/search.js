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
   * `hide` are the elements the results stand in for (the list and its buttons); `more`
   * reads the next, older page of matches below the ones shown;
   * `onOpen(conversationId, turnId)` opens a result, `onError` shows a failure.
   */
  constructor({ form, input, results, status, more, hide, onOpen, onError }) {
    this.input = input;
    this.results = results;
    this.status = status;
    this.more = more;
    this.hide = hide;
    this.onOpen = onOpen;
    this.onError = onError;
    this.timer = null;
    /** Counts the searches, so an answer that arrives after a newer one's is dropped. */
    this.searches = 0;
    /** The shown search: its query, the pages read, and the turns listed, since a turn
     * asked meanwhile moves the older matches one place down the next page. */
    this.query = '';
    this.pages = 0;
    this.listed = new Set();
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
    more.addEventListener('click', () => this.older());
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
    const page = await this.read(search, query, 1);
    if (!page) return;
    this.query = query;
    this.pages = 1;
    this.listed = new Set();
    this.results.replaceChildren();
    this.add(page);
    this.show(true);
  }

  /** The next page of the shown search, below it; the keyboard moves to its first match. */
  async older() {
    const search = this.searches;
    this.more.disabled = true;
    const page = await this.read(search, this.query, this.pages + 1);
    this.more.disabled = false;
    if (!page) return;
    this.pages += 1;
    const added = this.add(page);
    added[0]?.querySelector('button')?.focus();
  }

  /** A page of matches; null when it failed (and was shown) or a newer search came first. */
  async read(search, query, pageNum) {
    const params = new URLSearchParams({
      q: query,
      pageNum: String(pageNum),
      pageSize: String(PAGE_SIZE),
    });
    try {
      const page = await getJson(`/session/search?${params}`);
      return search === this.searches ? page : null;
    } catch (error) {
      if (search === this.searches) this.onError(error);
      return null;
    }
  }

  /** List a page's matches not listed yet, and say how many there are; the items added. */
  add(page) {
    const fresh = page.records.filter((record) => !this.listed.has(record.turnId));
    for (const record of fresh) this.listed.add(record.turnId);
    const items = fresh.map((record) => this.item(record, this.query));
    this.results.append(...items);
    const older = page.total > this.pages * PAGE_SIZE;
    this.status.textContent =
      page.total === 0
        ? 'No matches.'
        : `${page.total} ${page.total === 1 ? 'match' : 'matches'}` +
          (older ? `, the newest ${this.listed.size} shown` : '');
    this.more.hidden = !older;
    return items;
  }

  show(searching) {
    if (!searching) {
      this.results.replaceChildren();
      this.more.hidden = true;
    }
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
