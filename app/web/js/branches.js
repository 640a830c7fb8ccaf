// A turn's place in the conversation's tree, and the controls that change it: a pencil
// that edits the question in place and sends it again (a new turn beside the old one),
// a button that answers the question again, a `< 2/3 >` switcher between the
// versions of a turn (its siblings), and one that deletes the turn with every turn
// after it (pressed twice: it cannot be undone). The page does the asking and the switching; this
// draws the controls from the turn's `{id, parentId, siblings}` and hands the reader's
// choice back. A turn the server has not numbered yet gets no controls.

import { h, pressTwice } from './dom.js';

export class BranchControls {
  /**
   * `onEdit(text)` sends an edited question, `onRegenerate()` asks for a new answer,
   * `onSwitch(turnId)` shows another version and `onDelete()` deletes the turn and what
   * follows it; each is asked only with a numbered turn.
   */
  constructor(turn, { onEdit, onRegenerate, onSwitch, onDelete }) {
    this.turn = turn;
    this.onEdit = onEdit;
    this.onRegenerate = onRegenerate;
    this.onSwitch = onSwitch;
    this.onDelete = onDelete;
    this.meta = { id: null, parentId: null, siblings: [] };
  }

  /** Place the turn in the tree (its id, parent and siblings) and draw its controls. */
  set(meta) {
    this.meta = {
      id: meta.id ?? null,
      parentId: meta.parentId ?? null,
      siblings: meta.siblings ?? [],
    };
    if (this.meta.id !== null) this.turn.el.dataset.turnId = String(this.meta.id);
    this.draw();
  }

  draw() {
    const { id, siblings } = this.meta;
    if (id === null) {
      this.turn.questionTools.replaceChildren();
      this.turn.actions.replaceChildren();
      return;
    }
    this.turn.questionTools.replaceChildren(
      h(
        'button',
        {
          type: 'button',
          class: 'icon-button edit',
          'aria-label': 'Edit question',
          title: 'Edit question',
          onclick: () => this.startEditing(),
        },
        '✎',
      ),
    );
    this.turn.actions.replaceChildren(
      ...(siblings.length > 1 ? [this.switcher()] : []),
      h(
        'button',
        {
          type: 'button',
          class: 'button regenerate',
          'aria-label': 'Regenerate answer',
          onclick: () => this.onRegenerate(),
        },
        '↻ Regenerate',
      ),
      pressTwice(
        { class: 'button delete-turn' },
        'Delete',
        'Delete this and what follows? Press again',
        () => this.onDelete(),
      ),
    );
  }

  /** `< n/m >`: the previous and next version, and where this one stands among them. */
  switcher() {
    const { id, siblings } = this.meta;
    const index = siblings.indexOf(id);
    const step = (by, label, text) =>
      h(
        'button',
        {
          type: 'button',
          class: 'icon-button',
          'aria-label': label,
          'data-step': by,
          disabled: index + by < 0 || index + by >= siblings.length,
          onclick: () => this.onSwitch(siblings[index + by]),
        },
        text,
      );
    return h(
      'span',
      { class: 'versions-switch', role: 'group', 'aria-label': 'Versions' },
      step(-1, 'Previous version', '‹'),
      h('span', { class: 'version-count' }, `${index + 1}/${siblings.length}`),
      step(1, 'Next version', '›'),
    );
  }

  /** The question becomes a box to correct it in: Enter sends, Escape gives up. */
  startEditing() {
    const question = this.turn.el.querySelector('.question');
    const box = h('textarea', { class: 'edit-box', rows: 2, 'aria-label': 'Edited question' });
    box.value = this.turn.question;
    const form = h(
      'form',
      { class: 'edit-form' },
      box,
      h(
        'div',
        { class: 'edit-buttons' },
        h('button', { type: 'button', class: 'button cancel' }, 'Cancel'),
        h('button', { type: 'submit', class: 'button primary' }, 'Send'),
      ),
    );
    const finish = () => {
      form.remove();
      question.hidden = false;
      this.turn.questionTools.hidden = false;
    };
    const cancel = () => {
      finish();
      this.turn.questionTools.querySelector('.edit')?.focus();
    };
    const submit = () => {
      const text = box.value.trim();
      if (!text) return;
      finish();
      this.onEdit(text);
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      submit();
    });
    form.querySelector('.cancel').addEventListener('click', cancel);
    box.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submit();
      } else if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        cancel();
      }
    });
    question.hidden = true;
    this.turn.questionTools.hidden = true;
    question.after(form);
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  }

  /** Move the keyboard to this turn's switcher button that steps `by` (after a switch). */
  focusStep(by) {
    const button = this.turn.actions.querySelector(`[data-step="${by}"]`);
    if (!button) return;
    if (button.disabled) button.parentElement.querySelector('button:not([disabled])')?.focus();
    else button.focus();
  }
}
