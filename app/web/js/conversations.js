// The conversation list (`/session/list`), newest activity first, a page at a time:
// the pinned ones under their own heading first, the rest under headings by when each
// was last active (Today, Yesterday, the last 7 and 30 days, then by month), in the
// reader's own time zone.
// Deleting takes two presses of the same button, so a slip of the finger or the
// keyboard does not lose a conversation, and no modal dialog is needed. A badge says
// which conversations have a turn running, queued or waiting for the reader
// (`/agent/runs`), whichever tab, browser or instance started it. Each conversation
// has a menu (a disclosure) to rename it in place, move it to a project, download it as
// Markdown or JSON, or delete it; a conversation in a project names it. The list is one tab stop: the arrow keys move between conversations, and
// Right arrow reaches a conversation's menu (Left comes back), so a keyboard user
// passes the whole list with one Tab. The open conversation is scrolled into view.

import { download, getJson, send, sendJson } from './api.js';
import { copyText } from './clipboard.js';
import { h, pressTwice } from './dom.js';
import { DAY_MS } from './screen.js';

const PAGE_SIZE = 20;
const RUN_LABELS = { running: 'running', queued: 'queued', paused: 'waiting for you' };
const EXPORTS = [
  { format: 'markdown', extension: 'md', label: 'Download Markdown' },
  { format: 'json', extension: 'json', label: 'Download JSON' },
];

/** When, under its heading: the time of day for today and yesterday, else the date. */
function when(iso, period) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  return period === 'Today' || period === 'Yesterday'
    ? date.toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' })
    : date.toLocaleDateString();
}

/** The heading a conversation last active at `iso` goes under, as of `now`. */
function periodOf(iso, now) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return 'Older';
  const midnight = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  // Rounded: a day with a clock change is 23 or 25 hours long.
  const days = Math.round((midnight(now) - midnight(date)) / DAY_MS);
  if (days <= 0) return 'Today';
  if (days === 1) return 'Yesterday';
  if (days < 7) return 'Previous 7 days';
  if (days < 30) return 'Previous 30 days';
  return date.toLocaleDateString(undefined, { month: 'long', year: 'numeric' });
}

export class ConversationList {
  /**
   * `onOpen(id)` opens a conversation, `onDeleted(id)` follows a deletion, `onError` shows
   * one and `onNotice` news (a link shared), and `agentName(type)` names an agent as the
   * agent picker does; `projects()` lists the caller's projects (a conversation moves
   * between them), and `onMoved(id, projectId)` follows a move.
   */
  constructor({
    list,
    empty,
    more,
    onOpen,
    onDeleted,
    onError,
    onNotice,
    agentName,
    projects,
    onMoved,
  }) {
    this.onNotice = onNotice;
    this.agentName = agentName;
    this.projects = projects;
    this.onMoved = onMoved;
    this.list = list;
    this.empty = empty;
    this.more = more;
    this.onOpen = onOpen;
    this.onDeleted = onDeleted;
    this.onError = onError;
    this.pages = 1;
    this.current = null;
    /** The conversation last scrolled into view. */
    this.shown = null;
    /** conversationId -> the status of its run (`running`, `queued`, `paused`). */
    this.runs = new Map();
    /** Counts the list's loads, so an answer that arrives after a newer one's is dropped. */
    this.loads = 0;
    more.addEventListener('click', () => {
      this.pages += 1;
      this.refresh().catch(onError);
    });
    list.addEventListener('keydown', (event) => this.move(event));
  }

  /** Arrow keys: Up and Down (Home, End) between conversations, Right into the menu. */
  move(event) {
    const target = event.target;
    const buttons = [...this.list.querySelectorAll('button.open:not([hidden])')];
    if (target.matches('button.open')) {
      const index = buttons.indexOf(target);
      const next = {
        ArrowDown: buttons[index + 1],
        ArrowUp: buttons[index - 1],
        Home: buttons[0],
        End: buttons.at(-1),
        ArrowRight: target.closest('li').querySelector('.menu-button'),
      }[event.key];
      if (!next) return;
      event.preventDefault();
      if (next.matches('button.open')) this.tabStop(next);
      next.focus();
    } else if (target.matches('.menu-button') && event.key === 'ArrowLeft') {
      event.preventDefault();
      target.closest('li').querySelector('button.open').focus();
    }
  }

  /** Make `button` the list's one tab stop. */
  tabStop(button) {
    for (const other of this.list.querySelectorAll('button.open')) {
      other.tabIndex = other === button ? 0 : -1;
    }
  }

