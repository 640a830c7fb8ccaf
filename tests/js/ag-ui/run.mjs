// Drive @ag-ui/client's HttpAgent against the service, as a front-end would, and print
// what it saw as JSON lines for tests/integration/test_ag_ui.py:
//   {"event": ...}                        every AG-UI event, as the client received it
//   {"finished": {outcome, interrupts}}   how the client read the run's end
//   {"result": ..., "messages", "state"}  once per run, when runAgent resolves
//   {"error": "..."}                      when a run rejects (the client's own checks included)
//   {"reconnect": "<id>"}                 a request sent again with that Last-Event-ID
//
// node run.mjs <url> '<spec>', spec = {threadId, headers?, resuming?, runs: [run, ...]}; each
// run is {message: "text"} (a new user message) or {answer: "text"} (a resume entry
// answering every interrupt the previous run ended with), plus an optional forwardedProps.
// With `resuming`, the agent is the ResumingHttpAgent of docs/integrate/ag-ui.md.
import { HttpAgent } from "@ag-ui/client";
import { ResumingHttpAgent } from "./resuming-agent.mjs";

const [url, raw] = process.argv.slice(2);
const spec = JSON.parse(raw);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const Agent = spec.resuming ? ResumingHttpAgent : HttpAgent;
const agent = new Agent({
  url,
  threadId: spec.threadId,
  headers: spec.headers ?? {},
  fetch: (url, init) => {
    const after = new Headers(init?.headers).get("Last-Event-ID");
    if (after !== null) print({ reconnect: after });
    return fetch(url, init);
  },
});

for (const [index, run] of spec.runs.entries()) {
  const parameters = { runId: `run-${index + 1}`, forwardedProps: run.forwardedProps ?? {} };
  if (run.message !== undefined) {
    agent.addMessage({ id: `user-${index + 1}`, role: "user", content: run.message });
  } else {
    parameters.resume = agent.pendingInterrupts.map((interrupt) => ({
      interruptId: interrupt.id,
      status: "resolved",
      payload: run.answer,
    }));
  }
  try {
    const result = await agent.runAgent(parameters, {
      onEvent: ({ event }) => print({ event }),
      onRunFinishedEvent: ({ outcome, interrupts }) => print({ finished: { outcome, interrupts } }),
    });
    print({ result, messages: agent.messages, state: agent.state });
  } catch (error) {
    print({ error: String(error?.message ?? error) });
    process.exitCode = 1;
    break;
  }
}
