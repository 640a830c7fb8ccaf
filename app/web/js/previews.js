// Pictures of a document's pages in the chat: the first page as a thumbnail beside the
// file, and a viewer that turns its pages (`/file/preview/{fileId}?page=N`, fetched with
// the key). `/file/info` says how many pages there are; a file with none (text, one that
// cannot be drawn) simply gets no thumbnail. One viewer serves the whole page.

import { getJson, objectUrl } from './api.js';
import { h } from './dom.js';

const THUMBNAIL_WIDTH = 160;

/** The preview URL of page `page` of a file. */
function pageUrl(fileId, page) {
  return `/file/preview/${encodeURIComponent(fileId)}?page=${page}`;
}

class PageViewer {
  constructor() {
    this.fileId = null;
    this.page = 1;
    this.pages = 1;
    this.loading = 0;
    this.image = h('img', { class: 'page-image', alt: '' });
    this.position = h('span', { class: 'page-position', 'aria-live': 'polite' });
    this.title = h('h2', { id: 'page-viewer-title' });
    this.previous = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.show(this.page - 1) },
      'Previous page',
    );
    this.next = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.show(this.page + 1) },
      'Next page',
    );
    const close = h(
      'button',
      { type: 'button', class: 'button', onclick: () => this.el.close() },
      'Close',
    );
    this.el = h(
      'dialog',
      { class: 'page-viewer', 'aria-labelledby': 'page-viewer-title' },
      h('header', {}, this.title, close),
      h('div', { class: 'page-frame' }, this.image),
      h('footer', {}, this.previous, this.position, this.next),
    );
    // Arrow keys turn pages; Escape closes (the dialog's own behaviour).
    this.el.addEventListener('keydown', (event) => {
      if (event.key === 'ArrowLeft') this.show(this.page - 1);
      if (event.key === 'ArrowRight') this.show(this.page + 1);
    });
    this.el.addEventListener('close', () => this.release());
    document.body.append(this.el);
  }

  open(fileId, name, pages) {
    this.fileId = fileId;
    this.pages = pages;
    this.title.textContent = name;
    this.el.showModal();
    this.show(1);
  }

  async show(page) {
    if (page < 1 || page > this.pages) return;
    this.page = page;
    this.previous.disabled = page === 1;
    this.next.disabled = page === this.pages;
    this.position.textContent = `Page ${page} of ${this.pages}`;
    // The page shown is never another than the one named: the old one goes at once.
    this.release();
    const asked = ++this.loading;
    try {
      const local = await objectUrl(pageUrl(this.fileId, page));
      if (asked !== this.loading) {
        URL.revokeObjectURL(local);
        return;
      }
      this.image.alt = `${this.title.textContent}, page ${page}`;
      this.image.dataset.page = String(page);
      this.image.src = local;
    } catch (error) {
      if (asked === this.loading) this.position.textContent = `Page ${page}: ${error.message}`;
    }
  }

  release() {
    if (this.image.src.startsWith('blob:')) URL.revokeObjectURL(this.image.src);
    this.image.removeAttribute('src');
    this.image.alt = '';
    delete this.image.dataset.page;
  }
}

let viewer = null;

function openViewer(fileId, name, pages) {
  viewer ??= new PageViewer();
  viewer.open(fileId, name, pages);
}

/**
 * A button showing the first page of file `fileId`, which opens its pages, or nothing
 * (it is added to `into` once `/file/info` says the file has pages).
 */
export async function addPreview(into, fileId, name) {
  let info;
  try {
    info = await getJson(`/file/info/${encodeURIComponent(fileId)}`);
  } catch {
    return; // A file gone, or no key yet: the file's link is still there.
  }
  const pages = Number(info?.pages);
  if (!Number.isInteger(pages) || pages < 1) return;
  const title = name || info.fileName || 'Document';
  const image = h('img', { alt: '', width: THUMBNAIL_WIDTH });
  const label = `Preview ${title} (${pages} ${pages === 1 ? 'page' : 'pages'})`;
  const button = h(
    'button',
    {
      type: 'button',
      class: 'page-thumbnail',
      'aria-label': label,
      title: label,
      onclick: () => openViewer(fileId, title, pages),
    },
    image,
  );
  try {
    image.src = await objectUrl(pageUrl(fileId, 1));
  } catch {
    return;
  }
  into.append(button);
}
