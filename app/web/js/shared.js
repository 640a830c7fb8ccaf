// A conversation shared by link (`#s=<token>`, `GET /shared/{token}`), shown read-only to
// anyone holding the link, signed in or not: its questions, answers and sources as the
// owner shared them, with no composer, list or controls, and a way to a chat of one's own.

import { ApiError, getJson } from './api.js';
import { h } from './dom.js';
import { TurnView } from './turn.js';

/** Show the shared conversation in `messages` (in place of `welcome`). */
export async function showShared(token, { messages, welcome }) {
  document.body.classList.add('shared-view');
  welcome.hidden = true;
  let view;
  try {
    view = await getJson(`/shared/${encodeURIComponent(token)}`);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
    messages.append(
      h(
        'p',
        { class: 'shared-banner' },
        'This shared conversation is not available: its owner stopped sharing it, ' +
          'or the link is wrong. ',
        h('a', { href: location.pathname }, 'Start a chat of your own'),
      ),
    );
    return;
  }
  document.title = `${view.title} · dodo-agent`;
  const when = new Date(view.sharedAt).toLocaleDateString();
  messages.append(
    h(
      'div',
      { class: 'shared-banner', role: 'note' },
      h('h2', {}, view.title),
      h('p', { class: 'muted' }, `A shared conversation, as it was on ${when}. `),
      h('a', { href: location.pathname }, 'Start a chat of your own'),
    ),
  );
  for (const message of view.messages) {
    const turn = TurnView.fromStored({ ...message, status: 'completed' }, {});
    messages.append(turn.el);
  }
}
