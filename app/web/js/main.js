// The chat page: wires the composer, the agent picker, uploads, the API key and the
// conversation list to the service. One answer streams at a time. The open
// conversation lives in the URL (#c=<id>), so a reload shows it again and, if it was
// still answering, follows the answer live from its first event. Other tabs and devices
// keep in step (runs.js). A conversation is a tree of turns, and the page shows its
// active path; asking, and moving about the tree, is asking.js.

import { AccountScreen } from './account.js';
import { AdminScreen } from './admin.js';
import { loadAgents } from './agents.js';
import { ApiError, apiKey, getJson } from './api.js';
import { asking } from './asking.js';
import { Attachment } from './attach.js';
import { startSignIn } from './auth.js';
import { SchedulesScreen } from './schedules.js';
import { Composer } from './composer.js';
import { ConversationList } from './conversations.js';
import { ConversationSearch } from './search.js';
import { headerMenu } from './header-menu.js';
import { MemoryScreen } from './memory.js';
import { clearNotice, listenToNotices, showAuth, showError, showNotice } from './notices.js';
import { ModelPicker } from './models.js';
import { ProjectList, ProjectScreen } from './projects.js';
import { RunWatch } from './runs.js';
import { TurnView } from './turn.js';
import { closeScreens } from './screen.js';
import { showShared } from './shared.js';
import { closeSidebar, listenToKeys } from './sidebar.js';
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
  keyButton: $('key-button'),
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

const state = {
  conversationId: null,
  /** A question waits for its file (still uploading or being read) before it is sent. */
  waiting: false,
  /** The AbortController of the stream being read, while one is. */
  reading: null,
  /** Whether the view follows new content (the reader has not scrolled up). */
  pinned: true,
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

const runs = new RunWatch({
  conversations,
  open: () => state.conversationId,
  reading: () => Boolean(state.reading),
  join: (id) => openConversation(id),
  onError: showError,
});

const { ask, stop, rejoin, withBranch, turnHandlers } = asking({
  ui,
  state,
  composer,
  attachment,
  models,
  conversations,
  schedules,
  runs,
  setBusy,
  setConversation,
  clearMessages,
  addTurn,
  openConversation,
  showHistory,
  followLast,
  newChat,
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
    loadAgents(ui.agent),
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
  runs.refresh();
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
attachment.takeDrops(ui.composer, ui.question);
$('new-chat').addEventListener('click', () => newChat());
listenToNotices({
  onSaved: load,
  onForgotten: () => {
    admin.load(null);
    account.load(null, false);
    conversations.clear();
    newChat();
  },
});
listenToKeys({ newChat: () => newChat(), lastAnswer: () => state.turns.at(-1)?.el ?? null });
window.addEventListener('hashchange', () => {
  // Into a shared link, or out of one: the page starts again as that page.
  if (SHARED_HASH.test(location.hash) || document.body.classList.contains('shared-view')) {
    location.reload();
    return;
  }
  const match = CONVERSATION_HASH.exec(location.hash);
  if (match && match[1] !== state.conversationId) openConversation(match[1]);
});
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
