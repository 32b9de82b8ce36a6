// Every agent and pipeline the server serves, with its description.

import { assistants } from '../api.js';
import { h } from '../dom.js';

export async function render(main) {
  const list = await assistants();
  main.append(h('h1', { text: 'Assistants' }),
    h('ul', { class: 'cards' }, list.map(a => h('li', { class: 'card' },
      h('h2', {}, h('a', { href: `#/assistants/${encodeURIComponent(a.assistant_id)}`, text: a.name })),
      h('p', { text: a.description || '' }),
      h('p', { class: 'muted', text: a.metadata && a.metadata.pipeline ? `agent · pipeline ${a.metadata.pipeline} · model ${a.metadata.model}` : 'pipeline' })))));
}
