// The chat page: wires the composer, the agent picker, uploads, the API key and the
// conversation list to the service. One answer streams at a time. The open
// conversation lives in the URL (#c=<id>), so a reload shows it again and, if it was
// still answering, follows the answer live from its first event.
//
// Other tabs and devices: the list badges the conversations with a turn running
// (`/agent/runs`, looked at every few seconds while the page is visible), and a page
// showing a conversation that starts answering elsewhere follows that answer too.
// Tabs of one browser tell each other at once when they start or end a turn
// (a BroadcastChannel), so two tabs on one conversation stay in step.
//
// A conversation is a tree of turns, and the page shows its active path. Editing a
// question or regenerating an answer asks again from that turn's parent: the new turn
// takes the old one's place on screen (and everything after it), and the old one stays
// one step away in the turn's `< n/m >` switcher, which makes another path active.

import { AccountScreen } from './account.js';
import { AdminScreen } from './admin.js';
import { ApiError, apiKey, getJson, saveApiKey, send, sendJson } from './api.js';
import { Attachment } from './attach.js';
import { startSignIn } from './auth.js';
import { BranchControls } from './branches.js';
import { RatingControls } from './rating.js';
import { SchedulesScreen, runEveryButton } from './schedules.js';
import { Composer } from './composer.js';
import { ConversationList } from './conversations.js';
import { ConversationSearch } from './search.js';
import { headerMenu } from './header-menu.js';
import { MemoryScreen } from './memory.js';
import { ModelPicker } from './models.js';
import { ProjectList, ProjectScreen } from './projects.js';
import { followRun, resumeRequest } from './stream.js';
import { TurnView } from './turn.js';
import { closeScreens } from './screen.js';
import { showShared } from './shared.js';
import { showWelcome } from './welcome.js';

const $ = (id) => document.getElementById(id);
const ui = {
  messages: $('messages'),
  welcome: $('welcome'),
  composer: $('composer'),
  question: $('question'),
  send: $('send'),
  stop: $('stop'),
  agent: $('agent'),
  attach: $('attach'),
  reviewPlan: $('review-plan'),
  reviewPlanOption: $('review-plan-option'),
  notice: $('notice'),
  noticeText: $('notice-text'),
  auth: $('auth'),
  authMessage: $('auth-message'),
  apiKeyInput: $('api-key'),
  keyButton: $('key-button'),
  menuButton: $('menu-button'),
  sidebar: $('sidebar'),
  welcomeText: $('welcome-text'),
  examples: $('examples'),
  temporary: $('temporary'),
  temporaryOption: $('temporary-option'),
  temporaryNote: $('temporary-note'),
  projectChip: $('project-chip'),
};

headerMenu($('header-menu-button'), $('header-menu'));

const composer = new Composer({ question: ui.question, send: ui.send, hint: $('composer-hint') });

const models = new ModelPicker(ui.composer.querySelector('.composer-tools'));
const attachment = new Attachment({
  agent: ui.agent,
  attach: ui.attach,
  button: $('attach-button'),
  label: $('attach-label'),
  input: $('file-input'),
  chip: $('file-chip'),
  name: $('file-name'),
  clear: $('file-clear'),
  readsImages: () => models.seesImages(),
  onNotice: showNotice,
  onError: showError,
});
/** An agent kind's name as the agent picker shows it. */
function agentName(kind) {
  return [...ui.agent.options].find((o) => o.value === kind)?.textContent ?? kind;
}

