// The console's shell: a hash router that mounts one page at a time in
// <main>, the navigation, sign-in state and log-out. Each page is a module
// of pages/ exporting render(main, ctx) and, if it holds a stream or a
// timer, returning a function that stops it.

import { auth, call } from './api.js';
import { h, clear, errorBox } from './dom.js';

const routes = [
  [/^\/signin$/, 'signin'],
  [/^\/inbox$/, 'inbox'],
  [/^\/assistants$/, 'assistants'],
  [/^\/assistants\/([^/]+)$/, 'assistant'],
  [/^\/threads$/, 'threads'],
  [/^\/threads\/([^/]+)$/, 'thread'],
  [/^\/threads\/([^/]+)\/live$/, 'live'],
  [/^\/tests$/, 'tests'],
  [/^\/health$/, 'health'],
];

const main = document.getElementById('main');
let stop = null;
let current = null;

// route parses the location's hash: #/path?query.
function route() {
  const [path, q = ''] = location.hash.replace(/^#/, '').split('?');
  for (const [re, page] of routes) {
    const m = re.exec(path || '/inbox');
    if (m) return { page, params: m.slice(1).map(decodeURIComponent), query: new URLSearchParams(q) };
  }
  return { page: 'inbox', params: [], query: new URLSearchParams() };
}

async function show() {
  if (stop) { stop(); stop = null; }
  if (current) current.abort();
  const ctl = new AbortController();
  current = ctl;
  let r = route();
  if (!auth.signedIn && r.page !== 'signin') {
    if (await needsNoKey()) auth.signIn('');
    else { location.replace('#/signin'); return; }
  }
  document.getElementById('nav').hidden = !auth.signedIn;
  document.getElementById('logout').hidden = !auth.signedIn;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === r.page || (a.dataset.page === 'threads' && (r.page === 'thread' || r.page === 'live')) ||
      (a.dataset.page === 'assistants' && r.page === 'assistant')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  clear(main, h('p', { class: 'muted', text: 'Loading…' }));
  try {
    const mod = await import(`./pages/${r.page}.js`);
    if (ctl.signal.aborted) return;
    clear(main);
    const cleanup = await mod.render(main, { params: r.params, query: r.query, signal: ctl.signal });
    if (ctl.signal.aborted) { if (cleanup) cleanup(); return; }
    stop = cleanup || null;
    const heading = main.querySelector('h1');
    if (heading) document.title = heading.textContent + ' · runner';
    if (!main.contains(document.activeElement)) main.focus({ preventScroll: true });
  } catch (err) {
    if (ctl.signal.aborted || err.name === 'AbortError') return;
    clear(main, h('h1', { text: 'Something went wrong' }), errorBox(err));
  }
}

// needsNoKey asks whether the server serves without keys (--no-auth).
async function needsNoKey() {
  try {
    await call('POST', '/assistants/search', { limit: 1 }, { key: '' });
    return true;
  } catch {
    return false;
  }
}

window.addEventListener('hashchange', show);
window.addEventListener('runner:unauthorized', () => {
  auth.signOut();
  location.hash = '#/signin';
});
document.getElementById('logout').addEventListener('click', () => {
  auth.signOut();
  location.hash = '#/signin?out=1';
});
show();
