// Following an agent run's event stream, across dropped connections.
//
// The stream is read with fetch rather than EventSource so that the API key travels
// in a header, never in a URL that ends up in access logs. The run lives on the
// server whatever happens to this connection, so when the connection drops the page
// asks /agent/resume for the events after the last id it saw: nothing is lost and
// nothing is shown twice. When the run can no longer be followed (it finished long
// ago, or the server has no resume endpoint) the caller reads the stored turn instead.
//
// Behind a load balancer the instance serving a stream may go away mid-turn (a deploy)
// or die: its stream ends without `complete`, the turn goes on at another instance, and
// the resume reaches it there. A new turn sent to an instance that is going away is
// refused with 503 `DRAINING` before anything is stored: it is sent again, and the load
// balancer picks another instance.

import { ApiError, send } from './api.js';

const RESUME_DELAYS_MS = [250, 1000, 2000, 4000, 8000];
const DRAINING_DELAYS_MS = [250, 500, 1000, 2000];

/** Parse one SSE frame (the text between blank lines): its id and joined data lines. */
function parseFrame(text) {
  let id = null;
  const data = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id' && /^\d+$/.test(value)) id = Number(value);
    else if (field === 'data') data.push(value);
  }
  return { id, data: data.length ? data.join('\n') : null };
}

/** The frames of a response body; a connection that breaks simply ends them. */
async function* frames(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (signal?.aborted) throw error;
        return;
      }
      if (chunk.done) return;
      buffer += chunk.value.replaceAll('\r\n', '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (frame.id !== null || frame.data !== null) yield frame;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** `open()`, sent again while an instance going away refuses it (503 `DRAINING`). */
async function opened(open, signal) {
  for (const delay of DRAINING_DELAYS_MS) {
    try {
      return await open();
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== 'DRAINING') throw error;
      await sleep(delay, signal);
    }
  }
  return open();
}

/** Ask for a run's events after `lastId`: 0 rejoins a run from its start (say, after a reload). */
export function resumeRequest(conversationId, lastId, signal) {
  const query = new URLSearchParams({ conversationId });
  return send(`/agent/resume?${query}`, {
    headers: { Accept: 'text/event-stream', 'Last-Event-ID': String(lastId) },
    signal,
  });
}

/**
 * Read a run's events until `complete`, resuming after drops.
 *
 * `open()` makes the first request (it may throw ApiError before the stream begins).
 * Returns the `complete` event, or null when the run can no longer be followed.
 */
export async function followRun({ open, conversationId, onEvent, onReconnect, signal }) {
  let response = await opened(open, signal);
  let lastId = 0;
  let failures = 0;
  for (;;) {
    for await (const frame of frames(response.body, signal)) {
      if (frame.id !== null) lastId = frame.id;
      if (frame.data === null) continue;
      failures = 0;
      const event = JSON.parse(frame.data);
      onEvent(event);
      if (event.type === 'complete') return event;
    }
    response = null;
    while (response === null) {
      if (failures >= RESUME_DELAYS_MS.length) {
        throw new ApiError(0, 'The connection to the server was lost.');
      }
      onReconnect?.();
      await sleep(RESUME_DELAYS_MS[failures], signal);
      failures += 1;
      try {
        response = await resumeRequest(conversationId, lastId, signal);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.status === 404 || error.status === 405) return null;
        if (error.status !== 0 && error.status < 500) throw error;
      }
    }
  }
}
