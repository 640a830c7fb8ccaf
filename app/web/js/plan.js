// A deep research plan as a live checklist: each round's tasks with their status, a
// task's findings, sources and tool calls on demand (its row opens), and the critique
// that closed the round. Fed by the `plan`, `step` and `critique` events, or by a stored turn's
// `plan`, so a reloaded page draws the same list. Everything is set as text.

import { h } from './dom.js';
import { safeUrl } from './markdown.js';

const STEP_TEXT = {
  pending: 'waiting',
  running: 'working…',
  completed: 'done',
  failed: 'failed',
};

export class PlanView {
  constructor() {
    this.rounds = new Map();
    this.tasks = new Map();
    this.el = h('section', { class: 'plan', hidden: true, 'aria-label': 'Research plan' });
  }

  /** A stored turn's rounds: `{round, tasks: [{id, title, status, summary}], critique}`. */
  load(rounds) {
    for (const round of rounds ?? []) {
      this.plan(round);
      for (const task of round.tasks ?? []) this.step({ taskId: task.id, ...task });
      if (round.critique) this.critique({ round: round.round, ...round.critique });
    }
  }

  plan({ round, tasks }) {
    const list = h('ol', { class: 'plan-tasks' });
    const note = h('p', { class: 'critique', hidden: true });
    const title = h('h3', {}, `Plan, round ${round}`);
    const section = h('div', { class: 'plan-round' }, title, list, note);
    this.rounds.get(round)?.section.replaceWith(section);
    if (!this.rounds.has(round)) this.el.append(section);
    this.rounds.set(round, { section, note });
    for (const task of tasks ?? []) {
      const state = h('span', { class: 'task-state' });
      const findings = h('p', { class: 'task-summary' });
      const sources = h('ul', { class: 'task-sources' });
      const tools = h('ol', { class: 'tools task-tools', hidden: true, 'aria-label': 'Tool calls' });
      const summary = h('summary', {}, h('span', { class: 'task-title' }, task.title), ' ', state);
      const item = h(
        'li',
        { class: 'task', 'data-task': task.id },
        h('details', {}, summary, findings, sources, tools),
      );
      list.append(item);
      this.tasks.set(task.id, { item, state, findings, sources, tools });
      this.setStatus(task.id, task.status ?? 'pending');
    }
    this.el.hidden = false;
  }

  step({ taskId, status, summary, sources }) {
    const task = this.tasks.get(taskId);
    if (!task) return;
    this.setStatus(taskId, status);
    if (summary) task.findings.textContent = summary;
    const links = (sources ?? [])
      .map((source) => [safeUrl(source.url), source.title || source.url])
      .filter(([url]) => url)
      .map(([url, title]) =>
        h('li', {}, h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, title)),
      );
    if (links.length) task.sources.replaceChildren(...links);
  }

  /** Where a task's tool calls go (so its progress shows in one place); null: no such task. */
  toolList(taskId) {
    return (taskId && this.tasks.get(taskId)?.tools) || null;
  }

  critique({ round, passed, feedback }) {
    const entry = this.rounds.get(round);
    if (!entry) return;
    entry.note.textContent = passed ? 'Checked: enough to report.' : `Checked: needs ${feedback}`;
    entry.note.classList.toggle('passed', Boolean(passed));
    entry.note.hidden = false;
  }

  setStatus(taskId, status) {
    const task = this.tasks.get(taskId);
    task.item.dataset.status = status;
    task.state.textContent = STEP_TEXT[status] ?? status;
  }
}
