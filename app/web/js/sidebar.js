// The sidebar as a drawer on a narrow screen (its ☰ button opens it, Escape closes it),
// and the keys that move about the page: the skip links, and Ctrl (Cmd on a Mac) with
// Shift+O for a new chat or K for the search box, the keys other chat pages use, so
// hands need not learn ours.

const $ = (id) => document.getElementById(id);

export function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  $('menu-button').setAttribute('aria-expanded', 'false');
}

export function openSidebar() {
  document.body.classList.add('sidebar-open');
  $('menu-button').setAttribute('aria-expanded', 'true');
  const sidebar = $('sidebar');
  const conversation = sidebar.querySelector('.conversations button.open[tabindex="0"]');
  (conversation ?? sidebar.querySelector('button:not([hidden])') ?? sidebar).focus();
}

/** Wire the drawer and the keys; `newChat()` starts one, `lastAnswer()` is the element the
 * skip link to the answers goes to (null: the answers' box itself). */
export function listenToKeys({ newChat, lastAnswer }) {
  const menuButton = $('menu-button');
  // The skip links move the keyboard without touching the URL, which names the conversation.
  for (const link of document.querySelectorAll('.skip-link')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      const target = $(link.dataset.skip);
      const answer = target === $('messages') ? lastAnswer() : null;
      if (answer) {
        answer.setAttribute('tabindex', '-1');
        answer.focus();
      } else {
        target.focus();
      }
    });
  }
  menuButton.addEventListener('click', () => {
    if (document.body.classList.contains('sidebar-open')) closeSidebar();
    else openSidebar();
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && document.body.classList.contains('sidebar-open')) {
      closeSidebar();
      menuButton.focus();
      return;
    }
    const command = (event.ctrlKey || event.metaKey) && !event.altKey;
    const key = event.key.toLowerCase();
    if (command && event.shiftKey && key === 'o') {
      event.preventDefault();
      newChat();
    } else if (command && !event.shiftKey && key === 'k') {
      event.preventDefault();
      if (window.matchMedia('(max-width: 760px)').matches) openSidebar();
      $('search-input').focus();
    }
  });
}
