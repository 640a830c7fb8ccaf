// Other tabs and devices: the list badges the conversations with a turn running
// (`/agent/runs`, looked at every few seconds while the page is visible), and a page
// showing a conversation that starts answering elsewhere follows that answer too.
// Tabs of one browser tell each other at once when they start or end a turn
// (a BroadcastChannel), so two tabs on one conversation stay in step.

import { getJson } from './api.js';

const RUNS_POLL_MS = 5000;

export class RunWatch {
  /** `conversations` is the list it badges; `open()` the conversation on screen (null:
   * none), `reading()` whether the page reads an answer now, `join(id)` follows one that
   * started elsewhere (by opening it again), `onError(error)` shows a failure. */
  constructor({ conversations, open, reading, join, onError }) {
    this.conversations = conversations;
    this.open = open;
    this.reading = reading;
    this.join = join;
    this.onError = onError;
    /** The page is joining, on its own, a turn that started elsewhere. */
    this.joining = false;
    this.tabs = 'BroadcastChannel' in window ? new BroadcastChannel('dodo-agent.turns') : null;
    this.tabs?.addEventListener('message', (event) => {
      this.relist({ join: event.data?.kind === 'started' });
    });
    setInterval(() => {
      if (!document.hidden) this.refresh({ join: true });
    }, RUNS_POLL_MS);
  }

  /** Tell this browser's other tabs that a turn of `conversationId` has `started` or `ended`. */
  tell(kind, conversationId) {
    this.tabs?.postMessage({ kind, conversationId });
  }

  /** The list again, then its badges (and, with `join`, a turn started elsewhere). */
  relist({ join = false } = {}) {
    this.conversations.refresh().then(() => this.refresh({ join }), this.onError);
  }

  /**
   * Badge the list with the caller's runs; with `join`, follow a turn of the open
   * conversation that started elsewhere. A server without `/agent/runs` shows no badges.
   */
  async refresh({ join = false } = {}) {
    // Asked while the page read an answer, the list may say "running" of the very turn
    // that has ended since: joining it would draw the conversation again under the reader.
    const askedWhileReading = this.reading();
    let runs;
    try {
      runs = await getJson('/agent/runs');
    } catch {
      return;
    }
    const byConversation = new Map();
    for (const run of Array.isArray(runs) ? runs : []) {
      if (byConversation.get(run.conversationId) !== 'running') {
        byConversation.set(run.conversationId, run.status);
      }
    }
    this.conversations.setRuns(byConversation);
    const open = this.open();
    if (!join || askedWhileReading || this.reading() || this.joining) return;
    if (byConversation.get(open) !== 'running') return;
    this.joining = true;
    try {
      // The reader may have moved on while the list was asked for.
      if (this.open() === open && !this.reading()) await this.join(open);
    } finally {
      this.joining = false;
    }
  }
}