  /** Reload every page shown so far; throws ApiError for the caller to show. */
  async refresh() {
    const load = ++this.loads;
    const page = await getJson(`/session/list?pageNum=1&pageSize=${PAGE_SIZE * this.pages}`);
    // Two loads can cross (the page's first, slow, and one after an answer): the older
    // list must not replace the newer one.
    if (load !== this.loads) return;
    // Keep the keyboard where it was: on the same conversation, in its new place.
    const active = this.list.contains(document.activeElement) ? document.activeElement : null;
    const focused = active?.closest('li')?.querySelector('button.open')?.dataset.id;
    // A menu the user opened stays open (an answer that ends refreshes the list under it).
    const opened = this.list.querySelector('.menu:not([hidden])')?.id;
    const inMenu = Boolean(active?.closest('.menu-wrapper'));
    this.list.replaceChildren(...this.grouped(page.records));
    this.empty.hidden = page.records.length > 0;
    this.more.hidden = page.records.length >= page.total;
    this.markCurrent(this.current);
    this.markRuns();
    const toggle = opened ? this.reopen(opened) : null;
    if (toggle && inMenu) toggle.focus();
    else if (focused) this.focusOn(focused);
  }

  /** Open the menu `panelId` again after a refresh drew it closed; its toggle, if it is
   * still there. */
  reopen(panelId) {
    const panel = this.list.querySelector(`#${CSS.escape(panelId)}`);
    const toggle = panel?.parentElement.querySelector('.menu-button');
    if (!toggle) return null;
    panel.hidden = false;
    toggle.setAttribute('aria-expanded', 'true');
    return toggle;
  }

  /** Show `runs` (conversationId -> status) as badges; a running one outranks the rest. */
  setRuns(runs) {
    this.runs = runs;
    this.markRuns();
  }

  markRuns() {
    for (const button of this.list.querySelectorAll('button.open')) {
      const status = this.runs.get(button.dataset.id);
      let badge = button.querySelector('.run-badge');
      if (!status) {
        badge?.remove();
        delete button.dataset.run;
        continue;
      }
      button.dataset.run = status;
      if (!badge) {
        badge = h('span', { class: 'run-badge' });
        button.querySelector('.title').after(badge);
      }
      badge.textContent = RUN_LABELS[status] ?? status;
    }
  }

  openButton(id) {
    return [...this.list.querySelectorAll('button.open')].find((b) => b.dataset.id === id);
  }

  clear() {
    this.loads += 1;
    this.list.replaceChildren();
    this.runs = new Map();
    this.empty.hidden = false;
    this.more.hidden = true;
  }

  markCurrent(id) {
    this.current = id;
    for (const button of this.list.querySelectorAll('button.open')) {
      if (button.dataset.id === id) button.setAttribute('aria-current', 'true');
      else button.removeAttribute('aria-current');
    }
    const current = id ? this.openButton(id) : null;
    const focused = this.list.contains(document.activeElement)
      ? document.activeElement.closest('li')?.querySelector('button.open')
      : null;
    const first = this.list.querySelector('button.open');
    if (focused ?? current ?? first) this.tabStop(focused ?? current ?? first);
    // Scrolled to once when it is opened, not at every reload of the list, which would
    // pull the list back while the reader looks further down.
    if (current && this.shown !== id) {
      current.scrollIntoView({ block: 'nearest' });
      this.shown = id;
    }
  }

  /** The records' items, each group of them after its heading. */
  grouped(records) {
    const now = new Date();
    const items = [];
    let heading = null;
    for (const record of records) {
      const active = periodOf(record.updateTime, now);
      const group = record.pinned ? 'Pinned' : active;
      if (group !== heading) {
        heading = group;
        items.push(h('li', { class: 'period' }, h('h3', {}, group)));
      }
      items.push(this.item(record, active));
    }
    return items;
  }

  item(record, period) {
    const title = record.title || record.question;
    const project = this.projects().find((p) => p.projectId === record.projectId);
    const open = h(
      'button',
      {
        type: 'button',
        class: 'open',
        'data-id': record.conversationId,
        onclick: () => this.onOpen(record.conversationId),
      },
      h('span', { class: 'title' }, title),
      h(
        'span',
        { class: 'meta' },
        `${this.agentName(record.agentType)} · ${when(record.updateTime, period)}`,
      ),
      project ? h('span', { class: 'meta project-tag' }, project.name) : null,
    );
    const item = h('li', {}, open);
    item.append(this.menu(record, title, item, open));
    return item;
  }

