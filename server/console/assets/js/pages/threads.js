// Threads: searched by status, agent, metadata and age, a page at a time
// (POST /threads/search with limit and offset: the server reads only what
// the page shows). The filters live in the location, so a page can be
// reloaded, bookmarked and gone back to.

import { assistants, call } from '../api.js';
import { h, clear, errorBox, ago } from '../dom.js';

const PAGE = 20;
const AGES = { '': 'any age', '1h': 'last hour', '24h': 'last day', '168h': 'last week', '-24h': 'older than a day', '-168h': 'older than a week' };

export async function render(main, { query, signal }) {
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  const names = (await assistants()).map(a => a.graph_id);
  const status = select('f-status', ['', 'idle', 'busy', 'interrupted', 'error'], query.get('status') || '', s => s || 'any status');
  const agent = select('f-agent', ['', ...names], query.get('agent') || '', s => s || 'any assistant');
  const age = select('f-age', Object.keys(AGES), query.get('age') || '', s => AGES[s]);
  const meta = h('input', { id: 'f-meta', type: 'text', placeholder: '{"key": "value"}', value: query.get('metadata') || '', spellcheck: 'false' });
  const form = h('form', { class: 'filters', role: 'search' },
    labelled('Status', status), labelled('Assistant', agent), labelled('Age', age), labelled('Metadata (JSON)', meta),
    h('button', { type: 'submit', class: 'primary', text: 'Search' }));
  form.addEventListener('submit', e => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [k, el] of [['status', status], ['agent', agent], ['age', age], ['metadata', meta]]) if (el.value) q.set(k, el.value);
    location.hash = '#/threads?' + q.toString();
  });
  const body = { limit: PAGE, offset };
  if (query.get('status')) body.status = query.get('status');
  const metadata = {};
  try { Object.assign(metadata, query.get('metadata') ? JSON.parse(query.get('metadata')) : {}); } catch (err) {
    main.append(h('h1', { text: 'Threads' }), form, errorBox('The metadata filter is not a JSON object: ' + err.message));
    return;
  }
  if (query.get('agent')) metadata.graph_id = query.get('agent');
  if (Object.keys(metadata).length) body.metadata = metadata;
  const a = query.get('age');
  if (a) {
    const at = new Date(Date.now() - Math.abs(parseInt(a, 10)) * 3600e3).toISOString();
    if (a.startsWith('-')) body.created_before = at; else body.created_after = at;
  }
  const list = await call('POST', '/threads/search', body, { signal });
  const page = n => { const q = new URLSearchParams(query); q.set('offset', String(n)); return '#/threads?' + q.toString(); };
  main.append(h('h1', { text: 'Threads' }), form,
    list.length === 0 ? h('p', { class: 'muted', text: offset ? 'No more threads.' : 'No thread matches.' }) :
      h('table', { class: 'threads' },
        h('thead', {}, h('tr', {}, ['Thread', 'Assistant', 'Status', 'Updated', 'Created'].map(t => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, list.map(t => h('tr', {},
          h('td', {}, h('a', { href: `#/threads/${encodeURIComponent(t.thread_id)}`, text: t.thread_id })),
          h('td', { text: t.metadata.graph_id || '' }),
          h('td', {}, h('span', { class: 'status ' + t.status, text: t.status })),
          h('td', { title: t.updated_at, text: ago(t.updated_at) }),
          h('td', { title: t.created_at, text: ago(t.created_at) }))))),
    h('nav', { class: 'pager', 'aria-label': 'pages' },
      offset > 0 ? h('a', { href: page(Math.max(0, offset - PAGE)), rel: 'prev', text: '← Newer' }) : null,
      h('span', { class: 'muted', text: list.length ? ` ${offset + 1}–${offset + list.length} ` : '' }),
      list.length === PAGE ? h('a', { href: page(offset + PAGE), rel: 'next', text: 'Older →' }) : null));
}

function select(id, values, current, label) {
  const el = h('select', { id }, values.map(v => h('option', { value: v, text: label(v) })));
  el.value = current;
  return el;
}

function labelled(text, control) {
  return h('div', { class: 'field inline' }, h('label', { for: control.id, text }), control);
}
