// The Schedules screen: questions the agents are asked on a recurrence (`/schedules`).
// Lists them (what, when, the next and the last run), makes and edits one (a few common
// recurrences picked from a list, or an RRULE or cron of one's own: recurrence.js; in the
// browser's time zone unless changed), pauses, resumes, runs one now, deletes one, and
// shows a schedule's runs, each linked to its conversation. "Run this every…" under an
// answer opens the form filled with that question, agent and project (`runEveryButton`).
// A schedule in a project runs in it: its instructions, files and memory, its default
// model when none is picked.
//
// While it is open it takes the chat's place (a `Screen`). The server checks everything
// (an interval too short, a bad rule): its words are shown under the form.

import { getJson, send, sendJson } from './api.js';
import { h, pressTwice } from './dom.js';
import { DAYS, REPEATS, browserZone, describe, pickedOf, ruleOf } from './recurrence.js';
import { Screen, cells, showRows } from './screen.js';

const NAME_CHARS = 100;

function when(time) {
  return time ? new Date(time).toLocaleString() : '—';
}

/** A link to a run's conversation: the page opens it (and leaves this screen). */
function conversationLink(conversationId, text) {
  return conversationId ? h('a', { href: `#c=${conversationId}` }, text) : '—';
}

function field(id, label, control) {
  return h('p', { class: 'field' }, h('label', { for: id }, label), control);
}

export class SchedulesScreen extends Screen {
  /**
   * As a `Screen`; `agents` is the composer's agent picker (its options are the agents a
   * schedule may ask), `projects()` the caller's projects (`{projectId, name}`), `onError(error)`
   * shows a failure the way the page shows any other, `agentName(kind)` names an agent as
   * the picker does.
   */
  constructor({ button, panel, chat, agents, projects, onError, agentName }) {
    super({ button, panel, chat });
    this.agents = agents;
    this.projects = projects;
    this.onError = onError;
    this.agentName = agentName;
    this.editing = null;
    this.built = false;
  }

  /** Built at its first opening: a page that never opens it carries none of it. */
  open() {
    if (!this.built) this.build();
    this.built = true;
    super.open();
  }

