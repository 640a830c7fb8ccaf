// One question and its answer, drawn the same way whether it streams in live or is
// read back from history: the question, collapsible thinking, the tool timeline, the
// answer (sanitised Markdown), generated files, references, follow-up questions and
// a status line. Everything from the server is set as text except the answer.

import { download, objectUrl } from './api.js';
import { h, jsonList } from './dom.js';
import { renderMarkdown, safeUrl } from './markdown.js';
import { ApprovalView } from './approvals.js';
import { PlanView } from './plan.js';
import { addPreview } from './previews.js';

const RENDER_EVERY_MS = 50;

const STATUS_TEXT = {
  running: 'Answering…',
  completed: 'Answered',
  stopped: 'Stopped',
  failed: 'Failed',
  paused: 'Waiting for your reply',
  interrupted: 'Interrupted: the server stopped while answering',
};

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
   * `onDecide(turn, answer)` when the user decides what the turn waits for. */
  constructor(question, { onFollowUp, onDecide }) {
    this.onFollowUp = onFollowUp;
    this.onDecide = onDecide;
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
    this.files = h('ul', { class: 'files', hidden: true, 'aria-label': 'Generated files' });
    this.deck = h('section', { class: 'deck', hidden: true, 'aria-label': 'Slides' });
    this.error = h('p', { class: 'error', role: 'alert', hidden: true });
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
    this.actions = h('div', { class: 'turn-actions' });
    this.el = h(
      'article',
      { class: 'turn' },
      h('div', { class: 'ask' }, this.questionTools, h('p', { class: 'question' }, question)),
      h(
        'div',
        { class: 'reply' },
        this.thinking,
        this.plan.el,
        this.tools,
        this.deck,
        this.answer,
        this.files,
        this.error,
        this.references,
        this.followUps,
        this.status,
        this.actions,
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
      turn.toolStarted(call.id, call.name, call.arguments);
      if ('result' in call) turn.toolEnded(call.id, call.name, call.result, call.isError);
    }
    if (message.fileid) turn.addUpload(message.fileid);
    for (const file of message.files ?? []) turn.addFile(file);
    turn.showReferences(jsonList(message.reference));
    turn.showFollowUps(jsonList(message.recommend));
    if (message.error) turn.fail(`This answer failed (${message.error}).`);
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
        this.toolStarted(event.toolCallId, event.toolName, event.arguments);
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

  render() {
    clearTimeout(this.renderTimer);
    this.renderTimer = null;
    if (this.thinkingText.trim()) {
      this.thinking.hidden = false;
      this.thinkingBody.textContent = this.thinkingText;
    }
    renderMarkdown(this.answer, this.answerText);
  }

  toolStarted(id, name, args) {
    const state = h('span', { class: 'tool-state' }, 'running…');
    const result = h('pre', { class: 'tool-result', hidden: true });
    const hint = h('span', { class: 'tool-hint' }, argumentsHint(args));
    const item = h(
      'li',
      { class: 'tool running' },
      h(
        'details',
        {},
        h(
          'summary',
          {},
          h('span', { class: 'tool-name' }, name ?? 'tool'),
          ' ',
          hint,
          ' ',
          state,
        ),
        h('pre', { class: 'tool-args' }, prettyJson(args)),
        result,
      ),
    );
    this.toolItems.set(id, { item, state, result, hint });
    this.tools.hidden = false;
    this.tools.append(item);
  }

  toolEnded(id, name, result, isError) {
    if (!this.toolItems.has(id)) this.toolStarted(id, name, '');
    const entry = this.toolItems.get(id);
    entry.item.classList.remove('running');
    entry.item.classList.add(isError ? 'failed' : 'done');
    entry.state.textContent = isError ? 'failed' : 'done';
    entry.result.textContent = result ?? '';
    entry.result.hidden = !result;
    const page = name === 'fetch_page' && !isError ? readPage(result) : null;
    if (page) entry.hint.replaceChildren(pageLink(page));
  }

  showReferences(items) {
    const rows = items
      .filter((ref) => ref && typeof ref === 'object')
      .map((ref) => {
        const url = safeUrl(ref.url);
        const title = ref.title || ref.url || 'Source';
        if (!url) return h('li', {}, title);
        return h(
          'li',
          {},
          h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, title),
          h('span', { class: 'host' }, ` ${new URL(url).hostname}`),
        );
      });
    this.referenceList.replaceChildren(...rows);
    this.references.hidden = rows.length === 0;
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
    this.files.hidden = false;
    if (file.status === 'failed') {
      this.files.append(h('li', { class: 'unmade' }, `${name}: ${file.error ?? 'not made'}`));
      return;
    }
    const link = this.downloadLink(url, name, `Download ${name}`);
    const item = h('li', {}, link, h('span', { class: 'muted' }, ` ${sizeText(file.size)}`));
    this.files.append(item);
    addPreview(item, file.fileId, name);
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
      this.files.hidden = false;
    });
  }

  /** A deck's slide list (titles and layouts), and a download button per version. */
  showDeck(deck) {
    const thumbnails = deck.thumbnails ?? [];
    const slides = (deck.slides ?? []).map((slide, index) =>
      h(
        'li',
        {},
        slide.title ?? '',
        h('span', { class: 'muted' }, ` ${slide.pageType ?? ''}`),
        this.thumbnail(thumbnails[index], slide.title),
      ),
    );
    const versions = (deck.versions ?? [])
      .filter((v) => safeUrl(v.url))
      .map((v) => {
        const name = v.name || 'deck.pptx';
        return h('li', {}, this.downloadLink(safeUrl(v.url), name, `Download version ${v.version}`));
      });
    const heading = `${deck.title || 'Deck'}: version ${deck.version}, ${deck.template ?? ''}`;
    this.deck.replaceChildren(
      h('h3', {}, deck.stage === 'ready' ? heading : `Outline of ${heading}`),
      h('ol', { class: 'slides' }, ...slides),
      h('ul', { class: 'versions', 'aria-label': 'Versions', hidden: !versions.length }, ...versions),
    );
    this.deck.hidden = false;
  }

  /** A slide's preview image, fetched with the key; nothing when there is none. */
  thumbnail(url, title) {
    const src = safeUrl(url);
    if (!src) return null;
    const image = h('img', { class: 'thumbnail', alt: `Slide: ${title ?? ''}`, width: 240 });
    objectUrl(src)
      .then((local) => {
        image.src = local;
      })
      .catch(() => image.remove());
    return image;
  }

  /** A passing note in the status line (a retry, a reconnection), until the next event. */
  showNotice(text) {
    this.status.textContent = text;
    this.noticeShown = true;
  }

  fail(message) {
    this.error.textContent = message;
    this.error.hidden = false;
  }

  finish(status, totalMs) {
    this.render();
    for (const { item, state } of this.toolItems.values()) {
      if (item.classList.contains('running')) state.textContent = status;
    }
    this.setStatus(status, totalMs);
  }

  setStatus(status, totalMs) {
    this.el.dataset.status = status;
    let text = STATUS_TEXT[status] ?? status;
    if (status === 'completed' && Number.isFinite(totalMs)) text += ` in ${durationText(totalMs)}`;
    this.status.textContent = text;
  }
}
