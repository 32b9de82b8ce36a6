// One thread: its state as a collapsible tree, what it waits on, its
// history as a timeline, the difference between any two checkpoints, and
// the actions LangGraph Studio users rely on — fork from a checkpoint,
// edit the state as a node, continue, cancel, delete — each confirmed
// first and each the API call an SDK makes.

import { call, enc } from '../api.js';
import { h, clear, errorBox, tree, pretty, ago, confirmDialog, notice } from '../dom.js';
import { approvalCard } from '../approval.js';
import { decide, toolSchemas, RUN_MODES } from '../decide.js';
import { diff } from '../diff.js';

export async function render(main, { params, signal }) {
  const id = params[0];
  const path = `/threads/${enc(id)}`;
  const [t, state, history] = await Promise.all([
    call('GET', path, undefined, { signal }),
    call('GET', `${path}/state`, undefined, { signal }),
    call('POST', `${path}/history`, { limit: 100 }, { signal }),
  ]);
  const graphID = t.metadata.graph_id;
  const tools = graphID ? await toolSchemas(graphID, signal).catch(() => ({})) : {};
  const msg = h('div', { 'aria-live': 'polite' });
  const act = (label, cls, run) => h('button', { type: 'button', class: cls, text: label, onclick: async () => {
    try { await run(); } catch (err) { clear(msg, errorBox(err)); }
  } });
  const actions = h('div', { class: 'buttons' },
    h('a', { class: 'button', href: `#/threads/${enc(id)}/live`, text: 'Live view' }),
    graphID ? act('Continue', 'continue', async () => {
      if (!await confirmDialog(`Continue thread ${id} from where it stands?`, 'Continue', 'A new run goes on from its newest checkpoint.')) return;
      const run = await call('POST', `${path}/runs`, { assistant_id: graphID, stream_mode: RUN_MODES });
      location.hash = `#/threads/${enc(id)}/live?run=${enc(run.run_id)}`;
    }) : null,
    t.status === 'busy' ? act('Cancel run', 'cancel', async () => {
      if (!await confirmDialog(`Cancel the run of thread ${id}?`, 'Cancel run', 'It stops at its node; the thread can be continued.')) return;
      const runs = await call('GET', `${path}/runs?status=running`);
      for (const r of runs) await call('POST', `${path}/runs/${enc(r.run_id)}/cancel?wait=1`);
      notice('Run cancelled.');
      location.reload();
    }) : null,
    act('Delete', 'danger delete', async () => {
      if (!await confirmDialog(`Delete thread ${id}?`, 'Delete', 'Its runs, events and checkpoints are removed for good.')) return;
      await call('DELETE', path);
      notice(`Thread ${id} deleted.`);
      location.hash = '#/threads';
    }));
  main.append(
    h('h1', {}, 'Thread ', h('code', { text: id })),
    h('p', {}, h('span', { class: 'status ' + t.status, text: t.status }), ' · ',
      graphID ? h('a', { href: `#/assistants/${enc(graphID)}`, text: graphID }) : 'no assistant yet',
      ` · created ${ago(t.created_at)} · updated ${ago(t.updated_at)}`),
    actions, msg);
  if (state.interrupts && state.interrupts.length) {
    main.append(h('section', { 'aria-label': 'waiting for a decision' }, h('h2', { text: 'Waiting for a decision' }),
      state.interrupts.map((intr, i) => approvalCard(intr, {
        tools, idPrefix: `t${i}`,
        decide: async body => {
          const run = await decide(id, graphID, intr, body, state.interrupts.length > 1);
          location.hash = `#/threads/${enc(id)}/live?run=${enc(run.run_id)}`;
        },
      }))));
  }
  main.append(
    h('div', { class: 'columns' },
      h('section', { class: 'card', 'aria-label': 'state' }, h('h2', { text: 'State' }),
        state.checkpoint ? h('p', { class: 'muted', text: `checkpoint ${state.checkpoint.checkpoint_id}, next: ${state.next.join(', ') || '(none)'}` }) : null,
        h('div', { class: 'tree' }, tree(state.values, 1)), editState(path, state, graphID)),
      h('section', { class: 'card', 'aria-label': 'history' }, h('h2', { text: 'History' }), historyView(id, path, history))),
    h('section', { class: 'card', 'aria-label': 'metadata' }, h('h2', { text: 'Metadata' }), tree(t.metadata, 1)));
}

