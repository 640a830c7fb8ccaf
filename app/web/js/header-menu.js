// The header's screens and account items (Schedules, Admin, Account, API key, Sign out) as
// one menu on a narrow screen, where side by side they run past its edge and the page
// scrolls sideways; on a wide one they stand in the header as ever and the menu's button is
// not shown (app.css). Sign in stays in the header, where it is seen at once (auth.js).
// A disclosure, like each conversation's menu: its button says whether it is open; Escape,
// using an item, or the keyboard or a click going elsewhere closes it.

/** Make `items` (the header's screen and account buttons) the menu `button` opens on a
 * narrow screen. */
export function headerMenu(button, items) {
  const isOpen = () => items.classList.contains('open');
  const show = (open) => {
    items.classList.toggle('open', open);
    button.setAttribute('aria-expanded', String(open));
  };
  button.addEventListener('click', () => {
    show(!isOpen());
    if (isOpen()) items.querySelector('button:not([hidden])')?.focus();
  });
  items.addEventListener('click', (event) => {
    if (event.target.closest('button')) show(false);
  });
  items.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && isOpen()) {
      event.stopPropagation();
      show(false);
      button.focus();
    }
  });
  const leave = (event) => {
    if (!button.contains(event.relatedTarget) && !items.contains(event.relatedTarget)) show(false);
  };
  button.addEventListener('focusout', leave);
  items.addEventListener('focusout', leave);
  // Shown only with something in it: items show (Admin) or come (Sign in) as the page
  // learns who the user is.
  const fill = () => {
    button.hidden = !items.querySelector(':scope > :not([hidden])');
    if (button.hidden) show(false);
  };
  new MutationObserver(fill).observe(items, {
    childList: true,
    subtree: true,
    attributeFilter: ['hidden'],
  });
  fill();
}
