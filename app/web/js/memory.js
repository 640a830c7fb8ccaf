// Your memory (`/memory`): what the agents keep of you across conversations, to read,
// add to, edit in place, delete one by one or all at once (pressed twice), and the
// switch that turns it off for all your turns. A project's items say which project.
// Opened from the account screen; on a server with memory off (`MEMORY_ENABLED=false`)
// its button there stays out of sight.

import { ApiError, getJson, send, sendJson } from './api.js';
import { h, pressTwice } from './dom.js';
import { Screen } from './screen.js';

export class MemoryScreen extends Screen {
  /** As a `Screen`; `place` is what holds its button (the account screen's section),
   * `onError(error)` shows a failure, `projectName(id)` names a project. */
  constructor({ button, place, panel, chat, onError, projectName }) {
    super({ button, panel, chat });
    this.place = place;
    /** The server keeps memory (`MEMORY_ENABLED`). */
    this.available = false;
    this.onError = onError;
    this.projectName = projectName;
    const $ = (id) => panel.querySelector(`#${id}`);
    this.enabled = $('memory-enabled');
    this.items = $('memory-items');
    this.empty = $('memory-items-empty');
    this.form = $('memory-add');
    this.input = $('memory-new');
    this.clearAll = pressTwice(
      { class: 'button danger', id: 'memory-clear' },
      'Delete all',
      'Delete everything? Press again',
      () => this.run(() => send('/memory', { method: 'DELETE' })),
    );
    $('memory-clear-place').replaceWith(this.clearAll);
    $('memory-close').addEventListener('click', () => this.close());
    this.enabled.addEventListener('change', () =>
      sendJson('PATCH', '/memory/settings', { enabled: this.enabled.checked }).catch(onError),
    );
    /** The adds asked for, one after another: a fast typist's items land in their order. */
    this.adding = Promise.resolve();
    /** How many looks at the memory were asked for: only the latest one is drawn. */
    this.looks = 0;
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      const content = this.input.value.trim();
      if (!content) return;
      // The box is free at once for the next item; it gets this one back if it fails.
      this.input.value = '';
      this.adding = this.adding.then(() =>
        this.run(() =>
          sendJson('POST', '/memory', { content }).catch((error) => {
            if (!this.input.value) this.input.value = content;
            throw error;
          }),
        ),
      );
    });
  }

  /** Offer the screen when the server keeps memory (its switch answers). */
  async load() {
    try {
      await getJson('/memory/settings');
      this.available = true;
    } catch (error) {
      this.available = false;
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    } finally {
      this.place.hidden = !this.available;
    }
  }

  opened() {
    this.show().catch(this.onError);
  }

  /** Do `act`, then show the memory as it is now; settles once shown (or failed). */
  run(act) {
    return Promise.resolve(act())
      .then(() => this.show())
      .catch(this.onError);
  }

  async show() {
    const look = ++this.looks;
    const [settings, items] = await Promise.all([
      getJson('/memory/settings'),
      getJson('/memory'),
    ]);
    // A later look is on its way, or drawn: this answer may be older than it.
    if (look !== this.looks) return;
    this.enabled.checked = settings.enabled;
    this.items.replaceChildren(...items.map((item) => this.item(item)));
    this.empty.hidden = items.length > 0;
    this.clearAll.hidden = items.length === 0;
  }

  item(item) {
    const text = h('span', { class: 'memory-text' }, item.content);
    const where = item.projectId
      ? h('span', { class: 'memory-where' }, this.projectName(item.projectId))
      : null;
    const row = h('li', { 'data-id': item.id }, text, where);
    const edit = h(
      'button',
      {
        type: 'button',
        class: 'button edit-memory',
        'aria-label': `Edit “${item.content}”`,
        onclick: () => this.startEditing(item, row),
      },
      'Edit',
    );
    const remove = pressTwice(
      { class: 'button danger delete-memory', 'aria-label': `Delete “${item.content}”` },
      'Delete',
      'Delete?',
      () =>
        this.run(() => send(`/memory/${encodeURIComponent(item.id)}`, { method: 'DELETE' })),
    );
    row.append(h('span', { class: 'memory-actions' }, edit, remove));
    return row;
  }

  /** The item's text becomes a box: Enter (or Save) keeps it, Escape gives up. */
  startEditing(item, row) {
    const input = h('input', {
      type: 'text',
      class: 'memory-edit',
      'aria-label': 'The item, changed',
      maxlength: 1000,
      required: true,
    });
    input.value = item.content;
    const form = h(
      'form',
      { class: 'memory-edit-form' },
      input,
      h('button', { type: 'submit', class: 'button primary' }, 'Save'),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const content = input.value.trim();
      if (!content) return;
      const path = `/memory/${encodeURIComponent(item.id)}`;
      this.run(() => sendJson('PATCH', path, { content }));
    });
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        this.show().catch(this.onError);
      }
    });
    row.replaceChildren(form);
    input.focus();
    input.select();
  }
}
