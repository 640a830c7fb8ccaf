// What waits for your yes before the agent acts (API.md, "Asking before acting"): a tool
// call, shown with its arguments (a diff for `edit_file`), or a research plan, shown as
// an editable checklist. Approve, Edit or Reject (with a reason) hands the decision to
// `onDecide`, which sends it as a new stream on the same turn.

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
        h('button', { type: 'button', class: 'approve', onclick: () => this.decide('approve') }, 'Approve'),
        h('button', { type: 'button', class: 'edit', onclick: () => this.decide('edit') }, 'Edit'),
        h('button', { type: 'button', class: 'reject', onclick: () => this.decide('reject') }, 'Reject'),
      ),
    );
  }

  call(request) {
    this.editor = h('textarea', {
      class: 'approval-arguments',
      rows: 6,
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
      const keep = h('input', { type: 'checkbox', checked: true, 'aria-label': `Keep ${task.title}` });
      const title = h('input', { type: 'text', class: 'approval-task', 'aria-label': 'Task' });
      title.value = task.title;
      return { task, keep, title, el: h('li', {}, keep, ' ', title) };
    });
    return h('ol', { class: 'approval-plan' }, ...this.rows.map((row) => row.el));
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

  decide(decision) {
    const answer = { approvalId: this.request.approvalId, decision };
    const reason = this.reason.value.trim();
    if (reason) answer.message = reason;
    if (decision === 'edit') {
      try {
        answer.arguments = this.edited();
      } catch {
        this.reason.setCustomValidity('The arguments are not valid JSON.');
        this.reason.reportValidity();
        return;
      }
    }
    this.el.remove();
    this.onDecide(answer);
  }
}