const screenParts = {
  chat: [ui.messages, ui.composer],
  onError: showError,
  agentName,
};
const admin = new AdminScreen({ button: $('admin-button'), panel: $('admin'), ...screenParts });
const account = new AccountScreen({
  button: $('account-button'),
  panel: $('account'),
  ...screenParts,
  modelName: (id) => models.nameOf(id),
});
const projects = new ProjectList({
  list: $('projects'),
  create: $('new-project'),
  onOpen: (id, options) => projectScreen.show(id, options).catch(showError),
  onError: showError,
});
const projectScreen = new ProjectScreen({
  panel: $('project'),
  ...screenParts,
  onChanged: (deleted) => {
    // A deleted project took its conversations: the one on screen too, if it was in it.
    if (deleted && deleted === state.projectId) newChat();
    return Promise.all([projects.refresh(), conversations.refresh()]).catch(showError);
  },
  onNewChat: (project) => newChat({ project }),
  onOpenConversation: (id) => openConversation(id),
  agents: () => [...ui.agent.options].map((o) => ({ kind: o.value, name: o.textContent })),
});
const memory = new MemoryScreen({
  button: $('memory-button'),
  place: $('account-memory-section'),
  panel: $('memory'),
  ...screenParts,
  projectName: (id) => projects.name(id),
});
const schedules = new SchedulesScreen({
  button: $('schedules-button'),
  panel: $('schedules'),
  agents: ui.agent,
  projects: () => projects.projects,
  ...screenParts,
});
const CONVERSATION_HASH = /^#c=([A-Za-z0-9_-]{1,128})$/;
const SHARED_HASH = /^#s=([A-Za-z0-9_-]{16,64})$/;
const RUNS_POLL_MS = 5000;
const tabs = 'BroadcastChannel' in window ? new BroadcastChannel('dodo-agent.turns') : null;

const state = {
  conversationId: null,
  /** A question waits for its file (still uploading or being read) before it is sent. */
  waiting: false,
  /** The AbortController of the stream being read, while one is. */
  reading: null,
  /** Whether the view follows new content (the reader has not scrolled up). */
  pinned: true,
  /** The page is joining, on its own, a turn that started elsewhere. */
  joining: false,
  /** The turns on screen (TurnViews, each with its `branch` controls), oldest first. */
  turns: [],
  /** The project of the open conversation, or the one a new chat starts in; null: none. */
  projectId: null,
};

const conversations = new ConversationList({
  list: $('conversations'),
  empty: $('conversations-empty'),
  more: $('more-conversations'),
  onOpen: (id) => openConversation(id),
  onDeleted: (id) => {
    if (id === state.conversationId) newChat();
  },
  onError: showError,
  onNotice: (message) => showNotice(message, 'info'),
  agentName,
  projects: () => projects.projects,
  onMoved: (id, projectId) => {
    if (id === state.conversationId) setProject(projectId);
  },
});

// The search box lives on its own: it only needs a way to open what it finds.
new ConversationSearch({
  form: $('search'),
  input: $('search-input'),
  results: $('search-results'),
  status: $('search-status'),
  more: $('more-results'),
  hide: [$('conversations'), $('conversations-empty'), $('more-conversations')],
  onOpen: (conversationId, turnId) => openConversation(conversationId, { turnId }),
  onError: showError,
});

function newConversationId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A notice above the conversation: a failure (`error`), or news (`info`). */
function showNotice(message, kind = 'error') {
  ui.noticeText.textContent = message;
  ui.notice.dataset.kind = kind;
  ui.notice.hidden = false;
}

function clearNotice() {
  ui.notice.hidden = true;
}

/** Ask for the key, saying why; a box already open keeps what is being typed in it (the
 * page's first requests, sent with no key, are refused one by one as it is typed). */
function showAuth(message) {
  ui.authMessage.textContent = message;
  ui.keyButton.hidden = false;
  if (!ui.auth.hidden) return;
  ui.auth.hidden = false;
  ui.apiKeyInput.value = apiKey();
  ui.apiKeyInput.focus();
}

function showError(error) {
  if (error.name === 'AbortError') return;
  if (error instanceof ApiError && error.status === 401) showAuth(error.message);
  else showNotice(error.message || String(error));
}

function setBusy(busy) {
  composer.setBusy(busy);
  ui.stop.hidden = !busy;
  ui.messages.setAttribute('aria-busy', String(busy));
}

function setConversation(id) {
  if (id !== state.conversationId) composer.useDraft(id);
  state.conversationId = id;
  const url = id ? `#c=${id}` : `${location.pathname}${location.search}`;
  history.replaceState(null, '', url);
  conversations.markCurrent(id);
}

function clearMessages() {
  ui.messages.replaceChildren(ui.welcome);
  ui.welcome.hidden = false;
  state.turns = [];
}

/** What a turn view calls back: a follow-up asked, a decision taken, a retry. */
const turnHandlers = {
  onFollowUp: (question) => ask(question),
  onDecide: (turn, answer) => decide(turn, answer),
  onRetry: (turn) => retry(turn),
  onError: showError,
};

