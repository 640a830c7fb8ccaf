// Answer a tool approval the way a useChat page does, with the AI SDK's own chat class:
// send the question, find the tool part waiting in `approval-requested`, answer it with
// `addToolApprovalResponse`, and let `sendAutomaticallyWhen` send the chat back. Prints JSON
// lines for tests/integration/test_tool_approval_clients.py:
//   {"asked": <the tool part>}      the part that waits for the user's yes
//   {"messages": [...]}             the chat once the answer's turn has ended
//   {"error": "..."}                the chat failed
//
// node approve.mjs <api> '<spec>', spec = {chatId, text, approved, reason?, body?}.
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { Chat } from "./chat.mjs";

const [api, raw] = process.argv.slice(2);
const spec = JSON.parse(raw);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const chat = new Chat({
  id: spec.chatId,
  transport: new DefaultChatTransport({ api, body: spec.body ?? {} }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (error) => print({ error: String(error?.message ?? error) }),
});

try {
  await chat.sendMessage({ text: spec.text });
  const waiting = chat.lastMessage?.parts.find((p) => p.state === "approval-requested");
  print({ asked: waiting ?? null });
  if (waiting) {
    await chat.addToolApprovalResponse({
      id: waiting.approval.id,
      approved: spec.approved,
      reason: spec.reason,
    });
    // The automatic send runs in the background: wait until the chat is ready again.
    while (chat.status !== "ready" && chat.status !== "error") {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  print({ messages: chat.messages });
} catch (error) {
  print({ error: String(error?.message ?? error) });
  process.exitCode = 1;
}
