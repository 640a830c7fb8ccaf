// What waits for your yes before the agent acts (API.md, "Asking before acting"): a tool
// call, shown with its arguments (a diff for `edit_file`), or a research plan, shown as
// a checklist. Approve, Reject (with a reason) or a changed call hands the decision to
// `onDecide`, which sends it as a new stream on the same turn.
//
// What runs is what the card shows. The arguments (the plan) are read-only until Edit
// makes them editable, so a stray keystroke changes nothing; once changed, Approve says
// "Approve changes" and sends them as an `edit` decision. There is no separate button to
// send an edit: one that ran the original beside a box showing a change is how a user
// ends up running what they did not see.

import { h } from './dom.js';

function pretty(value) {
  return JSON.stringify(value ?? {}, null, 2);
}

/** `edit_file`'s change as removed and added lines. */
function diff(args) {
  const lines = (text, mark, kind) =>
    String(text ?? '')
      .split('\n')
      .map((line) => h('span', { class: `diff-${kind}` }, `${mark} ${line}\n`));
  return h(
    'pre',
    { class: 'approval-diff', 'aria-label': `Change to ${args.path ?? 'the file'}` },
    ...lines(args.old_string ?? args.oldString, '-', 'removed'),
    ...lines(args.new_string ?? args.newString, '+', 'added'),
  );
}

export class ApprovalView {
  /** `request`: an `approval` event, or a stored turn's `pending[0]`. */
  constructor(request, onDecide) {
    this.request = request;
    this.onDecide = onDecide;
    this.reason = h('input', {
      class: 'approval-reason',
      type: 'text',
      placeholder: 'Reason (optional, for a rejection)',
      'aria-label': 'Reason',
    });
    const plan = request.kind === 'plan';
    this.body = plan ? this.checklist(request) : this.call(request);
    /** The arguments as asked, to tell a change from them. */
    this.asked = JSON.stringify(this.edited());
    this.body.addEventListener('input', () => this.showChanged());
    this.body.addEventListener('change', () => this.showChanged());
    const button = (name, className, act) =>
      h('button', { type: 'button', class: `button ${className}`, onclick: act }, name);
    this.approveButton = button('Approve', 'primary approve', () => this.approve());
    this.editButton = button('Edit', 'edit', () => this.startEditing());
    this.el = h(
      'section',
      { class: 'approval', role: 'group', 'aria-label': plan ? 'Plan review' : 'Approval' },
      h(
        'h3',
        {},
        plan ? 'Review the research plan' : `Run ${request.toolName ?? 'this tool'}?`,
      ),
      this.body,
      this.reason,
      h(
        'div',
        { class: 'approval-actions' },
        this.approveButton,
        this.editButton,
        button('Reject', 'reject', () => this.decide({ decision: 'reject' })),
      ),
    );
  }

  call(request) {
    this.editor = h('textarea', {
      class: 'approval-arguments',
      rows: 6,
      readonly: true,
      'aria-label': 'Arguments',
    });
    this.editor.value = pretty(request.arguments);
    const args = request.arguments ?? {};
    return h(
      'div',
      {},
      request.toolName === 'edit_file' ? diff(args) : null,
      this.editor,
    );
  }

  checklist(request) {
    this.rows = (request.arguments?.tasks ?? []).map((task) => {
      const keep = h('input', {
        type: 'checkbox',
        checked: true,
        disabled: true,
        'aria-label': `Keep ${task.title}`,
      });
      const title = h('input', {
        type: 'text',
        class: 'approval-task',
        readonly: true,
        'aria-label': 'Task',
      });
      title.value = task.title;
      return { task, keep, title, el: h('li', {}, keep, ' ', title) };
    });
    return h('ol', { class: 'approval-plan' }, ...this.rows.map((row) => row.el));
  }

  /** The arguments (the tasks) become editable, and the keyboard goes to them. */
  startEditing() {
    const fields = this.rows ? this.rows.flatMap((row) => [row.keep, row.title]) : [this.editor];
    for (const field of fields) {
      field.readOnly = false;
      field.disabled = false;
    }
    this.editButton.hidden = true;
    (this.rows?.[0]?.title ?? this.editor)?.focus();
  }

  /** The arguments as the user left them: the edited JSON, or the kept and renamed tasks. */
  edited() {
    if (this.rows) {
      const kept = this.rows.filter((row) => row.keep.checked);
      const ids = new Set(kept.map((row) => row.task.id));
      return {
        tasks: kept.map((row) => ({
          ...row.task,
          title: row.title.value.trim() || row.task.title,
          dependsOn: (row.task.dependsOn ?? []).filter((id) => ids.has(id)),
        })),
      };
    }
    return JSON.parse(this.editor.value);
  }

  /** Whether what the card shows differs from what was asked (JSON that does not parse
   * does). */
  changed() {
    try {
      return JSON.stringify(this.edited()) !== this.asked;
    } catch {
      return true;
    }
  }

  showChanged() {
    this.editor?.setCustomValidity('');
    this.approveButton.textContent = this.changed() ? 'Approve changes' : 'Approve';
  }

  /** Run what the card shows: the call as asked, or as changed (an `edit`). */
  approve() {
    if (!this.changed()) {
      this.decide({ decision: 'approve' });
      return;
    }
    let args;
    try {
      args = this.edited();
    } catch {
      this.editor.setCustomValidity('The arguments are not valid JSON.');
      this.editor.reportValidity();
      return;
    }
    this.decide({ decision: 'edit', arguments: args });
  }

  decide(choice) {
    const answer = { approvalId: this.request.approvalId, ...choice };
    const reason = this.reason.value.trim();
    if (reason) answer.message = reason;
    this.el.remove();
    this.onDecide(answer);
  }
}
