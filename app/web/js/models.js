// The model picker: the models this service offers (GET /agent/models) beside the
// agent picker, and each answer's model and cost under it. An open conversation shows
// the model its last turn used; a new chat the one the user picked last, which the
// service keeps for them (`/account/preferences`), so it follows them to another device.
// A service with one model shows no picker; one without /agent/models (an older server)
// leaves the page as it was, and one without preferences keeps the choice for this page.

import { getJson, sendJson } from './api.js';
import { h } from './dom.js';

/** The picker's first option: no `model` sent, so the agent kind's own (AGENT_MODELS). */
const AGENT_DEFAULT = '';

/** Dollars as a person reads them: cents for most answers, more digits for tiny ones. */
export function dollars(cost) {
  if (cost >= 0.01) return `$${cost.toFixed(2)}`;
  if (cost === 0) return '$0';
  return `$${cost.toPrecision(2)}`;
}

export class ModelPicker {
  /** `container`: where the picker goes (the composer's tools, beside the agent picker). */
  constructor(container) {
    this.models = [];
    /** The model the user picked last (AGENT_DEFAULT: none), what a new chat offers. */
    this.preferred = AGENT_DEFAULT;
    /** The agent kind picked beside, whose own model the first option names. */
    this.kind = null;
    this.select = h('select', { id: 'model' }, new Option('Agent default', AGENT_DEFAULT));
    this.el = h(
      'span',
      { class: 'model-picker', hidden: true },
      h('label', { for: 'model' }, 'Model'),
      this.select,
    );
    this.select.addEventListener('change', () => this.prefer(this.select.value));
    container.append(this.el);
  }

  /** Offer the server's models, the user's own first; on any failure (or a single model)
   * the picker stays hidden. */
  async load() {
    let models;
    try {
      models = await getJson('/agent/models');
    } catch {
      return;
    }
    // An older server keeps no preferences: the page's choice stands until it is left.
    const preferences = await getJson('/account/preferences').catch(() => null);
    this.models = Array.isArray(models) ? models : [];
    const picked = this.select.value;
    this.select.replaceChildren(
      new Option('Agent default', AGENT_DEFAULT),
      ...this.models.map((m) => new Option(m.vision ? `${m.label} (images)` : m.label, m.id)),
    );
    const preferred = preferences?.model ?? AGENT_DEFAULT;
    this.preferred = this.known(preferred) ? preferred : AGENT_DEFAULT;
    this.select.value = this.known(picked) && picked ? picked : this.preferred;
    this.forAgent(this.kind);
    this.el.hidden = this.models.length < 2;
  }

  /** Name, in the first option, the model agent `kind` takes when none is picked. */
  forAgent(kind) {
    this.kind = kind;
    const own = this.agentDefault();
    this.select.options[0].textContent = own ? `Agent default (${own.label})` : 'Agent default';
  }

  /** The catalog's model agent `this.kind` takes of itself (`AGENT_MODELS`, else `default`). */
  agentDefault() {
    const kind = this.kind;
    const own = this.models.find((m) => (m.defaultFor ?? []).includes(kind));
    return own ?? this.models.find((m) => m.default);
  }

  /** Show the model a conversation's next turn takes: the one its last turn used (of its
   * `messages`, `/session/{id}`'s), or, in a new chat (none), `planned` (its project's
   * default model) or the user's own. */
  show(messages, planned = null) {
    const used = messages.findLast((message) => message.model)?.model ?? planned;
    this.select.value = used && this.known(used) ? used : this.preferred;
  }

  /** Keep what the user picked, for every device they use; a failure costs only that. */
  prefer(modelId) {
    this.preferred = modelId;
    sendJson('PATCH', '/account/preferences', { model: modelId || null }).catch(() => {});
  }

  /** Whether the model a turn would use now reads images (the picked one, else the agent's). */
  seesImages() {
    const id = this.select.value;
    const model = id ? this.models.find((m) => m.id === id) : this.agentDefault();
    return Boolean(model?.vision);
  }

  /** Add the picked model to a stream's `params`. */
  choose(params) {
    const modelId = this.select.value;
    if (modelId) params.set('model', modelId);
  }

  /** Under a live answer: its model and cost, once `complete` says them. */
  annotate(turnEl, event) {
    if (event.type === 'complete' && event.usage?.model) {
      this.label(turnEl, event.usage.model, event.usage.costUsd);
    }
  }

  /** Under a stored answer (`/session/{id}`'s message). */
  annotateStored(turnEl, message) {
    if (message.model) this.label(turnEl, message.model, message.costUsd);
  }

  /** A model's name as the picker shows it; its id when the catalog does not list it. */
  nameOf(modelId) {
    return this.models.find((m) => m.id === modelId)?.label ?? modelId;
  }

  label(turnEl, modelId, cost) {
    const name = this.nameOf(modelId);
    const text = Number.isFinite(cost) ? `${name} · ${dollars(cost)}` : name;
    let line = turnEl.querySelector('.turn-model');
    if (!line) {
      line = h('p', { class: 'turn-model' });
      (turnEl.querySelector('.reply') ?? turnEl).append(line);
    }
    line.textContent = text;
    line.dataset.model = modelId;
  }

  known(modelId) {
    return modelId === AGENT_DEFAULT || this.models.some((m) => m.id === modelId);
  }
}
