// Building elements without innerHTML: text from the server is always set as text,
// so only the Markdown renderer (which sanitises) ever turns a string into markup.

/** `h('a', {href, class: 'x'}, 'text', child)`: attributes, then text or nodes. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

/**
 * A button for what cannot be undone: the first press only asks (its text becomes `ask`),
 * the second calls `act`; leaving the button (blur) forgets the first press. A name given
 * in `aria-label` is kept, after the question, so it always holds what the button shows.
 */
export function pressTwice(attributes, label, ask, act) {
  const button = h('button', { type: 'button', ...attributes }, label);
  const name = attributes['aria-label'];
  const show = (text, accessibleName) => {
    button.textContent = text;
    if (name) button.setAttribute('aria-label', accessibleName);
  };
  button.addEventListener('blur', () => {
    delete button.dataset.armed;
    show(label, name);
  });
  button.addEventListener('click', () => {
    if (button.dataset.armed) {
      act();
      return;
    }
    button.dataset.armed = 'true';
    show(ask, `${ask} ${name}`);
  });
  return button;
}

/** A JSON array that may arrive as an array or as a JSON string of one. */
export function jsonList(value) {
  if (Array.isArray(value)) return value;
  if (typeof value !== 'string' || value === '') return [];
  try {
    const parsed = JSON.parse(value);
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}
