// Your account: what your turns spent over a period (in all, by agent, by model), and,
// where the server signs people in, your own API keys: made here (the key is shown once,
// with a copy button), listed by their first characters, and revoked (pressed twice).
// A key signs a script or an MCP client in as you.

import { getJson, sendJson } from './api.js';
import { copyButton } from './clipboard.js';
import { h, pressTwice } from './dom.js';
import {
  DAY_MS,
  Screen,
  cells,
  fillPeriods,
  periodQuery,
  showRows,
  spendCells,
} from './screen.js';

function when(time) {
  return time ? new Date(time).toLocaleString() : '—';
}

export class AccountScreen extends Screen {
  /**
   * As a `Screen`; `onError(error)` shows a failure the way the page shows any other,
   * `agentName(kind)` names an agent as the agent picker does, `modelName(id)` a model.
   */
  constructor({ button, panel, chat, onError, agentName, modelName }) {
    super({ button, panel, chat });
    this.onError = onError;
    this.agentName = agentName;
    this.modelName = modelName;
    const $ = (id) => panel.querySelector(`#${id}`);
    this.user = $('account-user');
    this.period = $('account-period');
    fillPeriods(this.period);
    this.usage = $('account-usage');
    this.keysSection = $('account-keys-section');
    this.keys = $('account-keys');
    this.newKey = $('account-new-key');
    this.keyName = $('account-key-name');
    this.keyExpiry = $('account-key-expiry');
    this.madeKey = $('account-made-key');
    this.keyText = $('account-key-text');
    this.madeKey.append(
      copyButton(
        { className: 'copy-key', name: 'Copy the new key' },
        () => this.keyText.textContent,
      ),
    );
    $('account-mcp-url').textContent = `${location.origin}/mcp`;

    $('account-close').addEventListener('click', () => this.close());
    this.period.addEventListener('change', () => this.showUsage().catch(onError));
    this.newKey.addEventListener('submit', (event) => {
      event.preventDefault();
      this.makeKey().catch(onError);
    });
  }

  /** Who the caller is (`/auth/me`, or null) and whether anyone signs in at all (keys are
   * only for a server that signs people in: with no sign-in everyone is one local user). */
  load(me, signsIn) {
    this.button.hidden = me === null;
    this.user.textContent = me && signsIn ? `Signed in as ${me.userId}.` : '';
    this.keysSection.hidden = !signsIn;
    if (this.button.hidden) this.close();
  }

  opened() {
    this.madeKey.hidden = true;
    this.keyText.textContent = '';
    const reads = [this.showUsage()];
    if (!this.keysSection.hidden) reads.push(this.showKeys());
    Promise.all(reads).catch(this.onError);
  }

  closed() {
    // The key is shown once: not again when the screen is opened again.
    this.madeKey.hidden = true;
    this.keyText.textContent = '';
  }

  async showUsage() {
    const usage = await getJson(`/usage?${periodQuery(this.period.value)}`);
    const rows = [
      ['All turns', usage.total],
      ...Object.entries(usage.byKind).map(([kind, s]) => [`Agent · ${this.agentName(kind)}`, s]),
      ...Object.entries(usage.byModel).map(([model, s]) => [`Model · ${this.modelName(model)}`, s]),
    ];
    showRows(
      this.usage,
      (usage.total.turns > 0 ? rows : []).map(([label, spend]) =>
        h('tr', {}, h('th', { scope: 'row' }, label), ...spendCells(spend)),
      ),
    );
  }

  async showKeys() {
    const keys = await getJson('/auth/keys');
    showRows(
      this.keys,
      keys.map((key) => {
        const label = key.name ?? `${key.prefix}…`;
        const revoke = pressTwice(
          { class: 'button danger', 'aria-label': `Revoke ${label}` },
          'Revoke',
          'Revoke it?',
          () => this.revoke(key.id).catch(this.onError),
        );
        const row = h('tr', { 'data-key': key.id });
        row.append(
          ...cells(
            key.name ?? '—',
            h('code', {}, `${key.prefix}…`),
            when(key.createdAt),
            key.expiresAt ? when(key.expiresAt) : 'Never',
            when(key.lastUsedAt),
            revoke,
          ),
        );
        return row;
      }),
    );
  }

  async makeKey() {
    const body = { name: this.keyName.value.trim() || null };
    if (this.keyExpiry.value) {
      body.expiresAt = new Date(Date.now() + Number(this.keyExpiry.value) * DAY_MS).toISOString();
    }
    const made = await sendJson('POST', '/auth/keys', body);
    this.keyName.value = '';
    this.keyText.textContent = made.key;
    this.madeKey.hidden = false;
    await this.showKeys();
  }

  async revoke(keyId) {
    await getJson(`/auth/keys/${encodeURIComponent(keyId)}`, { method: 'DELETE' });
    await this.showKeys();
  }
}
