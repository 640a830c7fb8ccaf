// The service's HTTP surface as the page uses it: one place that adds the credential
// (the signed-in user's access token, auth.js, else the API key),
// reads the {code, message, data} envelope, and turns every failure into an ApiError
// whose message a person can act on. The page is served by the service itself, so
// every path is relative to this origin and needs no configuration.

import { accessToken } from './auth.js';

const KEY_STORAGE = 'dodo-agent.apiKey';

export class ApiError extends Error {
  /**
   * `status` is the HTTP status, or 0 when the server could not be reached; `code` the
   * machine-readable reason the envelope gives (`data.error`: `DRAINING`, ...), if any.
   */
  constructor(status, message, code = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) ?? '';
}

/** Aborts what was asked with the key in use when it changes: those answers are moot, and
 * a 401 to a request sent with no key, arriving once one is saved, would ask for it again. */
let keyInUse = new AbortController();

export function saveApiKey(value) {
  if (value) localStorage.setItem(KEY_STORAGE, value);
  else localStorage.removeItem(KEY_STORAGE);
  keyInUse.abort();
  keyInUse = new AbortController();
}

function withKey(headers = {}) {
  const key = accessToken() || apiKey();
  return key ? { ...headers, Authorization: `Bearer ${key}` } : { ...headers };
}

/** fetch() with the key; resolves only to a 2xx response, else throws ApiError. */
export async function send(path, init = {}) {
  let response;
  try {
    const signal = init.signal
      ? AbortSignal.any([init.signal, keyInUse.signal])
      : keyInUse.signal;
    response = await fetch(path, { ...init, headers: withKey(init.headers), signal });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, 'The server cannot be reached. Check the connection and try again.');
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

/** The `data` of an enveloped answer, or the whole body of one that is not enveloped. */
export async function getJson(path, init) {
  const body = await (await send(path, init)).json();
  return body !== null && typeof body === 'object' && 'code' in body && 'data' in body
    ? body.data
    : body;
}

/** The `data` of a `method` request (POST, PUT, PATCH) whose body is `body` as JSON. */
export function sendJson(method, path, body) {
  return getJson(path, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const FALLBACK = {
  401: 'This server needs an API key.',
  404: 'Not found.',
  409: 'This conversation is still answering: wait for it or stop it.',
  413: 'That is too large for this server.',
  501: 'This is not available on this server.',
  503: 'The service is unavailable right now. Try again in a moment.',
};

function parsed(text) {
  try {
    const body = JSON.parse(text);
    return body !== null && typeof body === 'object' ? body : null;
  } catch {
    return null; // Not JSON (a proxy's error page, say): the status tells enough.
  }
}

/** The server's own message in an error body: the envelope's `message`, or FastAPI's `detail`. */
function messageIn(body) {
  if (body === null) return '';
  if (typeof body.message === 'string') return body.message;
  return typeof body.detail === 'string' ? body.detail : '';
}

async function errorOf(response) {
  // Reading the body can only fail by an abort (the reader moved on) or a dropped
  // connection; an abort must reach the caller as one, not turn into a fallback text.
  let text = '';
  try {
    text = await response.text();
  } catch (error) {
    if (error.name === 'AbortError') throw error;
  }
  const body = parsed(text);
  let message = messageIn(body);
  if (response.status === 401) {
    if (accessToken()) message = 'Your sign-in was not accepted: sign out and in again.';
    else message = apiKey() ? 'The API key was not accepted.' : FALLBACK[401];
  }
  const code = typeof body?.data?.error === 'string' ? body.data.error : null;
  return new ApiError(
    response.status,
    message || FALLBACK[response.status] || `The server answered with status ${response.status}.`,
    code,
  );
}

/** A local URL for a stored file (an image to show), fetched with the key. */
export async function objectUrl(url) {
  return URL.createObjectURL(await (await send(url)).blob());
}

/** The file name a response gives in its Content-Disposition (RFC 6266: `filename*` before
 * `filename`), or null when it gives none. */
function suggestedName(response) {
  const header = response.headers.get('Content-Disposition') ?? '';
  const encoded = /filename\*=UTF-8''([^;\s]+)/i.exec(header);
  if (encoded) {
    try {
      return decodeURIComponent(encoded[1]);
    } catch {
      // Not valid percent-encoding: the plain name, or the caller's, will do.
    }
  }
  return /filename="([^"]*)"/i.exec(header)?.[1] || null;
}

/** Save a download (a generated file, an export), sending the key, which a plain link
 * cannot; named as the server names it, else `name`. */
export async function download(url, name) {
  const response = await send(url);
  const blob = await response.blob();
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = suggestedName(response) ?? name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}
