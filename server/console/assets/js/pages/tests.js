// Tests: runs the served project's Test documents (POST /tests/run) and
// shows each failure at its expectation's file:line with what differed.

import { call } from '../api.js';
import { h, clear, errorBox } from '../dom.js';

export async function render(main) {
  const filter = h('input', { id: 'test-filter', type: 'text', placeholder: 'only Tests whose name contains…' });
  const out = h('div', { 'aria-live': 'polite' });
  const run = h('button', { type: 'submit', class: 'primary', text: 'Run Tests' });
  const form = h('form', { class: 'filters' }, h('div', { class: 'field inline' }, h('label', { for: 'test-filter', text: 'Filter' }), filter), run);
  form.addEventListener('submit', async e => {
    e.preventDefault();
    run.disabled = true;
    clear(out, h('p', { class: 'muted', text: 'Running…' }));
    try {
      const rep = await call('POST', '/tests/run', { filter: filter.value });
      clear(out, report(rep));
    } catch (err) {
      clear(out, errorBox(err));
    } finally {
      run.disabled = false;
    }
  });
  main.append(h('h1', { text: 'Tests' }),
    h('p', { class: 'muted', text: 'The project\'s Test documents, run with scripted models and mocked tools on a memory store: no live call is made.' }),
    form, out);
}

function report(rep) {
  const failed = rep.tests.filter(t => !t.passed);
  return h('div', {},
    h('p', { class: 'summary ' + (rep.failed ? 'bad' : 'good'), text: `${rep.passed} passed, ${rep.failed} failed` }),
    failed.length ? h('h2', { text: 'Failures' }) : null,
    h('ul', { class: 'failures' }, failed.map(t => h('li', { class: 'card failure' },
      h('h3', {}, h('code', { text: t.name })),
      h('p', { class: 'muted', text: t.position }),
      (t.problems || []).map(problem)))),
    h('details', {}, h('summary', { text: `All ${rep.tests.length} Tests` }),
      h('ul', { class: 'all-tests' }, rep.tests.map(t => h('li', { class: t.passed ? 'pass' : 'fail' },
        h('span', { class: 'mark', text: t.passed ? '✓ ' : '✗ ' }), h('code', { text: t.name }), h('span', { class: 'muted', text: ' ' + t.position }))))));
}

// problem shows one problem: its file:line:col apart, then the message
// with its got/want lines.
function problem(text) {
  const m = /^(\S+?:\d+(?::\d+)?): ([\s\S]*)$/.exec(text);
  const [where, what] = m ? [m[1], m[2]] : ['', text];
  const [first, ...rest] = what.split('\n');
  return h('div', { class: 'problem' },
    where ? h('code', { class: 'where', text: where }) : null, ' ', h('span', { text: first }),
    rest.length ? h('pre', { class: 'differed', text: rest.join('\n') }) : null);
}
