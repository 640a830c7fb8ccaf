// Ask a question the way a useChat page does, with the AI SDK's own chat class on the
// ResumingChatTransport of docs/integrate/ai-sdk.md, and print JSON lines for
// tests/integration/test_clients_resume.py:
//   {"text": "..."}                the answer so far, each time it grows
//   {"reconnect": "<id>"}          the transport reconnected, with that Last-Event-ID
//   {"message": ..., "status"}     the assistant message and the chat's status at the end
//   {"error": "..."}               the chat failed
//
// node resuming.mjs <api> '<spec>', spec = {chatId, text}.
import { Chat } from "./chat.mjs";
import { ResumingChatTransport } from "./resuming-transport.mjs";

const [api, raw] = process.argv.slice(2);
const spec = JSON.parse(raw);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const textOf = (message) =>
  message.parts
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("");

let shown = "";
const chat = new Chat({
  id: spec.chatId,
  transport: new ResumingChatTransport({
    api,
    fetch: (url, init) => {
      const after = new Headers(init?.headers).get("Last-Event-ID");
      if (after !== null) print({ reconnect: after });
      return fetch(url, init);
    },
  }),
  onChange: (messages) => {
    const last = messages.at(-1);
    const text = last?.role === "assistant" ? textOf(last) : "";
    if (text.length > shown.length) print({ text: (shown = text) });
  },
  onError: (error) => print({ error: String(error?.message ?? error) }),
});

try {
  await chat.sendMessage({ text: spec.text });
  print({ message: chat.lastMessage, status: chat.status });
} catch (error) {
  print({ error: String(error?.message ?? error) });
  process.exitCode = 1;
}
