// The model picker: the models this service offers (GET /agent/models) beside the
// agent picker, the choice remembered per conversation in this browser, and each
// answer's model and cost under it. A service with one model shows no picker; one
// without /agent/models (an older server) leaves the page as it was.

import { getJson } from './api.js';
import { h } from './dom.js';

const STORAGE = 'dodo-agent.models';
/** Conversations whose choice is kept: the oldest are forgotten beyond this. */
const KEPT = 200;
/** The picker's first option: no `model` sent, so the agent kind's own (AGENT_MODELS). */
const AGENT_DEFAULT = '';

function remembered() {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE) ?? '{}');
    return stored !== null && typeof stored === 'object' ? stored : {};
  } catch {
    return {};
  }
}

function remember(conversationId, modelId) {
  const stored = remembered();
  delete stored[conversationId];
  if (modelId) stored[conversationId] = modelId;
  const ids = Object.keys(stored);
  for (const old of ids.slice(0, Math.max(0, ids.length - KEPT))) delete stored[old];
  localStorage.setItem(STORAGE, JSON.stringify(stored));
}

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
    this.select = h('select', { id: 'model' }, new Option('Agent default', AGENT_DEFAULT));
    this.el = h(
      'span',
      { class: 'model-picker', hidden: true },
      h('label', { for: 'model' }, 'Model'),
      this.select,
    );
    container.append(this.el);
  }

  /** Offer the server's models; on any failure (or a single model) the picker stays hidden. */
  async load() {
    let models;
    try {
      models = await getJson('/agent/models');
    } catch {
      return;
    }
    this.models = Array.isArray(models) ? models : [];
    const picked = this.select.value;
    this.select.replaceChildren(
      new Option('Agent default', AGENT_DEFAULT),
      ...this.models.map((m) => new Option(m.vision ? `${m.label} (images)` : m.label, m.id)),
    );
    this.select.value = this.known(picked) ? picked : AGENT_DEFAULT;
    this.el.hidden = this.models.length < 2;
  }

  /** Show the choice of `conversationId` (null: a new chat keeps what is picked). */
  show(conversationId) {
    if (!conversationId) return;
    const chosen = remembered()[conversationId] ?? AGENT_DEFAULT;
    this.select.value = this.known(chosen) ? chosen : AGENT_DEFAULT;
  }

  /** Whether the model a turn would use now reads images (the picked one, else the default). */
  seesImages() {
    const id = this.select.value;
    const model = this.models.find((m) => (id ? m.id === id : m.default));
    return Boolean(model?.vision);
  }

  /** Add the picked model to a stream's `params`, and remember it for the conversation. */
  choose(conversationId, params) {
    const modelId = this.select.value;
    if (modelId) params.set('model', modelId);
    remember(conversationId, modelId);
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
