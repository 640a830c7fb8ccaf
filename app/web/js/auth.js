// Signing in with the service's OpenID Connect provider, when it has one (`GET /auth/config`,
// which also names the provider's endpoints, read by the service from its discovery document):
// the authorization-code flow with PKCE (RFC 7636, S256) for a public client, so the page
// holds no secret. The tokens live in this tab's sessionStorage (they survive the redirect
// and a reload, not the tab); the access token is refreshed before it expires, and signing
// out forgets them and ends the provider's session too, where it offers that.
//
// api.js asks `accessToken()` for the bearer to send; without OIDC this module does nothing
// and the page keeps its API key.

import { h } from './dom.js';

const TOKENS = 'dodo-agent.oidc.tokens';
const PENDING = 'dodo-agent.oidc.pending';
/** A token is refreshed this long before it expires; one living less than twice this, at
 * half its life. */
const REFRESH_AHEAD_MS = 60_000;

let config = null;
let refreshTimer = null;

function load(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? 'null');
  } catch {
    return null;
  }
}

function keep(key, value) {
  if (value) sessionStorage.setItem(key, JSON.stringify(value));
  else sessionStorage.removeItem(key);
}

/** The access token to send, or '' when no one signed in here. */
export function accessToken() {
  const tokens = load(TOKENS);
  return tokens && tokens.expiresAt > Date.now() ? tokens.accessToken : '';
}

export function base64url(bytes) {
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomText(length = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(length)));
}

/** The PKCE pair: a random verifier, and its SHA-256 as the challenge. */
export async function pkcePair() {
  const verifier = randomText(32);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return { verifier, challenge: base64url(new Uint8Array(digest)) };
}

function redirectUri() {
  return location.origin + location.pathname;
}

/** Go to the provider's sign-in; it comes back to this page with a code. */
export async function signIn() {
  const { verifier, challenge } = await pkcePair();
  const state = randomText(16);
  const nonce = randomText(16);
  keep(PENDING, { state, verifier, nonce, hash: location.hash });
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scopes,
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  location.assign(`${config.authorizationEndpoint}?${query}`);
}

/** Forget the tokens here, and end the provider's session where it offers that. */
export async function signOut() {
  const tokens = load(TOKENS);
  keep(TOKENS, null);
  clearTimeout(refreshTimer);
  if (config.endSessionEndpoint) {
    const query = new URLSearchParams({
      client_id: config.clientId,
      post_logout_redirect_uri: redirectUri(),
    });
    if (tokens?.idToken) query.set('id_token_hint', tokens.idToken);
    location.assign(`${config.endSessionEndpoint}?${query}`);
  } else {
    location.reload();
  }
}

async function tokenRequest(fields) {
  const response = await fetch(config.tokenEndpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: config.clientId, ...fields }),
  });
  if (!response.ok) throw new Error('The sign-in service refused the request.');
  const body = await response.json();
  const previous = load(TOKENS);
  const tokens = {
    accessToken: body.access_token,
    // A refresh answer may leave out what did not change.
    refreshToken: body.refresh_token ?? previous?.refreshToken ?? null,
    idToken: body.id_token ?? previous?.idToken ?? null,
    expiresAt: Date.now() + Number(body.expires_in ?? 300) * 1000,
  };
  keep(TOKENS, tokens);
  scheduleRefresh(tokens);
  return tokens;
}

function scheduleRefresh(tokens) {
  clearTimeout(refreshTimer);
  if (!tokens?.refreshToken) return;
  const left = tokens.expiresAt - Date.now();
  const wait = Math.max(0, left > 2 * REFRESH_AHEAD_MS ? left - REFRESH_AHEAD_MS : left / 2);
  refreshTimer = setTimeout(refresh, wait);
}

async function refresh() {
  const tokens = load(TOKENS);
  if (!tokens?.refreshToken) return;
  try {
    await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refreshToken });
  } catch {
    keep(TOKENS, null);
    showButton();
  }
}

/** Back from the provider with `?code=&state=`: trade the code for tokens. */
async function finishSignIn(params) {
  const pending = load(PENDING);
  keep(PENDING, null);
  history.replaceState(null, '', redirectUri() + (pending?.hash ?? ''));
  if (params.get('error')) throw new Error(`Sign-in failed: ${params.get('error')}.`);
  if (!pending || params.get('state') !== pending.state) {
    throw new Error('Sign-in failed: the answer does not match the request. Try again.');
  }
  await tokenRequest({
    grant_type: 'authorization_code',
    code: params.get('code'),
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  });
}

let button = null;

async function showButton() {
  button ??= h('button', { type: 'button', id: 'sign-in', class: 'button' });
  const signedIn = Boolean(accessToken());
  // Sign in stands in the header, where it is seen at once; Sign out goes with the account
  // items, in their menu on a phone (header-menu.js).
  const place = signedIn ? document.getElementById('header-menu') : document.querySelector('.topbar');
  place?.append(button);
  button.textContent = signedIn ? 'Sign out' : 'Sign in';
  button.onclick = () => (signedIn ? signOut() : signIn());
  if (!signedIn) return;
  const me = await fetch('/auth/me', { headers: { Authorization: `Bearer ${accessToken()}` } });
  if (me.ok) {
    const { data } = await me.json();
    button.title = `Signed in as ${data.userId}`;
    button.dataset.user = data.userId;
  }
}

/**
 * Set sign-in up before the page loads anything: read whether the service signs users in,
 * finish a sign-in coming back from the provider, keep the token fresh, show the button.
 * Resolves to whether the page should ask the user to sign in first.
 */
export async function startSignIn() {
  try {
    const response = await fetch('/auth/config');
    config = response.ok ? (await response.json()).data?.oidc ?? null : null;
  } catch {
    config = null;
  }
  if (!config) return false;
  const params = new URLSearchParams(location.search);
  let failure = null;
  if (params.has('state') && (params.has('code') || params.has('error'))) {
    try {
      await finishSignIn(params);
    } catch (error) {
      failure = error;
    }
  } else {
    const tokens = load(TOKENS);
    if (tokens && tokens.expiresAt <= Date.now() + 5_000) await refresh();
    else scheduleRefresh(tokens);
  }
  await showButton();
  if (failure) throw failure;
  return !accessToken();
}
