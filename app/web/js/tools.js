// A tool call as a turn's timeline shows it: its name and what it was asked (a query, a
// page), its output on demand, and its raw arguments one step further in; once it ends,
// whether it was done, failed or declined, a read page's title as a link, and a
// `remember` call's "Saved to memory" note (remembered.js).

import { h } from './dom.js';
import { safeUrl } from './markdown.js';
import { rememberedNote } from './remembered.js';

/** What a call the user rejected answers (app/agents/approvals.py `DECLINED`): it did not
 * run, so it did not fail either. */
const DECLINED = 'Declined by the user';

/** A tool's output without the tags that mark it as read from outside (API.md). */
function readable(result) {
  return (result ?? '').replace(/<\/?untrusted-content\b[^>]*>/g, '').trim();
}

function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text ?? '';
  }
}

/** A one-line hint of a tool call's arguments, e.g. the search query. */
function argumentsHint(text) {
  try {
    const first = Object.values(JSON.parse(text)).find((v) => typeof v === 'string');
    if (first) return first.length > 80 ? `${first.slice(0, 79)}…` : first;
  } catch {
    // Arguments that are not JSON get no hint; they are shown in full below.
  }
  return '';
}

/** The title and address `fetch_page` answered with (its first lines), or null. */
function readPage(result) {
  const title = /^Title: (.*)$/m.exec(result ?? '')?.[1]?.trim();
  const url = safeUrl(/^URL: (.*)$/m.exec(result ?? '')?.[1]?.trim());
  return url ? { title: title || url, url } : null;
}

function pageLink({ title, url }) {
  const attributes = { class: 'read-page', href: url, target: '_blank', rel: 'noopener noreferrer' };
  return h('a', attributes, title);
}

/** A running call's row (`item`) and the parts of it its end fills in. */
export function toolItem(name, args) {
  const state = h('span', { class: 'tool-state' }, 'running…');
  const result = h('pre', { class: 'tool-result', hidden: true });
  const hint = h('span', { class: 'tool-hint' }, argumentsHint(args));
  const item = h(
    'li',
    { class: 'tool running' },
    h(
      'details',
      {},
      h('summary', {}, h('span', { class: 'tool-name' }, name ?? 'tool'), ' ', hint, ' ', state),
      result,
      args
        ? h(
            'details',
            { class: 'tool-arguments' },
            h('summary', {}, 'Arguments'),
            h('pre', { class: 'tool-args' }, prettyJson(args)),
          )
        : null,
    ),
  );
  return { item, state, result, hint };
}

/** Mark a call's row (`entry`, a `toolItem`) ended with `result`; the note a `remember`
 * call leaves under the answer (its Undo fails through `onError`), or null. */
export function endTool(entry, name, result, isError, onError) {
  const text = readable(result);
  let outcome = isError ? 'failed' : 'done';
  if (isError && text.startsWith(DECLINED)) outcome = 'declined';
  entry.item.classList.remove('running');
  entry.item.classList.add(outcome);
  entry.state.textContent = outcome;
  entry.result.textContent = text;
  entry.result.hidden = !entry.result.textContent;
  const page = name === 'fetch_page' && !isError ? readPage(result) : null;
  if (page) entry.hint.replaceChildren(pageLink(page));
  return name === 'remember' && !isError ? rememberedNote(result, onError) : null;
}