/** The project of the conversation on screen (or of the new chat about to start). */
function setProject(projectId) {
  state.projectId = projectId;
  ui.projectChip.textContent = projectId ? `In project: ${projects.name(projectId)}` : '';
  ui.projectChip.hidden = !projectId;
}

/** A temporary chat neither reads nor saves memory: the page says so while it is on. */
function showTemporary() {
  const on = ui.temporary.checked && !ui.temporaryOption.hidden;
  ui.temporaryNote.hidden = !on;
  ui.composer.classList.toggle('temporary', on);
}

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

/** Take `turn` and every turn after it off the screen: a new version takes their place. */
function removeFrom(turn) {
  const index = state.turns.indexOf(turn);
  if (index < 0) return;
  for (const gone of state.turns.splice(index)) gone.el.remove();
}

function addTurn(turn) {
  state.turns.push(turn);
  ui.welcome.hidden = true;
  ui.messages.append(turn.el);
  state.pinned = true;
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function stopReading() {
  state.reading?.abort();
  state.reading = null;
  setBusy(false);
}

function showAgentTools() {
  attachment.show();
  ui.reviewPlanOption.hidden = ui.agent.value !== 'deep';
  models.forAgent(ui.agent.value);
  const welcome = { text: ui.welcomeText, examples: ui.examples, question: ui.question };
  showWelcome(welcome, ui.agent.selectedOptions[0], (example, attach) => {
    composer.fill(example);
    // The file the example goes with, unless one is attached: its picker opens at once.
    if (attach && !attachment.current()) attachment.pick();
    else ui.question.focus();
  });
}

/** Offer the agents the server runs; on any failure the page's own two stay. */
async function loadAgents() {
  let kinds;
  try {
    kinds = await getJson('/agent/kinds');
  } catch {
    return;
  }
  const offered = Array.isArray(kinds) ? kinds.filter((k) => k.available) : [];
  if (!offered.length) return;
  const picked = ui.agent.value;
  ui.agent.replaceChildren(
    ...offered.map((k) => {
      const option = new Option(k.name, k.kind);
      option.toggleAttribute('data-needs-file', Boolean(k.needsFile));
      option.toggleAttribute('data-accepts-file', Boolean(k.acceptsFile));
      if (k.description) option.dataset.description = k.description;
      if (Array.isArray(k.examples)) option.dataset.examples = JSON.stringify(k.examples);
      return option;
    }),
  );
  if (offered.some((k) => k.kind === picked)) ui.agent.value = picked;
}

function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  ui.menuButton.setAttribute('aria-expanded', 'false');
}

function openSidebar() {
  document.body.classList.add('sidebar-open');
  ui.menuButton.setAttribute('aria-expanded', 'true');
  const conversation = ui.sidebar.querySelector('.conversations button.open[tabindex="0"]');
  (conversation ?? ui.sidebar.querySelector('button:not([hidden])') ?? ui.sidebar).focus();
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
  else conversations.refresh().then(() => refreshRuns(), showError);
}

/**
 * Badge the list with the caller's runs; with `join`, follow a turn of the open
 * conversation that started elsewhere. A server without `/agent/runs` shows no badges.
 */
async function refreshRuns({ join = false } = {}) {
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
  conversations.setRuns(byConversation);
  const open = state.conversationId;
  if (!join || state.reading || state.joining || byConversation.get(open) !== 'running') return;
  state.joining = true;
  try {
    // The reader may have moved on while the list was asked for.
    if (state.conversationId === open && !state.reading) await openConversation(open);
  } finally {
    state.joining = false;
  }
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
    tabs?.postMessage({ kind: 'started', conversationId });
    conversations.refresh().then(() => refreshRuns(), showError);
    return response;
  }, onStart);
  tabs?.postMessage({ kind: 'ended', conversationId });
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

