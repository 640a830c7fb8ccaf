// Asking and branching: a question asked (in the open conversation, or a new one) and its
// answer read as it streams (or a running one rejoined), the reader's decision on what a
// turn waits for, a retry, Stop, and the tree's edits: an edited question or a regenerated
// answer is asked again from that turn's parent, its new turn takes the old one's place on
// screen (and everything after it), and the old one stays one step away in the turn's
// `< n/m >` switcher, which makes another path active.

import { ApiError, getJson, send, sendJson } from './api.js';
import { BranchControls } from './branches.js';
import { clearNotice, showAuth, showError, showNotice } from './notices.js';
import { RatingControls } from './rating.js';
import { runEveryButton } from './schedules.js';
import { followRun, resumeRequest } from './stream.js';
import { TurnView } from './turn.js';

/**
 * What the chat page asks with. `page` holds its parts (`ui`, `state`, `composer`,
 * `attachment`, `models`, `conversations`, `schedules`, `runs`) and what draws the
 * conversation (`setBusy`, `setConversation`, `clearMessages`, `addTurn`,
 * `openConversation`, `showHistory`, `followLast`, `newChat`).
 */
export function asking(page) {
  const { ui, state, composer, attachment, models, conversations, schedules, runs } = page;
  const { setBusy, setConversation, clearMessages, addTurn } = page;
  const { openConversation, showHistory, followLast, newChat } = page;

  function newConversationId() {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  /** What a turn view calls back: a follow-up asked, a decision taken, a retry. */
  const turnHandlers = {
    onFollowUp: (question) => ask(question),
    onDecide: (turn, answer) => decide(turn, answer),
    onRetry: (turn) => retry(turn),
    onError: showError,
  };

  /** A stream request: its fields in a JSON body, so no question ends up in a URL or a log. */
  function openStream(agent, body, signal) {
    return send(`/agent/${agent}/stream`, {
      method: 'POST',
      headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
  }

  /** Give a turn view its tree controls; `meta` (`{id, parentId, siblings}`) when known. */
  function withBranch(turn, meta) {
    turn.branch = new BranchControls(turn, {
      onEdit: (text) => edit(turn, text),
      onRegenerate: () => regenerate(turn),
      onSwitch: (turnId) => switchTo(turn, turnId),
      onDelete: () => deleteTurn(turn),
    });
    turn.verdict = new RatingControls(turn, {
      rate: (rating, comment) => rate(turn, rating, comment),
      onError: showError,
    });
    runEveryButton(turn, {
      agent: () => ui.agent.value,
      project: () => state.projectId,
      screen: schedules,
    });
    if (meta) turn.branch.set(meta);
    return turn;
  }

  /** Store the reader's verdict on `turn`'s answer (null takes it back). */
  async function rate(turn, rating, comment) {
    const id = state.conversationId;
    const turnId = turn.branch.meta.id;
    if (!id || turnId === null) return;
    const path = `/session/${encodeURIComponent(id)}/turns/${turnId}/rating`;
    await sendJson('PUT', path, { rating, comment });
  }

  /**
   * Ask `text` in the open conversation (a new one when none is open). `branch` asks from
   * elsewhere in the tree: `{replaces, parentId}` sends an edited question, `{replaces,
   * regenerate}` asks for another answer; the new turn takes the place of `replaces`
   * (and of what followed it) on screen, as its newest sibling.
   */
  async function ask(text, branch = {}) {
    const question = text.trim();
    if (!question) return;
    if (text === ui.question.value && composer.blocked()) {
      // The line under the box already says why; the text stays where it is.
      ui.question.focus();
      return;
    }
    if (state.reading || state.waiting) return;
    if (attachment.waitingFor && !(await waitForFile())) return;
    const agent = ui.agent.value;
    const attached = attachment.fields();
    if (attachment.use().needs && !Object.keys(attached).length) {
      showNotice('Attach a file first: this agent answers questions about it.');
      return;
    }
    clearNotice();
    if (!state.conversationId) {
      const id = newConversationId();
      composer.moveDraft(id);
      setConversation(id);
    }
    const conversationId = state.conversationId;
    const params = new URLSearchParams({ conversationId });
    if (branch.regenerate === undefined) params.set('query', question);
    else params.set('regenerate', String(branch.regenerate));
    if (branch.parentId !== undefined) params.set('parentId', String(branch.parentId));
    for (const [name, fileId] of Object.entries(attached)) params.set(name, fileId);
    models.choose(params);
    if (agent === 'deep' && ui.reviewPlan.checked) params.set('reviewPlan', 'true');
    const body = Object.fromEntries(params);
    for (const name of ['regenerate', 'parentId']) {
      if (name in body) body[name] = Number(body[name]);
    }
    if ('reviewPlan' in body) body.reviewPlan = true;
    if (ui.temporary.checked && !ui.temporaryOption.hidden) body.memory = 'off';
    // A new conversation starts in the project; later turns stay in it without saying so.
    if (state.projectId && !state.turns.length) body.projectId = state.projectId;
    const typed = ui.question.value;
    const replaced = branch.replaces?.branch.meta;
    const parentId = replaced ? replaced.parentId : (state.turns.at(-1)?.branch.meta.id ?? null);
    const versions = replaced ? replaced.siblings : [];
    if (branch.replaces) removeFrom(branch.replaces);
    else if (typed.trim() === question) composer.clear();
    const turn = withBranch(new TurnView(question, turnHandlers));
    if (attached.fileId) turn.addUpload(attached.fileId);
    addTurn(turn);
    const onStart = (event) =>
      turn.branch.set({ id: event.sessionId, parentId, siblings: [...versions, event.sessionId] });
    await follow(turn, conversationId, async (signal) => {
      const response = await openStream(agent, body, signal);
      // The question is stored before the stream answers: another tab can rejoin it now.
      runs.tell('started', conversationId);
      runs.relist();
      return response;
    }, onStart);
    runs.tell('ended', conversationId);
    // A question the server refused before it began (busy in another tab, too long) is
    // not a turn: it goes back in the box, and the notice says why in the server's words.
    if (turn.refused && !branch.replaces && state.conversationId === conversationId) {
      const reason = turn.errorMessage;
      removeFrom(turn);
      // Nothing of a new conversation was stored: the page is back to no conversation.
      if (!state.turns.length) {
        clearMessages();
        setConversation(null);
      }
      if (!ui.question.value) composer.fill(question);
      showNotice(reason);
      ui.question.focus();
      return;
    }
    // A new version the server never started (it refused it, say) leaves the conversation
    // as it was: show that again, and why.
    const unstarted = branch.replaces && turn.branch.meta.id === null;
    if (unstarted && state.conversationId === conversationId && !state.reading) {
      const reason = turn.errorMessage;
      await openConversation(conversationId);
      if (reason) showNotice(reason);
      return;
    }
    // Back to the question box, unless the reader has moved on to something else; a
    // question the agent asked is waiting for the reply, so the box takes the focus.
    if (turn.el.dataset.status === 'paused' || document.activeElement === document.body) {
      ui.question.focus();
    }
  }

  /** Send the user's decision on what `turn` waits for: the same turn goes on, here. */
  async function decide(turn, answer) {
    if (state.reading || !state.conversationId) return;
    const conversationId = state.conversationId;
    turn.setStatus('running');
    await follow(turn, conversationId, (signal) =>
      openStream(ui.agent.value, { conversationId, approval: answer }, signal),
    );
  }

  /** Ask again after an error, in one click: another answer to the same question when the
   * turn was stored, else the question once more. */
  function retry(turn) {
    if (state.reading) return;
    if (turn.branch.meta.id !== null) regenerate(turn);
    else ask(turn.question, { replaces: turn });
  }

  /** Send an edited question: a new turn beside `turn`, from the same parent. */
  function edit(turn, text) {
    ask(text, { replaces: turn, parentId: turn.branch.meta.parentId ?? 0 });
  }

  /** Answer `turn`'s question again: a new turn beside it. */
  function regenerate(turn) {
    ask(turn.question, { replaces: turn, regenerate: turn.branch.meta.id });
  }

  /** Show another version of `turn`: the path through `turnId` becomes the active one. */
  async function switchTo(turn, turnId) {
    const id = state.conversationId;
    if (state.reading || !id) return;
    const index = state.turns.indexOf(turn);
    const { siblings, id: shown } = turn.branch.meta;
    const by = siblings.indexOf(turnId) > siblings.indexOf(shown) ? 1 : -1;
    let detail;
    try {
      detail = await sendJson('POST', `/session/${encodeURIComponent(id)}/active`, { turnId });
    } catch (error) {
      showError(error);
      return;
    }
    if (state.conversationId !== id || state.reading) return;
    showHistory(id, detail);
    // The keyboard stays on the switcher, now of the version just shown.
    state.turns[index]?.branch.focusStep(by);
    await followLast(id, detail);
  }

  /** Delete `turn` and every turn below it, on every branch; the conversation is drawn
   * again as the server keeps it (the path moves to the newest version left, or the
   * parent), or, with nothing left of it, the page starts a new one. */
  async function deleteTurn(turn) {
    const id = state.conversationId;
    const turnId = turn.branch.meta.id;
    if (state.reading || !id || turnId === null) return;
    const left = state.turns.indexOf(turn) > 0 || turn.branch.meta.siblings.length > 1;
    try {
      await send(`/session/${encodeURIComponent(id)}/turns/${turnId}`, { method: 'DELETE' });
      await conversations.refresh();
    } catch (error) {
      showError(error);
      return;
    }
    if (state.conversationId !== id) return;
    if (left) await openConversation(id);
    else newChat();
    ui.question.focus();
  }

  /** Send waits for a file still uploading or being read, and says so under the box; false
   * when the file did not come (it could not be read, or was taken off): the question stays
   * in the box, and the notice says why. */
  async function waitForFile() {
    state.waiting = true;
    composer.setWaiting(attachment.waitingFor);
    try {
      return (await attachment.ready()) !== null;
    } finally {
      state.waiting = false;
      composer.setWaiting('');
    }
  }

  /**
   * Read a run into `turn` until it completes; `open(signal)` makes the first request, and
   * `onStart(event)` hears the `start` event (the stored turn's id).
   */
  async function follow(turn, conversationId, open, onStart) {
    const controller = new AbortController();
    state.reading = controller;
    setBusy(true);
    let complete;
    try {
      complete = await followRun({
        open: () => open(controller.signal),
        conversationId,
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type === 'start') onStart?.(event);
          turn.apply(event);
          models.annotate(turn.el, event);
        },
        onReconnect: () => turn.showNotice('Connection lost, reconnecting…'),
      });
    } catch (error) {
      if (error.name === 'AbortError') return;
      if (error instanceof ApiError && error.status === 401) showAuth(error.message);
      turn.fail(error.message || String(error));
      turn.setStatus('failed');
      turn.refused = turn.branch.meta.id === null;
      return;
    } finally {
      if (state.reading === controller) {
        state.reading = null;
        setBusy(false);
      }
    }
    if (complete === null) await openConversation(conversationId);
    else runs.relist();
  }

  async function stop() {
    if (!state.conversationId) return;
    ui.stop.disabled = true;
    try {
      const query = new URLSearchParams({ conversationId: state.conversationId });
      await getJson(`/agent/stop?${query}`);
    } catch (error) {
      showError(error);
    } finally {
      ui.stop.disabled = false;
    }
  }

  /** Follow a turn still answering from its first event, in place of its stored view. */
  async function rejoin(stored, question, id) {
    const live = withBranch(new TurnView(question, turnHandlers), stored.branch.meta);
    await follow(live, id, async (signal) => {
      const response = await resumeRequest(id, 0, signal);
      const index = state.turns.indexOf(stored);
      if (index >= 0) state.turns[index] = live;
      stored.el.replaceWith(live.el);
      return response;
    });
  }

  /** Take `turn` and every turn after it off the screen: a new version takes their place. */
  function removeFrom(turn) {
    const index = state.turns.indexOf(turn);
    if (index < 0) return;
    for (const gone of state.turns.splice(index)) gone.el.remove();
  }

  return { ask, stop, rejoin, withBranch, turnHandlers };
}