// editState writes values as if a node had returned them
// (POST /threads/{id}/state with as_node).
function editState(path, state, graphID) {
  if (!state.checkpoint || !graphID) return null;
  const values = h('textarea', { id: 'edit-values', rows: 6, spellcheck: 'false' });
  values.value = '{}';
  const node = h('input', { id: 'edit-node', type: 'text', placeholder: 'node name (optional)', value: state.metadata && state.metadata.node || '' });
  const msg = h('div', { 'aria-live': 'polite' });
  const f = h('form', { class: 'edit-state' },
    h('label', { for: 'edit-values', text: 'Values to write (JSON object of state fields)' }), values,
    h('label', { for: 'edit-node', text: 'As node' }), node,
    h('button', { type: 'submit', text: 'Edit state' }), msg);
  f.addEventListener('submit', async e => {
    e.preventDefault();
    let v;
    try { v = JSON.parse(values.value); } catch (err) { clear(msg, errorBox('The values are not valid JSON: ' + err.message)); return; }
    if (!await confirmDialog('Write these values to the thread?', 'Edit state', `They are merged through the fields' reducers as if node ${node.value || '(none)'} had returned them.`)) return;
    try {
      const body = { values: v };
      if (node.value.trim()) body.as_node = node.value.trim();
      await call('POST', `${path}/state`, body);
      notice('State edited.');
      location.reload();
    } catch (err) { clear(msg, errorBox(err)); }
  });
  return h('details', { class: 'edit' }, h('summary', { text: 'Edit state as a node' }), f);
}

// historyView lists the checkpoints, newest first, each with fork and a
// pick for the diff of two.
function historyView(id, path, history) {
  if (!history.length) return h('p', { class: 'muted', text: 'No checkpoints yet.' });
  const out = h('div', { class: 'diff-out', 'aria-live': 'polite' });
  const byID = new Map(history.map(s => [s.checkpoint.checkpoint_id, s]));
  const pick = (name, i) => h('input', { type: 'radio', name, value: history[i].checkpoint.checkpoint_id, 'aria-label': `${name === 'a' ? 'from' : 'to'} checkpoint ${history[i].checkpoint.checkpoint_id}` });
  const rows = history.map((s, i) => {
    const cp = s.checkpoint.checkpoint_id;
    const a = pick('a', i);
    const b = pick('b', i);
    if (i === 1 || history.length === 1) a.checked = true;
    if (i === 0) b.checked = true;
    return h('li', { class: 'cp', 'data-checkpoint': cp },
      h('span', { class: 'picks' }, a, b),
      h('span', { class: 'cp-id' }, h('code', { text: cp })),
      h('span', { text: ` ${s.metadata.source} · ${s.metadata.node || '(input)'} · ${s.metadata.status || ''}` }),
      s.next.length ? h('span', { class: 'muted', text: ` → ${s.next.join(', ')}` }) : null,
      h('span', { class: 'muted', title: s.created_at, text: ` · ${ago(s.created_at)}` }),
      h('button', { type: 'button', class: 'small fork', text: 'Fork', 'aria-label': `fork from checkpoint ${cp}`, onclick: async () => {
        if (!await confirmDialog(`Fork thread ${id} from checkpoint ${cp}?`, 'Fork', 'A new thread starts where this one stood then; this one is not changed.')) return;
        try {
          const c = await call('POST', `${path}/copy`, { checkpoint_id: cp });
          notice(`Forked into ${c.thread_id}.`);
          location.hash = `#/threads/${enc(c.thread_id)}`;
        } catch (err) { clear(out, errorBox(err)); }
      } }));
  });
  const show = () => {
    const a = byID.get(list.querySelector('input[name=a]:checked').value);
    const b = byID.get(list.querySelector('input[name=b]:checked').value);
    const changes = diff(a.values, b.values);
    clear(out, h('h3', { text: `Checkpoint ${a.checkpoint.checkpoint_id} → ${b.checkpoint.checkpoint_id}` }),
      changes.length ? h('ul', { class: 'diff' }, changes.map(c => h('li', { class: c.kind },
        h('code', { text: c.path }), ' ', h('span', { class: 'muted', text: c.kind }),
        c.kind !== 'added' ? h('pre', { class: 'before', text: pretty(c.before) }) : null,
        c.kind !== 'removed' ? h('pre', { class: 'after', text: pretty(c.after) }) : null))) : h('p', { class: 'muted', text: 'No difference.' }));
  };
  const list = h('ol', { class: 'history' }, rows);
  list.addEventListener('change', show);
  const wrap = h('div', {}, h('p', { class: 'hint', text: 'Pick a “from” (first column) and a “to” (second column) checkpoint to see what changed.' }), list, out);
  show();
  return wrap;
}
