import { DefaultChatTransport } from "ai";

/**
 * A DefaultChatTransport whose responses survive a cut connection. When a response ends
 * without its `finish` part (the instance serving it drained or died, a proxy dropped
 * it), the transport reconnects with `reconnectToStream` and `Last-Event-ID`, on any
 * instance, and goes on with the parts that follow: useChat sees one unbroken response,
 * with nothing missing and nothing twice. A stop (`useChat`'s `stop()`) is not resumed.
 */
export class ResumingChatTransport extends DefaultChatTransport {
  constructor({ retryDelaysMs = [250, 1000, 2000, 4000, 8000], ...options } = {}) {
    super(options);
    this.retryDelaysMs = retryDelaysMs;
  }

  async sendMessages(options) {
    return this.#resuming(await super.sendMessages(options), options);
  }

  async reconnectToStream(options) {
    const parts = await super.reconnectToStream(options);
    return parts && this.#resuming(parts, options);
  }

  processResponseStream(body) {
    const seen = {};
    const parts = super.processResponseStream(wholeEvents(body, seen));
    lastEventIds.set(parts, seen);
    return parts;
  }

  #resuming(first, { chatId, abortSignal }) {
    let reader = first.getReader();
    let seen = lastEventIds.get(first);
    let lastEventId = "0";
    let finished = false;
    return new ReadableStream({
      pull: async (controller) => {
        for (;;) {
          const { done, value } = await reader.read();
          if (!done) {
            finished ||= value.type === "finish";
            controller.enqueue(value);
            return;
          }
          lastEventId = seen.lastEventId ?? lastEventId;
          const next = finished ? null : await this.#reconnect(chatId, lastEventId, abortSignal);
          if (next === null) {
            controller.close();
            return;
          }
          reader = next.getReader();
          seen = lastEventIds.get(next);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
  }

  /** The parts after `lastEventId`; null when the turn is no longer kept (204). */
  async #reconnect(chatId, lastEventId, abortSignal) {
    let failure;
    for (const delay of this.retryDelaysMs) {
      await sleep(delay, abortSignal);
      try {
        return await super.reconnectToStream({
          chatId,
          abortSignal,
          headers: { "Last-Event-ID": lastEventId },
        });
      } catch (error) {
        // Unreachable, or refused for now (a 5xx): try again; a 4xx will not change.
        if (abortSignal?.aborted || error?.statusCode < 500) throw error;
        failure = error;
      }
    }
    throw failure;
  }
}

const lastEventIds = new WeakMap();

/**
 * The response body in whole SSE events, noting the last `id:` in `seen`. A broken
 * connection ends it as a closed one does (a half-received event is dropped), so every
 * part read before the cut reaches the chat; only an abort is an error.
 */
function wholeEvents(body, seen) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  return new ReadableStream({
    async pull(controller) {
      for (;;) {
        let read;
        try {
          read = await reader.read();
        } catch (error) {
          if (error?.name === "AbortError") throw error;
          read = { done: true };
        }
        if (read.done) {
          controller.close();
          return;
        }
        buffer += decoder.decode(read.value, { stream: true });
        const end = buffer.lastIndexOf("\n\n") + 2;
        if (end > 1) {
          const events = buffer.slice(0, end);
          buffer = buffer.slice(end);
          for (const [, id] of events.matchAll(/^id: ?(\d+)$/gm)) seen.lastEventId = id;
          controller.enqueue(encoder.encode(events));
          return;
        }
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
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
