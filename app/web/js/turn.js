// One question and its answer, drawn the same way whether it streams in live or is
// read back from history: the question, collapsible thinking, the tool timeline
// (tools.js), the answer (sanitised Markdown), generated files, references, follow-up
// questions and a status line. Everything from the server is set as text except the
// answer.

import { download } from './api.js';
import { h, jsonList } from './dom.js';
import { renderMarkdown, safeUrl } from './markdown.js';
import { ApprovalView } from './approvals.js';
import { copyButton } from './clipboard.js';
import { dressCodeBlocks } from './codeblocks.js';
import { DeckView } from './deck.js';
import { foldButton } from './fold.js';
import { PlanView } from './plan.js';
import { addPreview } from './previews.js';
import { linkCitations, referenceItems } from './sources.js';
import { endTool, toolItem } from './tools.js';

const RENDER_EVERY_MS = 50;

const STATUS_TEXT = {
  running: 'Answering…',
  completed: 'Answered',
  stopped: 'Stopped',
  failed: 'Failed',
  paused: 'Waiting for your reply',
  interrupted: 'Interrupted: the server stopped while answering',
};

function sizeText(bytes) {
  if (!Number.isFinite(bytes)) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function durationText(ms) {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

export class TurnView {
  /** `onFollowUp(question)` is called when a suggested follow-up is chosen;
   * `onDecide(turn, answer)` when the user decides what the turn waits for;
   * `onRetry(turn)` when the user asks again after an error; `onError(error)` shows a
   * failure of the turn's own controls (an Undo). */
  constructor(question, { onFollowUp, onDecide, onRetry, onError }) {
    this.onFollowUp = onFollowUp;
    this.onDecide = onDecide;
    this.onRetry = onRetry;
    this.onError = onError;
    /** The turn's sources, which the answer's `[n]` citations link to. */
    this.refs = [];
    this.approval = null;
    this.answerText = '';
    this.thinkingText = '';
    this.toolItems = new Map();
    this.renderTimer = null;
    this.answerStarted = false;
    this.noticeShown = false;

    this.thinkingBody = h('div', { class: 'thinking-text' });
    this.thinking = h(
      'details',
      { class: 'thinking', hidden: true },
      h('summary', {}, 'Thinking'),
      this.thinkingBody,
    );
    this.plan = new PlanView();
    this.tools = h('ol', { class: 'tools', hidden: true, 'aria-label': 'Tool calls' });
    this.answer = h('div', { class: 'answer markdown' });
    /** "Saved to memory" notes, with their Undo (remembered.js). */
    this.memoryNotes = h('div', { class: 'memory-notes', hidden: true });
    this.files = h('ul', { class: 'files', hidden: true, 'aria-label': 'Generated files' });
    /** The links of each file row, by the files' name without its extension. */
    this.fileRows = new Map();
    this.deckView = new DeckView((url, name, label) => this.downloadLink(url, name, label));
    this.deck = this.deckView.el;
    this.errorText = h('span', { class: 'error-text' });
    this.error = h(
      'div',
      { class: 'error', role: 'alert', hidden: true },
      this.errorText,
      this.onRetry
        ? h(
            'button',
            { type: 'button', class: 'button retry', onclick: () => this.onRetry(this) },
            'Retry',
          )
        : null,
    );
    this.referenceList = h('ol');
    this.references = h(
      'section',
      { class: 'references', hidden: true },
      h('h3', {}, 'Sources'),
      this.referenceList,
    );
    this.followUps = h('div', {
      class: 'follow-ups',
      hidden: true,
      role: 'group',
      'aria-label': 'Follow-up questions',
    });
    this.status = h('p', { class: 'status', role: 'status' });
    this.question = question;
    /** Where the page puts the question's own controls (edit) and the answer's (versions). */
    this.questionTools = h('div', { class: 'question-tools' });
    this.actions = h('span', { class: 'branch-tools' });
    this.copy = copyButton(
      { className: 'copy-answer', name: 'Copy answer' },
      () => this.answerText,
    );
    this.copy.hidden = true;
    /** Where the page puts the thumbs up and down (rating.js), and the box a thumb down
     * opens. */
    this.ratingTools = h('span', { class: 'rating-tools', hidden: true });
    this.ratingForm = h('div', { class: 'rating-form-place' });
    const asked = h('p', { class: 'question' }, question);
    this.el = h(
      'article',
      { class: 'turn' },
      h('div', { class: 'ask' }, this.questionTools, asked),
      foldButton(asked, question),
      h(
        'div',
        { class: 'reply' },
        this.thinking,
        this.plan.el,
        this.tools,
        this.deck,
        this.answer,
        this.memoryNotes,
        this.files,
        this.error,
        this.references,
        this.followUps,
        this.status,
        h('div', { class: 'turn-actions' }, this.copy, this.ratingTools, this.actions),
        this.ratingForm,
      ),
    );
    this.setStatus('running');
  }

  /** A turn as `/session/{id}` stores it. */
  static fromStored(message, handlers) {
    const turn = new TurnView(message.question, handlers);
    turn.thinkingText = message.thinking ?? '';
    turn.answerText = message.answer ?? '';
    turn.plan.load(message.plan);
    for (const call of message.tools ?? []) {
      turn.toolStarted(call.id, call.name, call.arguments, call.taskId);
      if ('result' in call) turn.toolEnded(call.id, call.name, call.result, call.isError);
    }
    if (message.fileid) turn.addUpload(message.fileid);
    for (const file of message.files ?? []) turn.addFile(file);
    if (message.deck) turn.showDeck(message.deck);
    turn.showReferences(jsonList(message.reference));
    turn.showFollowUps(jsonList(message.recommend));
    if (message.error) turn.fail(message.errorMessage || message.error);
    turn.render();
    turn.thinking.open = false;
    if (message.status !== 'running') turn.finish(message.status, message.totalResponseTime);
    const waiting = message.pending?.[0];
    if (message.status === 'paused' && waiting?.approvalId) turn.showApproval(waiting);
    return turn;
  }

  /** Show one stream event; kinds this page does not know are ignored. */
  apply(event) {
    if (this.noticeShown && event.type !== 'error') {
      this.noticeShown = false;
      this.setStatus('running');
    }
    switch (event.type) {
      case 'thinking':
        this.thinkingText += event.content ?? '';
        if (!this.answerStarted) this.thinking.open = true;
        this.schedule();
        break;
      case 'text':
        this.answerText += event.content ?? '';
        if (!this.answerStarted) {
          this.answerStarted = true;
          this.thinking.open = false;
        }
        this.schedule();
        break;
      case 'tool_start':
        this.toolStarted(event.toolCallId, event.toolName, event.arguments, event.taskId);
        break;
      case 'tool_end':
        this.toolEnded(event.toolCallId, event.toolName, event.result, event.isError);
        break;
      case 'plan':
        this.plan.plan(event);
        break;
      case 'step':
        this.plan.step(event);
        break;
      case 'critique':
        this.plan.critique(event);
        break;
      case 'reference':
        this.showReferences(jsonList(event.content));
        break;
      case 'recommend':
        this.showFollowUps(jsonList(event.content));
        break;
      case 'file':
        this.addFile(event);
        break;
      case 'deck':
        this.showDeck(event);
        break;
      case 'error':
        if (event.code === 'RETRYING') this.showNotice(event.message || 'Retrying…');
        else this.fail(event.message || event.content || 'Something went wrong.');
        break;
      case 'approval':
        this.showApproval(event);
        break;
      case 'complete':
        this.finish(event.status, event.totalResponseTime);
        break;
      default:
        break;
    }
  }

  /** What the turn waits for, with the buttons that decide it (approvals.js). */
  showApproval(request) {
    if (!this.onDecide) return;
    this.approval?.el.remove();
    this.approval = new ApprovalView(request, (answer) => {
      this.approval = null;
      this.onDecide(this, answer);
    });
    this.status.before(this.approval.el);
  }

  schedule() {
    this.renderTimer ??= setTimeout(() => this.render(), RENDER_EVERY_MS);
  }

  /** Draw the answer as it stands; `final`: the run has ended (its code is coloured, as
   * it is in any drawing after the end). */
  render(final = false) {
    clearTimeout(this.renderTimer);
    this.renderTimer = null;
    // A research plan's checklist shows the progress the thinking lines tell: once is enough.
    this.thinking.hidden = !this.thinkingText.trim() || !this.plan.el.hidden;
    if (!this.thinking.hidden) this.thinkingBody.textContent = this.thinkingText;
    renderMarkdown(this.answer, this.answerText);
    linkCitations(this.answer, this.refs);
    dressCodeBlocks(this.answer, final || this.el.dataset.status !== 'running');
  }

  /** A tool call (tools.js); a research task's call goes in its task. */
  toolStarted(id, name, args, taskId) {
    const entry = toolItem(name, args);
    this.toolItems.set(id, entry);
    const list = this.plan.toolList(taskId) ?? this.tools;
    list.hidden = false;
    list.append(entry.item);
  }

  toolEnded(id, name, result, isError) {
    if (!this.toolItems.has(id)) this.toolStarted(id, name, '');
    const note = endTool(this.toolItems.get(id), name, result, isError, this.onError);
    if (note) {
      this.memoryNotes.append(note);
      this.memoryNotes.hidden = false;
    }
  }

  showReferences(items) {
    this.refs = items.filter((ref) => ref && typeof ref === 'object');
    const rows = referenceItems(this.refs);
    this.referenceList.replaceChildren(...rows);
    this.references.hidden = rows.length === 0;
    this.render();
  }

  showFollowUps(questions) {
    const buttons = questions
      .filter((q) => typeof q === 'string' && q.trim())
      .map((q) =>
        h('button', { type: 'button', class: 'follow-up', onclick: () => this.onFollowUp(q) }, q),
      );
    this.followUps.replaceChildren(...buttons);
    this.followUps.hidden = buttons.length === 0;
  }

  /** A link that saves a generated file (with the key, which a plain link cannot send). */
  downloadLink(url, name, label) {
    return h(
      'a',
      {
        href: url,
        download: name,
        class: 'download',
        onclick: (event) => {
          event.preventDefault();
          download(url, name).catch((error) => this.fail(error.message));
        },
      },
      label,
    );
  }

  addFile(file) {
    const url = safeUrl(file.url);
    if (!url) return;
    const name = file.name || 'file';
    if (file.status === 'failed') {
      const reason = `${name}: ${file.error ?? 'not made'}`;
      this.files.append(h('li', { class: 'unmade', 'data-name': name }, reason));
      this.showFiles();
      return;
    }
    const link = this.downloadLink(url, name, `Download ${name}`);
    const size = h('span', { class: 'muted' }, ` ${sizeText(file.size)}`);
    // One document in two formats (a report's .docx and .pdf): one row, one picture of it.
    const stem = name.replace(/\.[^.]*$/, '');
    const same = this.fileRows.get(stem);
    if (same) {
      same.append(' · ', link, size);
      this.showFiles();
      return;
    }
    const links = h('span', { class: 'file-links' }, link, size);
    const row = h('li', { 'data-url': url }, links);
    this.fileRows.set(stem, links);
    this.files.append(row);
    addPreview(row, file.fileId, name);
    this.showFiles();
  }

  /** The document the question was asked about, as its first page: shown once, at the
   * first turn on screen that asks about it. */
  addUpload(fileId) {
    const shown = [...document.querySelectorAll('.turn[data-upload]')];
    if (shown.some((turn) => turn.dataset.upload === fileId)) return;
    this.el.dataset.upload = fileId;
    const item = h('li', { class: 'upload' });
    addPreview(item, fileId, '').then(() => {
      if (!item.children.length) return;
      this.files.prepend(item);
      this.showFiles();
    });
  }

  /** The generated files the deck does not already offer (it lists its own versions, its
   * PDF and why that PDF is missing). */
  showFiles() {
    const deck = this.deckView;
    for (const row of this.files.children) {
      row.hidden = deck.urls.has(row.dataset.url) || row.dataset.name === deck.unmade;
    }
    this.files.hidden = ![...this.files.children].some((row) => !row.hidden);
  }

  /** A deck's slides and downloads; once it is ready the answer text, which repeats
   * them for the original client, is left out. */
  showDeck(deck) {
    this.deckView.show(deck);
    this.answer.hidden = deck.stage === 'ready';
    this.showFiles();
  }

  /** A passing note in the status line (a retry, a reconnection), until the next event. */
  showNotice(text) {
    this.status.textContent = text;
    this.noticeShown = true;
  }

  fail(message) {
    this.errorText.textContent = message;
    this.error.hidden = false;
    // Its Retry asks again: the Regenerate beside the answer would be a second button for it.
    this.el.classList.add('has-error');
  }

  /** The error shown, or '' when there is none. */
  get errorMessage() {
    return this.error.hidden ? '' : this.errorText.textContent;
  }

  finish(status, totalMs) {
    this.render(true);
    for (const { item, state } of this.toolItems.values()) {
      if (item.classList.contains('running')) state.textContent = status;
    }
    this.setStatus(status, totalMs);
  }

  setStatus(status, totalMs) {
    this.el.dataset.status = status;
    // Once the answer is whole (or all there will be): copying half an answer helps no one.
    this.copy.hidden = status === 'running' || !this.answerText.trim();
    this.ratingTools.hidden = this.copy.hidden;
    let text = STATUS_TEXT[status] ?? status;
    if (status === 'completed' && Number.isFinite(totalMs)) text += ` in ${durationText(totalMs)}`;
    this.status.textContent = text;
  }
}
