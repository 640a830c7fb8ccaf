// Projects (`/projects`): the sidebar's list, and a project's screen, where its name,
// instructions (what every conversation in it follows), default agent and model, its
// files (every agent in it searches them) and its conversations are; a new chat starts
// in it from there. Deleting one takes its conversations, memory and schedules with it
// (pressed twice); its files stay in the library.

import { ApiError, getJson, send, sendJson } from './api.js';
import { h, pressTwice } from './dom.js';
import { Screen } from './screen.js';

export class ProjectList {
  /** `onOpen(projectId, {fresh})` shows a project (`fresh`: just made, its name to type). */
  constructor({ list, create, onOpen, onError }) {
    this.list = list;
    this.onOpen = onOpen;
    /** The caller's projects, newest first, as `/projects` lists them. */
    this.projects = [];
    create.addEventListener('click', () => this.create().catch(onError));
  }

  /** Read the list again; a server without projects (404) has none. */
  async refresh() {
    try {
      this.projects = await getJson('/projects');
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
      this.projects = [];
    }
    this.list.replaceChildren(
      ...this.projects.map((project) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'open-project',
              'data-id': project.projectId,
              onclick: () => this.onOpen(project.projectId),
            },
            project.name,
          ),
        ),
      ),
    );
  }

  get(projectId) {
    return this.projects.find((project) => project.projectId === projectId) ?? null;
  }

  name(projectId) {
    return this.get(projectId)?.name ?? 'A project';
  }

  async create() {
    const made = await sendJson('POST', '/projects', { name: 'New project' });
    await this.refresh();
    this.onOpen(made.projectId, { fresh: true });
  }
}

export class ProjectScreen extends Screen {
  /**
   * As a `Screen` (opened by the page); `onChanged()` follows a change the lists show,
   * `onNewChat(project)` starts a chat in it, `onOpenConversation(id)` opens one of its
   * conversations, `agents()` lists the agent picker's `{kind, name}`.
   */
  constructor({ panel, chat, onError, onChanged, onNewChat, onOpenConversation, agents }) {
    super({ panel, chat });
    this.onError = onError;
    this.onChanged = onChanged;
    this.onNewChat = onNewChat;
    this.onOpenConversation = onOpenConversation;
    this.agents = agents;
    this.project = null;
    /** The project's load: what New chat waits for when pressed before it ends. */
    this.loading = Promise.resolve();
    const $ = (id) => panel.querySelector(`#${id}`);
    this.title = $('project-title');
    this.form = $('project-form');
    this.name = $('project-name');
    this.instructions = $('project-instructions');
    this.kind = $('project-kind');
    this.model = $('project-model');
    this.status = $('project-status');
    this.files = $('project-files');
    this.filesEmpty = $('project-files-empty');
    this.filePick = $('project-file-pick');
    this.conversations = $('project-conversations');
    this.conversationsEmpty = $('project-conversations-empty');
    const remove = pressTwice(
      { class: 'button danger', id: 'project-delete' },
      'Delete project',
      'Delete it and its conversations? Press again',
      () => this.remove().catch(onError),
    );
    $('project-delete-place').replaceWith(remove);
    $('project-close').addEventListener('click', () => this.close());
    // Pressed while the project still loads (just opened), it starts the chat once it has
    // (a load that failed was shown by `show`).
    $('project-new-chat').addEventListener('click', () => {
      this.loading.then(() => this.project && this.onNewChat(this.project), () => {});
    });
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.save().catch(onError);
    });
    this.filePick.addEventListener('change', () => {
      const [file] = this.filePick.files;
      this.filePick.value = '';
      if (file) this.attach(file).catch(onError);
    });
  }

  /** Open the project's screen; `fresh`: a project just made, its name ready to type. */
  async show(projectId, { fresh = false } = {}) {
    this.open();
    this.status.textContent = '';
    this.project = null;
    this.loading = this.load(projectId);
    await this.loading;
    if (fresh) {
      this.name.focus();
      this.name.select();
    }
  }

  async load(projectId) {
    const id = encodeURIComponent(projectId);
    const [project, page, models] = await Promise.all([
      getJson(`/projects/${id}`),
      getJson(`/session/list?pageNum=1&pageSize=100&projectId=${id}`),
      getJson('/agent/models').catch(() => []),
    ]);
    this.project = project;
    this.title.textContent = project.name;
    this.name.value = project.name;
    this.instructions.value = project.instructions;
    this.kind.replaceChildren(
      new Option('As picked', ''),
      ...this.agents().map((agent) => new Option(agent.name, agent.kind)),
    );
    this.kind.value = project.defaultKind ?? '';
    this.model.replaceChildren(
      new Option('As picked', ''),
      ...models.map((model) => new Option(model.label, model.id)),
    );
    this.model.value = project.defaultModel ?? '';
    this.files.replaceChildren(...project.files.map((file) => this.fileItem(file)));
    this.filesEmpty.hidden = project.files.length > 0;
    this.conversations.replaceChildren(
      ...page.records.map((record) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              type: 'button',
              class: 'open',
              onclick: () => this.onOpenConversation(record.conversationId),
            },
            record.title || record.question,
          ),
        ),
      ),
    );
    this.conversationsEmpty.hidden = page.records.length > 0;
  }

  fileItem(file) {
    const path = `/projects/${encodeURIComponent(this.project.projectId)}/files/`;
    const detach = h(
      'button',
      {
        type: 'button',
        class: 'button detach',
        'aria-label': `Remove ${file.fileName} from the project`,
        onclick: () =>
          send(`${path}${encodeURIComponent(file.fileId)}`, { method: 'DELETE' })
            .then(() => this.load(this.project.projectId))
            .catch(this.onError),
      },
      'Remove',
    );
    return h('li', { 'data-file': file.fileId }, h('span', {}, file.fileName), detach);
  }

  async save() {
    const id = this.project.projectId;
    const changed = await sendJson('PATCH', `/projects/${encodeURIComponent(id)}`, {
      name: this.name.value.trim(),
      instructions: this.instructions.value,
      defaultKind: this.kind.value || null,
      defaultModel: this.model.value || null,
    });
    this.project = { ...this.project, ...changed };
    this.title.textContent = changed.name;
    this.status.textContent = 'Saved.';
    await this.onChanged();
  }

  /** Upload a file to the library and attach it here. */
  async attach(file) {
    const id = this.project.projectId;
    this.status.textContent = `Adding ${file.name}…`;
    const form = new FormData();
    form.append('file', file);
    const uploaded = await getJson('/file/upload', { method: 'POST', body: form });
    await sendJson('POST', `/projects/${encodeURIComponent(id)}/files`, {
      fileId: uploaded.fileId,
    });
    this.status.textContent = `${file.name} added.`;
    await this.load(id);
  }

  async remove() {
    const id = this.project.projectId;
    await send(`/projects/${encodeURIComponent(id)}`, { method: 'DELETE' });
    this.project = null;
    this.close();
    await this.onChanged(id);
  }
}
