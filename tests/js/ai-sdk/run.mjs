// Drive the AI SDK's DefaultChatTransport (what useChat uses) against the service, and
// read its chunks with readUIMessageStream (what useChat builds its message with). Prints
// JSON lines for tests/integration/test_ai_sdk.py:
//   {"chunk": ...}     every UI message stream chunk, as the transport parsed it
//   {"message": ...}   the assistant message the reader built, once the stream ends
//   {"cut": true}      the connection was cut on purpose (spec.cutAfter)
//   {"resumed": null}  reconnecting found nothing running (204)
//   {"error": "..."}   the transport or the reader failed
//
// node run.mjs <api> '<spec>', spec = {chatId, text?, body?, cutAfter?, resume?}: send the
// text as a user message (cutting the connection after the first chunk of type cutAfter,
// then reconnecting as useChat({resume: true}) does); with resume alone, only reconnect.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [api, raw] = process.argv.slice(2);
const spec = JSON.parse(raw);
const transport = new DefaultChatTransport({ api, body: spec.body ?? {} });
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

async function read(stream, cut) {
  const printed = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        print({ chunk });
        controller.enqueue(chunk);
        if (cut && chunk.type === spec.cutAfter) cut.abort();
      },
    }),
  );
  let message;
  for await (const snapshot of readUIMessageStream({
    stream: printed,
    terminateOnError: true,
  })) {
    message = snapshot;
  }
  print({ message });
}

try {
  if (spec.text !== undefined) {
    const cut = spec.cutAfter ? new AbortController() : undefined;
    const stream = await transport.sendMessages({
      chatId: spec.chatId,
      messages: [{ id: "user-1", role: "user", parts: [{ type: "text", text: spec.text }] }],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: cut?.signal,
    });
    try {
      await read(stream, cut);
    } catch (error) {
      if (!cut?.signal.aborted) throw error;
      print({ cut: true });
    }
  }
  if (spec.text === undefined || spec.cutAfter) {
    const resumed = await transport.reconnectToStream({ chatId: spec.chatId });
    if (resumed === null) print({ resumed: null });
    else await read(resumed);
  }
} catch (error) {
  print({ error: String(error?.message ?? error) });
  process.exitCode = 1;
}
