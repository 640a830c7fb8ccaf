// The AI SDK's own chat class (what useChat wraps) with its state in plain fields, for the
// scripts here that drive a chat as a page does.
import { AbstractChat } from "ai";

/** The chat's state in plain fields: what a framework binding keeps reactive. */
class State {
  status = "ready";
  error = undefined;
  messages = [];
  constructor(onChange) {
    this.onChange = onChange;
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
    this.onChange?.(this.messages);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
    this.onChange?.(this.messages);
  };
  snapshot = (thing) => structuredClone(thing);
}

/** A chat; `onChange(messages)` is called each time a message is added or grows. */
export class Chat extends AbstractChat {
  constructor({ onChange, ...init }) {
    super({ ...init, state: new State(onChange) });
  }
}
