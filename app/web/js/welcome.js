// The first screen of a conversation: what the picked agent does, in a sentence, and
// two or three things to ask it (from `/agent/kinds`), each a button that puts the
// example in the question box. The box's placeholder says what to type for that agent.
// The PowerPoint agent adds one of the page's own: a deck on your template, which asks
// for the .pptx as it fills the box (the server's examples need no file).

import { h } from './dom.js';

const PLACEHOLDERS = {
  chat: 'Ask anything: the agent searches the web and cites its sources…',
  file: 'Ask about the attached file…',
  pptx: 'Describe the deck: its topic, audience and number of slides…',
  deep: 'What should it research? It plans, searches and writes a cited report…',
  skills: 'Say what to make or work out: a document, a table, a chart…',
  host: 'Ask one of the remote agents…',
};
const DEFAULT_PLACEHOLDER = 'Ask a question…';
/** What each agent does, told to a person (the server's `description` is written for
 * other agents, and stands in for a kind this page does not know). */
const INTROS = {
  chat: 'Searches the web and answers with current facts, citing its sources.',
  file: 'Answers questions about a document you attach, pointing to the passages it used.',
  pptx:
    'Builds a PowerPoint deck on a topic, in its own designs or on your template (attach a' +
    ' .pptx): you see the slides, then download it.',
  deep:
    'Researches in depth: plans, searches in parallel, checks itself and writes a cited' +
    ' report. It may ask you a question first.',
  skills: 'Makes and works on files (documents, tables, charts, scripts) in its own workspace.',
  host: 'Hands your question to the remote agents this service knows.',
};

/** Examples that go with a file the reader attaches: picking one asks for it. */
const WITH_FILE = {
  pptx: {
    text: 'A 6-slide quarterly update for the board, on my own template.',
    title: 'Puts this in the box and asks for your template (.pptx)',
  },
};

/** Draw the welcome for the picked `option` of the agent picker; `onPick(text, attach)`
 * fills the box, and with `attach` asks for the file the example goes with. */
export function showWelcome({ text, examples, question }, option, onPick) {
  const data = option?.dataset ?? {};
  question.placeholder = PLACEHOLDERS[option?.value] ?? DEFAULT_PLACEHOLDER;
  text.textContent =
    INTROS[option?.value] || data.description || 'The agent searches, reasons and answers live.';
  let asks = [];
  try {
    asks = JSON.parse(data.examples || '[]');
  } catch {
    asks = [];
  }
  const buttons = asks.map((example) =>
    h('button', { type: 'button', class: 'example', onclick: () => onPick(example) }, example),
  );
  const withFile = WITH_FILE[option?.value];
  if (withFile) {
    const { text: example, title } = withFile;
    const attributes = { type: 'button', class: 'example', title };
    buttons.push(h('button', { ...attributes, onclick: () => onPick(example, true) }, example));
  }
  examples.replaceChildren(...buttons);
  examples.hidden = buttons.length === 0;
}
