// "Saved to memory" under an answer whose turn kept something of the user (the `remember`
// tool, whose result says what it did: app/tools/remember.py), with an Undo: a saved item
// is deleted, an updated one gets its old text back, a forgotten one is saved again. The
// same note for an answer streaming in and one read back from history.

import { send, sendJson } from './api.js';
import { h } from './dom.js';

const SAID = { save: 'Saved to memory', update: 'Memory updated', forget: 'Forgotten' };

/** The note for a `remember` result, or null for a result it cannot read. */
export function rememberedNote(result, onError) {
  let change;
  try {
    change = JSON.parse(result);
  } catch {
    return null;
  }
  if (!change || typeof change !== 'object' || !SAID[change.action]) return null;
  const text = change.action === 'forget' ? change.previous : change.content;
  const status = h('span', { class: 'memory-status', role: 'status' });
  const undo = h('button', { type: 'button', class: 'button undo-memory' }, 'Undo');
  const note = h(
    'p',
    { class: 'memory-note', 'data-action': change.action },
    h('span', { class: 'memory-text' }, `${SAID[change.action]}: “${text ?? ''}”`),
    undo,
    status,
  );
  undo.addEventListener('click', async () => {
    undo.disabled = true;
    try {
      await undoChange(change);
    } catch (error) {
      undo.disabled = false;
      onError?.(error);
      return;
    }
    undo.remove();
    note.dataset.undone = 'true';
    status.textContent = 'Undone.';
  });
  return note;
}

async function undoChange(change) {
  const path = `/memory/${encodeURIComponent(change.id)}`;
  if (change.action === 'save') {
    await send(path, { method: 'DELETE' });
  } else if (change.action === 'update') {
    await sendJson('PATCH', path, { content: change.previous });
  } else {
    const item = { content: change.previous, projectId: change.projectId ?? null };
    await sendJson('POST', '/memory', item);
  }
}
