// One assistant: its description, graph, input schema, rules, budget and
// tools, and a form that starts a run from an input validated against the
// schema (POST /threads, then POST /threads/{id}/runs).

import { call, enc } from '../api.js';
import { h, clear, errorBox, pretty } from '../dom.js';
import { drawGraph } from '../graph.js';
import { schemaForm } from '../schema.js';
import { RUN_MODES } from '../decide.js';

export async function render(main, { params, signal }) {
  const id = enc(params[0]);
  const [a, graph, schemas, policy] = await Promise.all([
    call('GET', `/assistants/${id}`, undefined, { signal }),
    call('GET', `/assistants/${id}/graph`, undefined, { signal }),
    call('GET', `/assistants/${id}/schemas`, undefined, { signal }),
    call('GET', `/assistants/${id}/policy`, undefined, { signal }),
  ]);
  const form = schemaForm(schemas.input_schema, {}, 'in');
  const msg = h('div', { 'aria-live': 'polite' });
  const start = h('form', { class: 'card', 'aria-labelledby': 'start-h' },
    h('h2', { id: 'start-h', text: 'Start a run' }), form.el,
    h('button', { type: 'submit', class: 'primary', text: 'Start run' }), msg);
  start.addEventListener('submit', async e => {
    e.preventDefault();
    const { value, problems } = form.read();
    if (problems.length) {
      clear(msg, errorBox(`${problems.length} field(s) do not fit the input schema: ${problems.map(p => `${p.path} ${p.message}`).join('; ')}`));
      return;
    }
    try {
      const t = await call('POST', '/threads', { metadata: { graph_id: a.graph_id } });
      const run = await call('POST', `/threads/${enc(t.thread_id)}/runs`, { assistant_id: a.assistant_id, input: value, stream_mode: RUN_MODES });
      location.hash = `#/threads/${enc(t.thread_id)}/live?run=${enc(run.run_id)}`;
    } catch (err) {
      clear(msg, errorBox(err));
    }
  });
  const g = drawGraph(graph);
  main.append(
    h('h1', { text: a.name }),
    h('p', { class: 'lead', text: a.description || '' }),
    h('p', { class: 'muted', text: a.metadata && a.metadata.pipeline ? `Agent on pipeline ${a.metadata.pipeline}, model ${a.metadata.model}` : 'Pipeline' }),
    h('div', { class: 'columns' },
      h('section', { class: 'card graph-card', 'aria-label': 'graph' }, h('h2', { text: 'Graph' }), legend(), h('div', { class: 'graph-scroll' }, g.el)),
      h('div', {}, start, policyCard(policy))),
    h('section', { class: 'card' }, h('h2', { text: 'Input schema' }), h('pre', { class: 'json', text: pretty(schemas.input_schema) })));
}

function legend() {
  return h('p', { class: 'legend muted' }, h('span', { class: 'badge', text: '‖' }), ' pauses (interrupt) · ',
    h('span', { class: 'badge', text: '⚑' }), ' runs tools a rule may hold for approval · dashed: conditional route');
}

function policyCard(p) {
  const budget = Object.entries(p.budget || {}).map(([k, v]) => h('li', {}, h('code', { text: k }), ' ', k === 'timeout' ? `${v / 1e9}s` : String(v)));
  const limits = Object.entries(p.limits || {}).map(([k, v]) => h('li', {}, h('code', { text: k }), ' ', String(v)));
  return h('section', { class: 'card', 'aria-label': 'rules and budgets' },
    h('h2', { text: 'Rules' }),
    p.rules.length ? h('ul', { class: 'rules' }, p.rules.map(r => h('li', {},
      h('code', { text: r.key }), ` on ${r.on}: `, h('strong', { text: r.action }),
      r.when && r.when !== 'otherwise' ? h('div', { class: 'muted' }, 'when ', h('code', { text: r.when })) : null,
      r.skill ? h('div', { class: 'muted', text: `while skill ${r.skill} is loaded` }) : null))) : h('p', { class: 'muted', text: 'No rules.' }),
    h('h2', { text: 'Budget and limits' }), h('ul', {}, budget, limits),
    h('h2', { text: 'Tools' }),
    h('ul', { class: 'tools' }, p.tools.map(t => h('li', {},
      h('code', { text: t.name }), t.mutating ? h('span', { class: 'tag', text: 'mutating' }) : null,
      t.gated_by.length ? h('span', { class: 'tag gate', title: t.gated_by.join(', '), text: '⚑ approval' }) : null,
      h('div', { class: 'muted', text: t.description || '' })))));
}