  /** The conversation's menu: rename, pin, share, its downloads, delete. */
  menu(record, title, item, open) {
    const id = record.conversationId;
    const panel = h('div', { class: 'menu', id: `menu-${id}`, hidden: true });
    const toggle = h(
      'button',
      {
        type: 'button',
        class: 'icon-button menu-button',
        'aria-label': `More for “${title}”`,
        'aria-expanded': 'false',
        'aria-controls': panel.id,
        title: 'More',
        // Reached with Right arrow from the conversation: the list is one tab stop.
        tabindex: -1,
      },
      '⋯',
    );
    const wrapper = h('div', { class: 'menu-wrapper' }, toggle, panel);
    const close = () => {
      panel.hidden = true;
      toggle.setAttribute('aria-expanded', 'false');
    };
    toggle.addEventListener('click', () => {
      panel.hidden = !panel.hidden;
      toggle.setAttribute('aria-expanded', String(!panel.hidden));
    });
    // Closes once the keyboard or a click goes anywhere outside it.
    wrapper.addEventListener('focusout', (event) => {
      if (!wrapper.contains(event.relatedTarget)) close();
    });
    wrapper.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !panel.hidden) {
        event.stopPropagation();
        close();
        toggle.focus();
      }
    });
    const remove = pressTwice({ class: 'delete' }, 'Delete', 'Delete? Press again', () => {
      this.remove(id).catch(this.onError);
    });
    // An entry closes the menu, then does its work; a failure is shown.
    const entry = (attributes, label, act) =>
      h(
        'button',
        {
          type: 'button',
          ...attributes,
          onclick: () => {
            close();
            Promise.resolve(act()).catch(this.onError);
          },
        },
        label,
      );
    const path = `/session/${encodeURIComponent(id)}`;
    panel.append(
      entry({ class: 'rename' }, 'Rename', () => this.startRenaming(id, title, item, open)),
      entry({ class: 'share' }, record.shared ? 'Copy share link' : 'Share link', () =>
        this.share(id),
      ),
      // Only a shared conversation has this entry (append() would write a null as "null").
      ...(record.shared
        ? [entry({ class: 'unshare' }, 'Stop sharing', () => this.unshare(id))]
        : []),
      entry({ class: 'pin' }, record.pinned ? 'Unpin' : 'Pin', () =>
        this.change(id, { pinned: !record.pinned }),
      ),
      // None while there is no project to move to (append() would write a null as "null").
      ...[this.moveControl(record, close)].filter(Boolean),
      ...EXPORTS.map(({ format, extension, label }) =>
        entry({ 'data-format': format }, label, () =>
          download(`${path}/export?format=${format}`, `${id}.${extension}`),
        ),
      ),
      remove,
    );
    return wrapper;
  }

  /** A box choosing the conversation's project (`PATCH /session/{id} {projectId}`); none
   * while the caller has no project and it is in none. */
  moveControl(record, close) {
    const projects = this.projects();
    if (!projects.length && !record.projectId) return null;
    const select = h(
      'select',
      { class: 'move' },
      new Option('No project', ''),
      ...projects.map((project) => new Option(project.name, project.projectId)),
    );
    select.value = record.projectId ?? '';
    select.addEventListener('change', () => {
      const projectId = select.value || null;
      close();
      this.change(record.conversationId, { projectId })
        .then(() => this.onMoved(record.conversationId, projectId))
        .catch(this.onError);
    });
    return h('label', { class: 'move-label' }, 'Project ', select);
  }

  /** Share the conversation by link up to its latest answer (or move its link there), and
   * copy the link. */
  async share(id) {
    const link = await getJson(`/session/${encodeURIComponent(id)}/share`, { method: 'POST' });
    const url = new URL(link.path, location.href).href;
    const copied = await copyText(url);
    await this.refresh();
    this.onNotice(
      `${copied ? 'Link copied' : 'The link'}: anyone who has it can read this conversation ` +
        `up to its latest answer, without signing in. ${url}`,
    );
  }

  async unshare(id) {
    await send(`/session/${encodeURIComponent(id)}/share`, { method: 'DELETE' });
    await this.refresh();
    this.onNotice('Not shared any more: the link no longer opens it.');
  }

  /** Rename, pin, unpin or move the conversation (`PATCH /session/{id}` with `change`), and
   * keep the keyboard on it in its new place. */
  async change(id, change) {
    await sendJson('PATCH', `/session/${encodeURIComponent(id)}`, change);
    await this.refresh();
    this.focusOn(id);
  }

  /** The keyboard on a conversation of the list (the list's one tab stop), if it is there. */
  focusOn(id) {
    const button = this.openButton(id);
    if (button) {
      this.tabStop(button);
      button.focus();
    }
  }

  /** The title becomes a box: Enter saves (`PATCH /session/{id}`), Escape gives up. */
  startRenaming(id, title, item, open) {
    const input = h('input', {
      type: 'text',
      class: 'rename-input',
      'aria-label': 'New title',
      maxlength: 200,
      required: true,
    });
    input.value = title;
    const form = h(
      'form',
      { class: 'rename-form' },
      input,
      h('button', { type: 'submit', class: 'icon-button', 'aria-label': 'Save title' }, '✓'),
    );
    // Removing the focused box moves the focus, which would close it again: once is enough.
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open.hidden = false;
      if (form.contains(document.activeElement)) open.focus();
      form.remove();
    };
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const wanted = input.value.trim();
      if (!wanted) return;
      close();
      this.change(id, { title: wanted }).catch(this.onError);
    });
    form.addEventListener('focusout', (event) => {
      if (!form.contains(event.relatedTarget)) close();
    });
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault();
        event.stopPropagation();
        close();
      }
    });
    open.hidden = true;
    item.prepend(form);
    input.focus();
    input.select();
  }


  async remove(id) {
    await send(`/session/${encodeURIComponent(id)}`, { method: 'DELETE' });
    await this.onDeleted(id);
    await this.refresh();
  }
}
