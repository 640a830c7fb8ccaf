// The question box's guards: what is typed is kept (a draft per conversation, in this
// browser, so a reload or a refusal never loses it), its length is counted as the limit
// nears, and when Send cannot be used a line under the box says why (too long; an answer
// still coming; the file it goes with still on its way), instead of a button that silently
// does nothing.

const DRAFT_STORAGE = 'dodo-agent.draft:';
const COUNT_FROM = 0.8;
/** The server's own default (`QUERY_MAX_CHARS`), until `/agent/limits` says otherwise. */
const DEFAULT_MAX_CHARS = 32000;

/** Characters as the server counts them (code points, not UTF-16 units). */
function length(text) {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

export class Composer {
  constructor({ question, send, hint }) {
    this.question = question;
    this.send = send;
    this.hint = hint;
    this.maxChars = DEFAULT_MAX_CHARS;
    this.busy = false;
    /** The file a sent question waits for, or ''. */
    this.waiting = '';
    this.draftKey = `${DRAFT_STORAGE}new`;
    question.setAttribute('aria-describedby', hint.id);
    question.addEventListener('input', () => {
      this.saveDraft();
      this.update();
    });
  }

  setLimit(maxChars) {
    if (Number.isInteger(maxChars) && maxChars > 0) this.maxChars = maxChars;
    this.update();
  }

  setBusy(busy) {
    this.busy = busy;
    this.update();
  }

  /** Say that the question waits for `fileName` (uploading, or being read) before it goes;
   * '' once it no longer does. */
  setWaiting(fileName) {
    this.waiting = fileName;
    this.update();
  }

  /** Why the question cannot be sent now, or '' when it can. */
  blocked() {
    const count = length(this.question.value);
    if (count > this.maxChars) {
      const over = (count - this.maxChars).toLocaleString();
      const of = `${count.toLocaleString()} of ${this.maxChars.toLocaleString()}`;
      return `Too long by ${over} characters (${of}): shorten it to send.`;
    }
    // Said only once there is something to send: an empty box needs no excuse.
    if (this.busy && this.question.value.trim()) {
      return 'An answer is still coming: wait for it, or press Stop, to ask again.';
    }
    return '';
  }

  update() {
    const reason = this.blocked();
    const count = length(this.question.value);
    let text = reason;
    if (!text && this.waiting) {
      text = `Waiting for ${this.waiting}… the question is sent once it is read.`;
    } else if (!text && count >= this.maxChars * COUNT_FROM) {
      text = `${count.toLocaleString()} of ${this.maxChars.toLocaleString()} characters`;
    }
    this.hint.textContent = text;
    this.hint.hidden = !text;
    this.hint.classList.toggle('blocked', Boolean(reason));
    this.send.disabled = Boolean(reason) || this.busy || Boolean(this.waiting);
    this.question.setAttribute('aria-invalid', String(count > this.maxChars));
  }

  /** Show the draft kept for `conversationId` (null: a new conversation). */
  useDraft(conversationId) {
    this.draftKey = `${DRAFT_STORAGE}${conversationId ?? 'new'}`;
    this.question.value = localStorage.getItem(this.draftKey) ?? '';
    this.update();
  }

  /** Keep the box's text under a new conversation's id (its first question is on its way). */
  moveDraft(conversationId) {
    localStorage.removeItem(this.draftKey);
    this.draftKey = `${DRAFT_STORAGE}${conversationId}`;
    this.saveDraft();
  }

  saveDraft() {
    if (this.question.value) localStorage.setItem(this.draftKey, this.question.value);
    else localStorage.removeItem(this.draftKey);
  }

  /** Set the box's text (a question handed back, an example) and keep it. */
  fill(text) {
    this.question.value = text;
    this.saveDraft();
    this.update();
  }

  clear() {
    this.fill('');
  }
}
