// The agent picker's options: the agents the server runs (`/agent/kinds`), each with what
// the page shows of it (its description and examples on the welcome screen, whether it
// needs or takes a file).

import { getJson } from './api.js';

/** Offer in `picker` the agents the server runs; on any failure the page's own two stay. */
export async function loadAgents(picker) {
  let kinds;
  try {
    kinds = await getJson('/agent/kinds');
  } catch {
    return;
  }
  const offered = Array.isArray(kinds) ? kinds.filter((k) => k.available) : [];
  if (!offered.length) return;
  const picked = picker.value;
  picker.replaceChildren(
    ...offered.map((k) => {
      const option = new Option(k.name, k.kind);
      option.toggleAttribute('data-needs-file', Boolean(k.needsFile));
      option.toggleAttribute('data-accepts-file', Boolean(k.acceptsFile));
      if (k.description) option.dataset.description = k.description;
      if (Array.isArray(k.examples)) option.dataset.examples = JSON.stringify(k.examples);
      return option;
    }),
  );
  if (offered.some((k) => k.kind === picked)) picker.value = picked;
}
