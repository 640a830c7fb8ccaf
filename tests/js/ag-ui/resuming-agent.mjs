import { HttpAgent } from "@ag-ui/client";

/**
 * An HttpAgent whose runs survive a cut connection. When a run's stream ends without
 * RUN_FINISHED or RUN_ERROR (the instance serving it drained or died, a proxy dropped it),
 * the same request is sent again with `Last-Event-ID`, which rejoins the run after the
 * last event read, on any instance, instead of starting a turn: the agent sees one
 * unbroken stream, with nothing missing and nothing twice. An abort is not resumed.
 */
export class ResumingHttpAgent extends HttpAgent {
  constructor({ retryDelaysMs = [250, 1000, 2000, 4000, 8000], ...config }) {
    super(config);
    const fetchOnce = this.fetch;
    this.fetch = (url, init) => resumingFetch(fetchOnce, url, init, retryDelaysMs);
  }
}

async function resumingFetch(fetchOnce, url, init, retryDelaysMs) {
  const first = await fetchOnce(url, init);
  if (!first.ok || !first.body) return first;
  let reader = first.body.getReader();
  let decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  let lastEventId = "0";
  let ended = false;

  async function reconnect() {
    const headers = new Headers(init.headers);
    headers.set("Last-Event-ID", lastEventId);
    let failure;
    for (const delay of retryDelaysMs) {
      await sleep(delay, init.signal);
      try {
        const response = await fetchOnce(url, { ...init, headers });
        if (response.ok && response.body) return response;
        failure = new Error(`Cannot rejoin the run: HTTP ${response.status}`);
        if (response.status < 500) break; // a 4xx will not change
      } catch (error) {
        if (init.signal?.aborted) throw error;
        failure = error; // unreachable for now: try again
      }
    }
    throw failure;
  }

  const body = new ReadableStream({
    async pull(controller) {
      for (;;) {
        let read;
        try {
          read = await reader.read();
        } catch (error) {
          if (error?.name === "AbortError") throw error;
          read = { done: true }; // cut: as if it had ended
        }
        if (read.done) {
          if (ended) {
            controller.close();
            return;
          }
          // A half-received event is dropped: it comes again after the last whole one.
          reader = (await reconnect()).body.getReader();
          decoder = new TextDecoder();
          buffer = "";
          continue;
        }
        buffer += decoder.decode(read.value, { stream: true });
        const end = buffer.lastIndexOf("\n\n") + 2;
        if (end > 1) {
          const events = buffer.slice(0, end);
          buffer = buffer.slice(end);
          for (const line of events.split("\n")) {
            if (line.startsWith("id:")) lastEventId = line.slice(3).trim();
            else if (line.startsWith("data:")) {
              const { type } = JSON.parse(line.slice(5));
              ended ||= type === "RUN_FINISHED" || type === "RUN_ERROR";
            }
          }
          controller.enqueue(encoder.encode(events));
          return;
        }
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: first.status, headers: first.headers });
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
