// What the page tells the reader above the conversation: a notice (a failure, or news)
// and the API key box, which a refused key or a missing one opens.

import { ApiError, apiKey, saveApiKey } from './api.js';

const $ = (id) => document.getElementById(id);

/** A notice above the conversation: a failure (`error`), or news (`info`). */
export function showNotice(message, kind = 'error') {
  $('notice-text').textContent = message;
  $('notice').dataset.kind = kind;
  $('notice').hidden = false;
}

export function clearNotice() {
  $('notice').hidden = true;
}

/** Ask for the key, saying why; a box already open keeps what is being typed in it (the
 * page's first requests, sent with no key, are refused one by one as it is typed). */
export function showAuth(message) {
  $('auth-message').textContent = message;
  $('key-button').hidden = false;
  if (!$('auth').hidden) return;
  $('auth').hidden = false;
  $('api-key').value = apiKey();
  $('api-key').focus();
}

/** A failure as the reader acts on it: a refused key asks for one, the rest is a notice. */
export function showError(error) {
  if (error.name === 'AbortError') return;
  if (error instanceof ApiError && error.status === 401) showAuth(error.message);
  else showNotice(error.message || String(error));
}

/** The notice's close button and the key box's: the header's API key opens or closes it,
 * Save keeps the key and calls `onSaved`, Forget drops it and calls `onForgotten` (the
 * page, nobody's now, lets go of what it showed). */
export function listenToNotices({ onSaved, onForgotten }) {
  $('notice-close').addEventListener('click', clearNotice);
  $('key-button').addEventListener('click', () => {
    if ($('auth').hidden) {
      showAuth(apiKey() ? 'Change or forget the API key.' : 'Enter an API key.');
    } else {
      $('auth').hidden = true;
    }
  });
  $('auth-form').addEventListener('submit', (event) => {
    event.preventDefault();
    saveApiKey($('api-key').value.trim());
    $('auth').hidden = true;
    clearNotice();
    onSaved();
  });
  $('forget-key').addEventListener('click', () => {
    saveApiKey('');
    $('api-key').value = '';
    onForgotten();
    showAuth('The key is forgotten. Enter one to go on.');
  });
}
