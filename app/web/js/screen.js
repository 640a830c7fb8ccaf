// A screen that takes the chat's place while it is open (the admin screen, your account):
// its button toggles it, one screen is open at a time, and closing it gives the chat back.
// Also what both show of spending: a period's query and its figures as text.

import { h } from './dom.js';
import { dollars } from './models.js';

export const DAY_MS = 86_400_000;
const open = new Set();

export class Screen {
  /** `button` opens it (none: the page opens it), `panel` is its section; `chat` are the
   * elements it hides while open. */
  constructor({ button = null, panel, chat }) {
    this.button = button;
    this.panel = panel;
    this.chat = chat;
    button?.addEventListener('click', () => (this.isOpen() ? this.close() : this.open()));
  }

  isOpen() {
    return !this.panel.hidden;
  }

  open() {
    closeScreens();
    open.add(this);
    this.panel.hidden = false;
    for (const element of this.chat) element.hidden = true;
    this.button?.setAttribute('aria-expanded', 'true');
    this.panel.querySelector('h2').focus();
    this.opened();
  }

  close() {
    if (!this.isOpen()) return;
    open.delete(this);
    this.panel.hidden = true;
    for (const element of this.chat) element.hidden = false;
    this.button?.setAttribute('aria-expanded', 'false');
    this.closed();
  }

  /** What a screen does once shown (read what it shows) and once hidden (stop polling). */
  opened() {}

  closed() {}
}

/** Give the chat back: whichever screen is open closes. */
export function closeScreens() {
  for (const screen of [...open]) screen.close();
}

/** The periods a screen offers to read spending over, in days; 30 until one is picked. */
export function fillPeriods(select) {
  const periods = [
    [1, 'Last day'],
    [7, 'Last 7 days'],
    [30, 'Last 30 days'],
    [90, 'Last 90 days'],
  ];
  select.replaceChildren(
    ...periods.map(([days, text]) => new Option(text, days, false, days === 30)),
  );
}

/** `from` and `to` for the last `days` days, as `/usage` and `/admin/usage` take them. */
export function periodQuery(days) {
  const to = new Date();
  const from = new Date(to.getTime() - Number(days) * DAY_MS);
  return new URLSearchParams({ from: from.toISOString(), to: to.toISOString() });
}

const number = (value) => value.toLocaleString();

/** Tokens, marked `≈` where some were counted here rather than by the provider. */
function tokens(count, spend) {
  return spend.estimated ? `≈ ${number(count)}` : number(count);
}

/** A spend's figures as table cells: turns, tokens in, tokens out, cost. */
export function spendCells(spend) {
  return cells(
    number(spend.turns),
    tokens(spend.promptTokens, spend),
    tokens(spend.completionTokens, spend),
    spend.costUsd === null ? '—' : dollars(spend.costUsd),
  );
}

/** `rows` as `table`'s body: the table shows only with some, and its "none" line (the
 * element `<table id>-empty`) only without. */
export function showRows(table, rows) {
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = rows.length === 0;
  document.getElementById(`${table.id}-empty`).hidden = rows.length > 0;
}

export function cells(...values) {
  return values.map((value) => h('td', {}, value));
}
