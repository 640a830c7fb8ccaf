// A thumb up or down under a finished answer (`PUT …/turns/{id}/rating`). Pressing the
// pressed one again takes the verdict back. A thumb down asks, in a small box that can
// be skipped, what was wrong: the comment goes with it, for whoever runs the service.

import { h } from './dom.js';

const VERDICTS = [
  ['up', 'Good answer'],
  ['down', 'Bad answer'],
];

/** A thumb (the page's `#thumb-icon`), drawn rather than an emoji, which not every system
 * has a font for; the down one is the up one turned over. */
function thumb(rating) {
  const icon = document.getElementById('thumb-icon').content.firstElementChild.cloneNode(true);
  icon.classList.add(rating);
  return icon;
}

export class RatingControls {
  /** `rate(rating, comment)` stores a verdict (null takes it back) and rejects on failure;
   * `onError` shows a failure the way the page shows any other. */
  constructor(turn, { rate, onError }) {
    this.rate = rate;
    this.onError = onError;
    this.rating = null;
    this.comment = null;
    this.buttons = new Map(
      VERDICTS.map(([rating, name]) => [
        rating,
        h(
          'button',
          {
            type: 'button',
            class: 'icon-button verdict',
            'aria-label': name,
            title: name,
            'aria-pressed': 'false',
            onclick: () => this.press(rating),
          },
          thumb(rating),
        ),
      ]),
    );
    this.box = h('textarea', {
      class: 'rating-comment',
      rows: 2,
      maxlength: 2000,
      'aria-label': 'What was wrong with this answer? (optional)',
      placeholder: 'What was wrong? (optional)',
    });
    this.form = h(
      'form',
      { class: 'rating-form', hidden: true },
      this.box,
      h('button', { type: 'submit', class: 'button primary' }, 'Send'),
      h('button', { type: 'button', class: 'button', onclick: () => this.closeForm() }, 'Skip'),
    );
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.save('down', this.box.value.trim() || null).then(() => this.closeForm(), onError);
    });
    this.box.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.form.requestSubmit();
      } else if (event.key === 'Escape') {
        event.preventDefault();
        this.closeForm();
      }
    });
    turn.ratingTools.append(...this.buttons.values());
    turn.ratingForm.append(this.form);
  }

  /** The verdict as the history stored it. */
  set(rating, comment) {
    this.rating = rating ?? null;
    this.comment = comment ?? null;
    for (const [value, button] of this.buttons) {
      button.setAttribute('aria-pressed', String(value === this.rating));
    }
    const said = this.rating === 'down' && this.comment;
    this.buttons.get('down').title = said ? `Bad answer: ${this.comment}` : 'Bad answer';
  }

  press(rating) {
    const again = this.rating === rating;
    this.save(again ? null : rating, null).then(() => {
      if (rating === 'down' && !again) this.openForm();
      else this.closeForm();
    }, this.onError);
  }

  async save(rating, comment) {
    await this.rate(rating, comment);
    this.set(rating, comment);
  }

  openForm() {
    this.box.value = '';
    this.form.hidden = false;
    this.box.focus();
  }

  closeForm() {
    const inside = this.form.contains(document.activeElement);
    this.form.hidden = true;
    if (inside) this.buttons.get('down').focus();
  }
}
