// A deck the PowerPoint agent builds: its slides as a grid of thumbnails (each opens
// large), and one download per version, the newest first. Fed by the `deck` event live
// and by the turn's stored `deck` on reload, so a reopened conversation looks the same.
// The version's PDF is offered beside its download, or why there is none said under it.
// A slide opened large is the page drawn at full size (`/file/preview`, of the version's PDF,
// else of its .pptx), shown once it comes: the thumbnail stands in for it until then.
// The slide list lives here only: the answer text, which repeats it for the original
// client, is not shown beside it.

import { objectUrl } from './api.js';
import { h } from './dom.js';
import { safeUrl } from './markdown.js';
import { view } from './viewer.js';

export class DeckView {
  /** `downloadLink(url, name, label)` makes a link that saves a file with the key. */
  constructor(downloadLink) {
    this.downloadLink = downloadLink;
    /** The download URLs of the deck's versions and PDF: the turn lists no other link to them. */
    this.urls = new Set();
    /** The name of the PDF that could not be made: said here, not again in the files list. */
    this.unmade = null;
    this.el = h('section', { class: 'deck', hidden: true, 'aria-label': 'Slides' });
  }

  show(deck) {
    const slides = deck.slides ?? [];
    const thumbnails = deck.thumbnails ?? [];
    const title = deck.title || 'Deck';
    const versions = (deck.versions ?? []).filter((v) => safeUrl(v.url));
    const current = versions.find((v) => v.version === deck.version);
    const pdf = current ? safeUrl(deck.pdf) : null;
    const pdfName = current ? current.name.replace(/\.pptx$/i, '') + '.pdf' : '';
    this.urls = new Set([...versions.map((v) => safeUrl(v.url)), ...(pdf ? [pdf] : [])]);
    this.unmade = current && deck.pdfError ? pdfName : null;
    /** Where each slide is drawn at full size: the PDF's pages, else the deck's own. */
    this.pages = fileIdOf(pdf) ?? fileIdOf(current ? safeUrl(current.url) : null);
    const earlier = versions.filter((v) => v !== current).reverse();
    const facts = [`Version ${deck.version}`, deck.template, `${slides.length} slides`];
    // Parts a deck lacks are null: left out, not shown as the word "null".
    const parts = [
      h('h3', {}, deck.stage === 'ready' ? title : `Outline of ${title}`),
      h('p', { class: 'muted deck-facts' }, facts.filter(Boolean).join(' · ')),
      h(
        'ol',
        { class: 'slides' },
        ...slides.map((slide, index) => this.slide(slide, index, thumbnails[index])),
      ),
      current
        ? h(
            'p',
            { class: 'deck-download' },
            this.downloadLink(safeUrl(current.url), current.name, `Download ${current.name}`),
            pdf ? this.downloadLink(pdf, pdfName, 'PDF') : null,
          )
        : null,
      current && deck.pdfError ? h('p', { class: 'muted deck-pdf-error' }, deck.pdfError) : null,
      earlier.length
        ? h(
            'p',
            { class: 'versions' },
            'Earlier versions: ',
            ...earlier.flatMap((v, i) => [
              i ? ', ' : '',
              this.downloadLink(safeUrl(v.url), v.name, `version ${v.version}`),
            ]),
          )
        : null,
    ];
    this.el.replaceChildren(...parts.filter((part) => part !== null));
    this.el.hidden = false;
  }

  /** One slide: its thumbnail (a button that opens it large) and its number and title. */
  slide(slide, index, url) {
    const label = `${index + 1}. ${slide.title ?? ''}`;
    const caption = h('span', { class: 'slide-title' }, label);
    const src = safeUrl(url);
    if (!src) return h('li', { class: 'slide' }, caption);
    const image = h('img', { class: 'thumbnail', alt: '', width: 480, height: 270 });
    const open = h(
      'button',
      {
        type: 'button',
        class: 'slide-open',
        'aria-label': `Open slide ${label} large`,
        onclick: () => {
          if (!image.src) return;
          const large = h('img', { class: 'slide-large', src: image.src, alt: `Slide ${label}` });
          view(`Slide ${label}`, large);
          this.enlarge(large, index + 1);
        },
      },
      image,
    );
    objectUrl(src)
      .then((local) => {
        image.src = local;
      })
      .catch(() => open.remove());
    return h('li', { class: 'slide' }, open, caption);
  }

  /** Put page `page` drawn at full size in `large` (the thumbnail until it comes), while the
   * viewer still shows it; a failure leaves the thumbnail. */
  async enlarge(large, page) {
    if (!this.pages) return;
    let local;
    try {
      local = await objectUrl(`/file/preview/${encodeURIComponent(this.pages)}?page=${page}`);
    } catch {
      return;
    }
    const dialog = large.closest('dialog');
    if (!dialog?.open) {
      URL.revokeObjectURL(local);
      return;
    }
    large.src = local;
    dialog.addEventListener('close', () => URL.revokeObjectURL(local), { once: true });
  }
}

/** The file id of one of our downloads (`safeUrl`'s `<origin>/file/download/{fileId}`), or
 * null. */
function fileIdOf(url) {
  if (!url) return null;
  const { origin, pathname } = new URL(url);
  const id = origin === location.origin ? /^\/file\/download\/([^/]+)$/.exec(pathname)?.[1] : null;
  return id ? decodeURIComponent(id) : null;
}