/** Open a conversation; with `turnId`, scroll to that turn when it is on the active path. */
async function openConversation(id, { turnId } = {}) {
  closeScreens();
  stopReading();
  clearNotice();
  closeSidebar();
  let detail;
  try {
    detail = await getJson(`/session/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      newChat();
      showNotice('That conversation no longer exists.');
    } else {
      showError(error);
    }
    return;
  }
  showHistory(id, detail);
  const found = state.turns.find((turn) => turn.branch.meta.id === turnId);
  if (found) {
    state.pinned = false;
    found.el.classList.add('found');
    found.el.scrollIntoView({ block: 'start' });
  }
  await followLast(id, detail);
}

/** Draw a conversation's history (`/session/{id}`'s answer): its active path. */
function showHistory(id, detail) {
  setConversation(id);
  clearMessages();
  if ([...ui.agent.options].some((o) => o.value === detail.agentType)) {
    ui.agent.value = detail.agentType;
  }
  showAgentTools();
  attachment.restore(detail.fileid);
  setProject(detail.projectId ?? null);
  for (const message of detail.messages) {
    const view = TurnView.fromStored(message, turnHandlers);
    const turn = withBranch(view, message);
    turn.verdict.set(message.rating, message.ratingComment);
    models.annotateStored(turn.el, message);
    addTurn(turn);
  }
  models.show(detail.messages);
}

/** After drawing a history: follow its last turn if it is still answering. */
async function followLast(id, detail) {
  const last = detail.messages.at(-1);
  if (last?.status === 'running') await rejoin(state.turns.at(-1), last.question, id);
  else if (last?.status === 'paused') ui.question.focus();
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

/** A new chat; in `project`, with its default agent when it names one. */
function newChat({ project = null } = {}) {
  closeScreens();
  stopReading();
  setConversation(null);
  clearMessages();
  clearNotice();
  closeSidebar();
  attachment.set(null);
  setProject(project?.projectId ?? null);
  const kind = project?.defaultKind;
  if (kind && [...ui.agent.options].some((o) => o.value === kind)) {
    ui.agent.value = kind;
    showAgentTools();
  }
  models.show([], project?.defaultModel);
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

const carriesFiles = (transfer) => [...(transfer?.types ?? [])].includes('Files');

/** The question-length limit the server sets; its default until it says. */
async function loadLimits() {
  try {
    composer.setLimit((await getJson('/agent/limits')).queryMaxChars);
  } catch {
    // An older server: the default limit stands, and a refusal still says why.
  }
}

/** Who the caller is, for the admin and account screens; either may not be told (an older
 * server), and then those screens stay out of sight. */
async function loadCaller() {
  const [me, config] = await Promise.all([
    getJson('/auth/me').catch(() => null),
    getJson('/auth/config').catch(() => null),
  ]);
  admin.load(me);
  account.load(me, (config?.methods ?? []).length > 0);
}

/** The Memory screen and the temporary-chat switch, where the server keeps memory. */
async function loadMemory() {
  try {
    await memory.load();
  } catch (error) {
    showError(error);
  }
  ui.temporaryOption.hidden = !memory.available;
  showTemporary();
}

async function load() {
  // Read first: whatever the reader does while the agents and the list load changes it.
  const hash = location.hash;
  ui.keyButton.hidden = !apiKey();
  await Promise.all([
    loadAgents(),
    models.load(),
    loadLimits(),
    loadCaller(),
    projects.refresh().catch(showError),
    loadMemory(),
  ]);
  showAgentTools();
  try {
    await conversations.refresh();
  } catch (error) {
    showError(error);
    return;
  }
  refreshRuns();
  // A question asked (or a chat opened) while the list loaded has changed the hash:
  // the reader has moved on, and opening the old one would abort what they started.
  if (location.hash !== hash) return;
  const match = CONVERSATION_HASH.exec(hash);
  if (match) await openConversation(match[1]);
}

ui.composer.addEventListener('submit', (event) => {
  event.preventDefault();
  ask(ui.question.value);
});
ui.question.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ask(ui.question.value);
  } else if (event.key === 'Escape' && state.reading) {
    event.preventDefault();
    stop();
  }
});
ui.stop.addEventListener('click', stop);
ui.temporary.addEventListener('change', showTemporary);
ui.agent.addEventListener('change', showAgentTools);
// A file dropped anywhere on the page is taken, not opened by the browser in the page's place.
document.addEventListener('dragover', (event) => {
  if (!carriesFiles(event.dataTransfer)) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = 'copy';
  ui.composer.classList.add('dropping');
});
document.addEventListener('dragleave', (event) => {
  if (event.relatedTarget === null) ui.composer.classList.remove('dropping');
});
document.addEventListener('drop', (event) => {
  ui.composer.classList.remove('dropping');
  if (!carriesFiles(event.dataTransfer)) return;
  event.preventDefault();
  if (event.dataTransfer.files.length) attachment.offer([...event.dataTransfer.files]);
});
// A pasted picture (a screenshot) is a file; pasted text stays text.
ui.question.addEventListener('paste', (event) => {
  const files = [...(event.clipboardData?.files ?? [])];
  if (!files.length || event.clipboardData.getData('text/plain')) return;
  event.preventDefault();
  attachment.offer(files);
});
$('new-chat').addEventListener('click', () => newChat());
// The skip links move the keyboard without touching the URL, which names the conversation.
for (const link of document.querySelectorAll('.skip-link')) {
  link.addEventListener('click', (event) => {
    event.preventDefault();
    const target = $(link.dataset.skip);
    const answer = target === ui.messages ? state.turns.at(-1)?.el : null;
    if (answer) {
      answer.setAttribute('tabindex', '-1');
      answer.focus();
    } else {
      target.focus();
    }
  });
}
$('notice-close').addEventListener('click', clearNotice);
ui.keyButton.addEventListener('click', () => {
  if (ui.auth.hidden) showAuth(apiKey() ? 'Change or forget the API key.' : 'Enter an API key.');
  else ui.auth.hidden = true;
});
$('auth-form').addEventListener('submit', (event) => {
  event.preventDefault();
  saveApiKey(ui.apiKeyInput.value.trim());
  ui.auth.hidden = true;
  clearNotice();
  load();
});
$('forget-key').addEventListener('click', () => {
  saveApiKey('');
  ui.apiKeyInput.value = '';
  admin.load(null);
  account.load(null, false);
  conversations.clear();
  newChat();
  showAuth('The key is forgotten. Enter one to go on.');
});
ui.menuButton.addEventListener('click', () => {
  if (document.body.classList.contains('sidebar-open')) closeSidebar();
  else openSidebar();
});
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && document.body.classList.contains('sidebar-open')) {
    closeSidebar();
    ui.menuButton.focus();
    return;
  }
  // Ctrl (Cmd on a Mac) with Shift+O starts a new chat, with K goes to the search box:
  // the keys other chat pages use, so hands need not learn ours.
  const command = (event.ctrlKey || event.metaKey) && !event.altKey;
  const key = event.key.toLowerCase();
  if (command && event.shiftKey && key === 'o') {
    event.preventDefault();
    newChat();
  } else if (command && !event.shiftKey && key === 'k') {
    event.preventDefault();
    if (window.matchMedia('(max-width: 760px)').matches) openSidebar();
    $('search-input').focus();
  }
});
window.addEventListener('hashchange', () => {
  // Into a shared link, or out of one: the page starts again as that page.
  if (SHARED_HASH.test(location.hash) || document.body.classList.contains('shared-view')) {
    location.reload();
    return;
  }
  const match = CONVERSATION_HASH.exec(location.hash);
  if (match && match[1] !== state.conversationId) openConversation(match[1]);
});
tabs?.addEventListener('message', (event) => {
  const join = event.data?.kind === 'started';
  conversations.refresh().then(() => refreshRuns({ join }), showError);
});
setInterval(() => {
  if (!document.hidden) refreshRuns({ join: true });
}, RUNS_POLL_MS);
ui.messages.addEventListener('scroll', () => {
  const { scrollHeight, scrollTop, clientHeight } = ui.messages;
  state.pinned = scrollHeight - scrollTop - clientHeight < 80;
});
new MutationObserver(() => {
  if (state.pinned) ui.messages.scrollTop = ui.messages.scrollHeight;
}).observe(ui.messages, { childList: true, subtree: true, characterData: true });

composer.useDraft(null);
// A shared link is read by anyone, signed in or not: it needs no sign-in.
const sharedLink = SHARED_HASH.exec(location.hash);
if (sharedLink) {
  showShared(sharedLink[1], { messages: ui.messages, welcome: ui.welcome }).catch(showError);
} else {
  startSignIn().then(
    (needed) => {
      if (needed) showAuth('Sign in (the button above), or enter an API key.');
      else load();
    },
    (error) => {
      showNotice(error.message);
      load();
    },
  );
}
