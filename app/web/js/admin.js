// The admin screen, for the users `ADMIN_USERS` names (`/auth/me` says `admin`): every
// user's running turns, with a stop for each; what each user spent over a period; the
// answers users rated (the bad ones first of all); and one user's limits, read and set.
// It uses the `/admin` API only, and for anyone else its button never shows (those paths
// answer them 404).
//
// While it is open it takes the chat's place (a `Screen`); the running turns are looked at
// again every few seconds while the page is visible, as the conversation list's badges are.

import { getJson, sendJson } from './api.js';
import { h, pressTwice } from './dom.js';
import { Screen, cells, fillPeriods, periodQuery, showRows, spendCells } from './screen.js';

const RUNS_POLL_MS = 5000;
const QUESTION_CHARS = 120;
/** The limit fields as the API names them, and as the form labels them. */
const LIMITS = [
  ['maxStreamsPerUser', 'Streams at once'],
  ['streamsPerMinute', 'Streams a minute'],
  ['uploadsPerMinute', 'Uploads a minute'],
];

function shortened(text) {
  return text.length > QUESTION_CHARS ? `${text.slice(0, QUESTION_CHARS - 1)}…` : text;
}

export class AdminScreen extends Screen {
  /**
   * As a `Screen`; `onError(error)` shows a failure the way the page shows any other, and
   * `agentName(kind)` names an agent as the agent picker does.
   */
  constructor({ button, panel, chat, onError, agentName }) {
    super({ button, panel, chat });
    this.onError = onError;
    this.agentName = agentName;
    this.timer = null;
    const $ = (id) => panel.querySelector(`#${id}`);
    this.runs = $('admin-runs');
    this.usage = $('admin-usage');
    this.period = $('admin-period');
    fillPeriods(this.period);
    this.ratings = $('admin-ratings');
    this.ratingFilter = $('admin-rating-filter');
    this.limitsForm = $('admin-limits');
    this.limitsUser = $('admin-limits-user');
    this.limitsFields = $('admin-limits-fields');
    this.limitsStatus = $('admin-limits-status');
    this.shownUser = null;
    this.limitsFields.prepend(
      ...LIMITS.map(([name, label]) => {
        const id = `admin-limit-${name}`;
        const input = h('input', { id, name, type: 'number', min: 0, step: 1 });
        return h('p', { class: 'field' }, h('label', { for: id }, label), input);
      }),
    );

    $('admin-close').addEventListener('click', () => this.close());
    this.period.addEventListener('change', () => this.showSpending().catch(onError));
    this.ratingFilter.addEventListener('change', () => this.showRatings().catch(onError));
    this.limitsForm.addEventListener('submit', (event) => {
      event.preventDefault();
      this.showLimits(this.limitsUser.value.trim()).catch(onError);
    });
    $('admin-limits-save').addEventListener('click', () => this.saveLimits().catch(onError));
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && this.isOpen()) this.showRuns().catch(onError);
    });
  }

  /** Show the button to an admin only (`me` from `/auth/me`; null when it could not be
   * told, as from an older server): anyone else never sees it. */
  load(me) {
    this.button.hidden = !me?.admin;
    if (this.button.hidden) this.close();
  }

  opened() {
    Promise.all([this.showRuns(), this.showSpending()]).catch(this.onError);
    this.timer = setInterval(() => {
      if (!document.hidden) this.showRuns().catch(this.onError);
    }, RUNS_POLL_MS);
  }

  closed() {
    clearInterval(this.timer);
    this.timer = null;
  }

  async showRuns() {
    const runs = await getJson('/admin/runs');
    showRows(this.runs, runs.map((run) => this.runRow(run)));
  }

  runRow(run) {
    const stop = pressTwice(
      { class: 'button danger', 'aria-label': `Stop ${run.userId}'s turn` },
      'Stop',
      'Stop it?',
      () => this.stop(run).catch(this.onError),
    );
    const question = h(
      'td',
      { class: 'question-cell', title: run.question },
      shortened(run.question),
    );
    const row = h('tr', { 'data-user': run.userId, 'data-conversation': run.conversationId });
    row.append(
      ...cells(run.userId, this.agentName(run.kind)),
      question,
      ...cells(new Date(run.startedAt).toLocaleString(), run.status, stop),
    );
    return row;
  }

  async stop(run) {
    const { userId, conversationId } = run;
    await sendJson('POST', '/admin/runs/stop', { userId, conversationId });
    await this.showRuns();
  }

  /** What depends on the period: the usage, and the rated answers. */
  async showSpending() {
    await Promise.all([this.showUsage(), this.showRatings()]);
  }

  async showRatings() {
    const query = periodQuery(this.period.value);
    if (this.ratingFilter.value) query.set('rating', this.ratingFilter.value);
    const rated = await getJson(`/admin/ratings?${query}`);
    showRows(
      this.ratings,
      rated.map((r) => {
        const row = h('tr', { 'data-user': r.userId, 'data-turn': r.turnId });
        const verdict = r.rating === 'down' ? 'Bad' : 'Good';
        row.append(
          ...cells(r.userId),
          h('td', { class: 'question-cell', title: r.question }, shortened(r.question)),
          h('td', { class: 'question-cell', title: r.answer }, shortened(r.answer)),
          ...cells(verdict, r.comment ?? '—', new Date(r.createTime).toLocaleString()),
        );
        return row;
      }),
    );
  }

  async showUsage() {
    const users = await getJson(`/admin/usage?${periodQuery(this.period.value)}`);
    showRows(
      this.usage,
      users.map(({ userId, usage: { total } }) => {
        const limits = h(
          'button',
          {
            type: 'button',
            class: 'button',
            'aria-label': `${userId}'s limits`,
            onclick: () => this.showLimits(userId).catch(this.onError),
          },
          'Limits',
        );
        const row = h('tr', { 'data-user': userId });
        row.append(...cells(userId), ...spendCells(total), ...cells(limits));
        return row;
      }),
    );
  }

  /** The user's limits in the form: what an admin set as the value, what is in force as
   * its placeholder, so a blank field visibly keeps the server's setting. */
  async showLimits(userId) {
    if (!userId) return;
    const shown = await getJson(`/admin/users/${encodeURIComponent(userId)}/limits`);
    this.shownUser = userId;
    this.limitsUser.value = userId;
    for (const [name] of LIMITS) {
      const input = this.limitsFields.querySelector(`[name="${name}"]`);
      const set = shown.overridden[name];
      input.value = set === null ? '' : String(set);
      input.placeholder = `${shown.limits[name]} (the setting)`;
    }
    this.limitsFields.hidden = false;
    this.limitsStatus.textContent = `${userId}'s limits.`;
    this.limitsFields.querySelector('input').focus();
  }

  async saveLimits() {
    if (!this.shownUser) return;
    const body = {};
    for (const [name, label] of LIMITS) {
      const input = this.limitsFields.querySelector(`[name="${name}"]`);
      if (!input.checkValidity()) {
        this.limitsStatus.textContent = `${label}: a whole number, 0 or more, or blank.`;
        input.focus();
        return;
      }
      body[name] = input.value === '' ? null : Number(input.value);
    }
    const userId = this.shownUser;
    await sendJson('PUT', `/admin/users/${encodeURIComponent(userId)}/limits`, body);
    await this.showLimits(userId);
    this.limitsStatus.textContent = `Saved ${userId}'s limits.`;
  }
}
