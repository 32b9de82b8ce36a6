// Sign in with an API key, kept in this tab's sessionStorage only.

import { auth, call } from '../api.js';
import { h, errorBox, clear } from '../dom.js';

export async function render(main, { query }) {
  const key = h('input', { id: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'key-hint' });
  const msg = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'card narrow' },
    h('label', { for: 'key', text: 'API key' }), key,
    h('p', { id: 'key-hint', class: 'hint', text: 'The key stays in this browser tab (sessionStorage) and is sent as x-api-key on each call. Closing the tab or logging out forgets it.' }),
    h('button', { type: 'submit', class: 'primary', text: 'Sign in' }), msg);
  form.addEventListener('submit', async e => {
    e.preventDefault();
    try {
      await call('POST', '/assistants/search', { limit: 1 }, { key: key.value.trim() });
      auth.signIn(key.value.trim());
      location.hash = '#/inbox';
    } catch (err) {
      clear(msg, errorBox(err.status === 401 ? 'That key is not valid on this server.' : err));
      key.focus();
    }
  });
  main.append(h('h1', { text: 'Sign in' }),
    query.get('out') ? h('p', { class: 'notice', text: 'You are logged out; the key is forgotten.' }) : null, form);
  try {
    await call('POST', '/assistants/search', { limit: 1 }, { key: '' });
    form.append(h('p', { class: 'hint' }, 'This server serves without keys (--no-auth). ',
      h('button', { type: 'button', class: 'link', text: 'Continue without a key', onclick: () => { auth.signIn(''); location.hash = '#/inbox'; } })));
  } catch { /* keys are required */ }
  key.focus();
}