  build() {
    const input = (id, attributes = {}) =>
      h('input', { id, autocomplete: 'off', ...attributes });
    this.nameInput = input('schedule-name', { maxlength: 200, placeholder: 'Morning news' });
    this.kind = h('select', { id: 'schedule-kind' });
    this.query = h('textarea', { id: 'schedule-query', rows: 3, required: true });
    this.project = h('select', { id: 'schedule-project' });
    this.repeat = h(
      'select',
      { id: 'schedule-repeat', onchange: () => this.showRepeat() },
      ...REPEATS.map(([value, text]) => new Option(text, value)),
    );
    this.day = h(
      'select',
      { id: 'schedule-day' },
      ...DAYS.map(([value, text]) => new Option(text, value)),
    );
    this.time = input('schedule-time', { type: 'time', value: '08:00', required: true });
    this.custom = input('schedule-custom', { spellcheck: 'false', maxlength: 2000 });
    this.zone = input('schedule-zone', { spellcheck: 'false', maxlength: 64 });
    this.same = h('input', { id: 'schedule-same', type: 'checkbox' });
    this.formTitle = h('h3', { id: 'schedule-form-title', tabindex: '-1' }, 'New schedule');
    this.status = h('p', { id: 'schedule-status', class: 'muted', role: 'status' });
    this.dayField = field('schedule-day', 'On', this.day);
    this.timeField = field('schedule-time', 'At', this.time);
    this.customField = field('schedule-custom', 'Rule', this.custom);
    this.form = h(
      'form',
      { id: 'schedule-form', class: 'schedule-form', hidden: true },
      this.formTitle,
      field('schedule-name', 'Name', this.nameInput),
      field('schedule-kind', 'Agent', this.kind),
      field('schedule-query', 'Question', this.query),
      field('schedule-project', 'Project', this.project),
      field('schedule-repeat', 'Repeat', this.repeat),
      this.dayField,
      this.timeField,
      this.customField,
      field('schedule-zone', 'Time zone', this.zone),
      h(
        'p',
        { class: 'field option' },
        this.same,
        h('label', { for: 'schedule-same' }, ' Keep every run in one conversation'),
      ),
      h(
        'p',
        { class: 'schedule-form-buttons' },
        h('button', { type: 'submit', class: 'button primary' }, 'Save'),
        h('button', { type: 'button', class: 'button', onclick: () => this.hideForm() }, 'Cancel'),
      ),
    );
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.save().catch((error) => this.say(error.message || String(error)));
    });
    this.table = h(
      'table',
      { id: 'schedules-list', class: 'admin-table', hidden: true },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['Name', 'Agent', 'When', 'Next run', 'Last run', 'Actions'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h('tbody'),
    );
    this.runsTitle = h('h3', { id: 'schedule-runs-title', hidden: true }, 'Runs');
    this.runs = h(
      'table',
      { id: 'schedule-runs', class: 'admin-table', hidden: true },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['Due', 'Started by', 'Status', 'Conversation'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h('tbody'),
    );
    this.panel.replaceChildren(
      h(
        'div',
        { class: 'admin-head' },
        h('h2', { id: 'schedules-title', tabindex: '-1' }, 'Schedules'),
        h('button', { type: 'button', class: 'button', onclick: () => this.close() }, 'Back to chat'),
      ),
      h('p', { class: 'muted' }, 'Questions an agent answers on its own, on a schedule.'),
      h(
        'button',
        { type: 'button', id: 'schedule-new', class: 'button', onclick: () => this.openNew() },
        'New schedule',
      ),
      this.form,
      this.status,
      h('p', { id: 'schedules-list-empty', class: 'muted' }, 'No schedules yet.'),
      h('div', { class: 'table-scroll' }, this.table),
      this.runsTitle,
      h('p', { id: 'schedule-runs-empty', class: 'muted', hidden: true }, 'No runs yet.'),
      h('div', { class: 'table-scroll' }, this.runs),
    );
  }

  opened() {
    this.refresh().catch(this.onError);
  }

  /** Open the screen on a new schedule's form, filled with `prefill` (`query`, `kind`,
   * `projectId`). */
  openNew(prefill = {}) {
    if (!this.isOpen()) this.open();
    this.editing = null;
    this.fillForm({
      name: '',
      kind: prefill.kind ?? this.agents.value,
      query: prefill.query ?? '',
      projectId: prefill.projectId ?? null,
      timezone: browserZone(),
      conversation: 'new',
      rrule: 'FREQ=DAILY;BYHOUR=8;BYMINUTE=0',
    });
    this.formTitle.textContent = 'New schedule';
    this.showForm();
  }

  edit(schedule) {
    this.editing = schedule;
    this.fillForm(schedule);
    this.formTitle.textContent = `Edit “${schedule.name}”`;
    this.showForm();
  }

  fillForm(schedule) {
    this.kind.replaceChildren(
      ...[...this.agents.options]
        .filter((o) => !o.hasAttribute('data-needs-file'))
        .map((o) => new Option(o.textContent, o.value)),
    );
    this.kind.value = schedule.kind;
    const projects = this.projects();
    this.project.replaceChildren(
      new Option('None', ''),
      ...projects.map((p) => new Option(p.name, p.projectId)),
    );
    this.project.value = projects.some((p) => p.projectId === schedule.projectId)
      ? schedule.projectId
      : '';
    this.nameInput.value = schedule.name ?? '';
    this.query.value = schedule.query;
    this.zone.value = schedule.timezone;
    this.same.checked = schedule.conversation === 'same';
    const picked = pickedOf(schedule);
    this.repeat.value = picked.repeat;
    this.day.value = picked.day ?? 'MO';
    this.time.value = picked.time ?? '08:00';
    this.custom.value = picked.custom ?? '';
    this.showRepeat();
  }

  showForm() {
    this.status.textContent = '';
    this.form.hidden = false;
    this.formTitle.focus();
  }

  hideForm() {
    this.form.hidden = true;
    this.editing = null;
  }

  showRepeat() {
    const repeat = this.repeat.value;
    const custom = repeat === 'rrule' || repeat === 'cron';
    this.customField.hidden = !custom;
    this.custom.required = custom;
    this.timeField.hidden = custom;
    this.time.required = !custom;
    this.dayField.hidden = repeat !== 'weekly';
    this.custom.placeholder = repeat === 'cron' ? '0 8 * * 1-5' : 'FREQ=DAILY;BYHOUR=8;BYMINUTE=0';
  }

  async save() {
    const query = this.query.value.trim();
    const body = {
      name: this.nameInput.value.trim() || query.slice(0, NAME_CHARS),
      kind: this.kind.value,
      query,
      projectId: this.project.value || null,
      timezone: this.zone.value.trim() || browserZone(),
      conversation: this.same.checked ? 'same' : 'new',
      ...ruleOf({
        repeat: this.repeat.value,
        custom: this.custom.value,
        time: this.time.value,
        day: this.day.value,
      }),
    };
    const saved = this.editing
      ? await sendJson('PATCH', `/schedules/${this.editing.scheduleId}`, body)
      : await sendJson('POST', '/schedules', body);
    this.hideForm();
    await this.refresh();
    this.say(`Saved “${saved.name}”. Next run: ${when(saved.nextRuns[0])}.`);
  }

  say(text) {
    this.status.textContent = text;
  }

  async refresh() {
    const schedules = await getJson('/schedules');
    showRows(this.table, schedules.map((s) => this.row(s)));
  }

  row(schedule) {
    const name = schedule.name;
    const button = (text, label, act) =>
      h(
        'button',
        { type: 'button', class: 'button', 'aria-label': `${label} “${name}”`, onclick: act },
        text,
      );
    const pause = schedule.enabled
      ? button('Pause', 'Pause', () => this.setEnabled(schedule, false).catch(this.onError))
      : button('Resume', 'Resume', () => this.setEnabled(schedule, true).catch(this.onError));
    const actions = h(
      'td',
      { class: 'schedule-actions' },
      button('Run now', 'Run now', () => this.runNow(schedule).catch(this.onError)),
      button('Runs', 'Runs of', () => this.showRuns(schedule).catch(this.onError)),
      button('Edit', 'Edit', () => this.edit(schedule)),
      pause,
      pressTwice(
        { class: 'button danger', 'aria-label': `Delete “${name}”` },
        'Delete',
        'Delete it?',
        () => this.remove(schedule).catch(this.onError),
      ),
    );
    const next = schedule.enabled
      ? when(schedule.nextRuns[0])
      : `Paused${schedule.pausedReason ? `: ${schedule.pausedReason}` : ''}`;
    const last = schedule.lastRun;
    const row = h('tr', { 'data-schedule': schedule.scheduleId });
    row.append(
      h('td', { class: 'question-cell', title: schedule.query }, name),
      ...cells(this.agentName(schedule.kind), `${describe(schedule)} (${schedule.timezone})`, next),
      h(
        'td',
        { class: 'last-run' },
        last ? conversationLink(last.conversationId, `${last.status}, ${when(last.dueTime)}`) : '—',
      ),
      actions,
    );
    return row;
  }

  async setEnabled(schedule, enabled) {
    await sendJson('PATCH', `/schedules/${schedule.scheduleId}`, { enabled });
    await this.refresh();
    this.say(`${enabled ? 'Resumed' : 'Paused'} “${schedule.name}”.`);
  }

  async runNow(schedule) {
    const run = await sendJson('POST', `/schedules/${schedule.scheduleId}/run`, {});
    await this.refresh();
    await this.showRuns(schedule);
    this.say(
      run.reason
        ? `“${schedule.name}” did not run: ${run.reason}.`
        : `“${schedule.name}” is running now.`,
    );
  }

  async remove(schedule) {
    await send(`/schedules/${schedule.scheduleId}`, { method: 'DELETE' });
    this.runs.hidden = true;
    this.runsTitle.hidden = true;
    document.getElementById('schedule-runs-empty').hidden = true;
    await this.refresh();
    this.say(`Deleted “${schedule.name}”.`);
  }

  async showRuns(schedule) {
    const runs = await getJson(`/schedules/${schedule.scheduleId}/runs`);
    this.runsTitle.textContent = `Runs of “${schedule.name}”`;
    this.runsTitle.hidden = false;
    showRows(
      this.runs,
      runs.map((run) => {
        const row = h('tr', { 'data-run': run.runId });
        const status = run.reason ? `${run.status}: ${run.reason}` : run.status;
        row.append(
          ...cells(
            when(run.dueTime),
            run.trigger === 'now' ? 'Run now' : 'Schedule',
            status,
            conversationLink(run.conversationId, 'Open'),
          ),
        );
        return row;
      }),
    );
  }
}

/** "Run this every…" under a finished answer: the Schedules form, filled with its question,
 * (`agent()`) the agent that answered and (`project()`) the conversation's project. */
export function runEveryButton(turn, { agent, project, screen }) {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'button run-every',
      onclick: () =>
        screen.openNew({ query: turn.question, kind: agent(), projectId: project() }),
    },
    'Run this every…',
  );
  turn.el.querySelector('.turn-actions').append(button);
  return button;
}
