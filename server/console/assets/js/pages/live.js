// A live run: the thread's stream (GET /threads/{id}/stream) drawn on the
// graph — the running node highlighted, those done marked — with the
// node-by-node timeline (duration, tokens, cost, tool calls with their
// arguments and results, rule events), the messages with the model's
// tokens streaming in, and the pause with its approval card in place.
// A dropped connection reconnects with Last-Event-ID (run:seq) and loses
// nothing; the runs that come after on the thread (a resume) stream in too.

import { call, stream, enc } from '../api.js';
import { h, clear, errorBox, pretty } from '../dom.js';
import { drawGraph } from '../graph.js';
import { messages, message } from '../messages.js';
import { approvalCard } from '../approval.js';
import { decide, toolSchemas } from '../decide.js';

export async function render(main, { params, query, signal }) {
  const thread = params[0];
  const t = await call('GET', `/threads/${enc(thread)}`, undefined, { signal });
  const graphID = t.metadata.graph_id;
  const [graph, tools] = await Promise.all([
    call('GET', `/assistants/${enc(graphID)}/graph`, undefined, { signal }),
    toolSchemas(graphID, signal),
  ]);
  const g = drawGraph(graph);
  const status = h('span', { class: 'run-status', 'aria-live': 'polite', text: 'connecting…' });
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'node timeline' });
  const convo = h('div', { class: 'messages' });
  const streaming = h('article', { class: 'msg assistant streaming', hidden: true }, h('header', { class: 'role', text: 'assistant · streaming' }), h('pre', {}));
  const pause = h('div', { class: 'pause' });
  main.append(
    h('h1', {}, 'Live run of ', h('a', { href: `#/assistants/${enc(graphID)}`, text: graphID })),
    h('p', { class: 'muted' }, 'Thread ', h('a', { href: `#/threads/${enc(thread)}`, text: thread }), ' · ', status),
    h('div', { class: 'columns' },
      h('section', { class: 'card graph-card', 'aria-label': 'graph' }, h('div', { class: 'graph-scroll' }, g.el)),
      h('section', { class: 'card', 'aria-label': 'timeline' }, h('h2', { text: 'Timeline' }), timeline)),
    pause,
    h('section', { class: 'card', 'aria-label': 'messages' }, h('h2', { text: 'Messages' }), convo, streaming));

  const view = { g, timeline, convo, streaming, pause, status, thread, graphID, tools, rows: new Map(), run: null, tokens: '' };
  const state = await call('GET', `/threads/${enc(thread)}/state`, undefined, { signal });
  clear(convo, messages(state.values.messages || []).childNodes);
  if (state.interrupts && state.interrupts.length && !query.get('run')) paused(view, state.interrupts, state.next[0]);

  let last = query.get('run') ? `${query.get('run')}:0` : '';
  (async () => {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        status.textContent = attempt ? 'reconnecting…' : 'connected';
        await stream(`/threads/${enc(thread)}/stream`, {
          signal, lastEventId: last,
          onEvent: ev => {
            if (ev.id) last = ev.id;
            attempt = 0;
            status.textContent = 'connected';
            onEvent(view, ev);
          },
        });
      } catch (err) {
        if (signal.aborted) return;
        if (err.status) { status.replaceWith(errorBox(err)); return; }
      }
      if (signal.aborted) return;
      status.textContent = 'reconnecting…';
      await new Promise(r => setTimeout(r, Math.min(5000, 500 * (attempt + 1))));
    }
  })();
}

// onEvent applies one event of the thread's stream to the page.
function onEvent(v, ev) {
  const d = ev.data;
  switch (ev.event) {
    case 'metadata':
      v.run = d.run_id;
      v.g.clear();
      clear(v.pause);
      v.status.dataset.run = d.run_id;
      v.timeline.append(h('li', { class: 'run' }, 'run ', h('code', { text: d.run_id })));
      break;
    case 'debug':
      debug(v, d);
      break;
    case 'updates':
      for (const node of Object.keys(d)) if (node !== '__interrupt__') v.g.mark(node, 'done');
      break;
    case 'values':
      v.values = true;
      if (d.__interrupt__) paused(v, d.__interrupt__, null);
      else if (d.messages) { clear(v.convo, messages(d.messages).childNodes); v.streaming.hidden = true; }
      break;
    case 'error':
      v.timeline.append(h('li', { class: 'ev error' }, errorBox(d && (d.message || d.error) ? `${d.error || ''} ${d.message || ''}` : pretty(d))));
      break;
    case 'end':
      v.status.textContent = 'run ended; waiting for the next run of this thread';
      break;
  }
}

// debug applies one of the runtime's events (stream mode debug).
function debug(v, d) {
  const p = d.payload || {};
  if (p.thread && p.thread !== v.thread && d.type !== 'done') return; // a child thread's
  const data = p.data || {};
  const row = v.rows.get(p.node);
  switch (d.type) {
    case 'node_start': {
      v.g.mark(p.node, 'active');
      const li = h('li', { class: 'ev node', 'data-node': p.node },
        h('span', { class: 'name' }, h('code', { text: p.node })), h('span', { class: 'dur muted', text: 'running…' }),
        h('span', { class: 'usage muted' }), h('div', { class: 'calls' }));
      li.usage = { input: 0, output: 0, cost: 0 };
      v.rows.set(p.node, li);
      v.timeline.append(li);
      break;
    }
    case 'node_end':
      v.g.mark(p.node, 'done');
      if (row) row.querySelector('.dur').textContent = `${data.duration_ms ?? 0} ms` + (data.next ? ` → ${data.next}` : '');
      if (data.update && data.update.messages && !v.values) { // the values events show them whole
        for (const m of [data.update.messages].flat()) v.convo.append(message(m));
        v.streaming.hidden = true;
        v.tokens = '';
      }
      break;
    case 'llm_token':
      v.tokens += data.text || '';
      v.streaming.hidden = false;
      v.streaming.querySelector('pre').textContent = v.tokens;
      break;
    case 'llm_result':
      if (row) {
        row.usage.input += data.input_tokens || 0;
        row.usage.output += data.output_tokens || 0;
        row.usage.cost += data.cost_usd || 0;
        row.querySelector('.usage').textContent = ` · ${row.usage.input}+${row.usage.output} tokens · $${row.usage.cost.toFixed(4)}`;
      }
      break;
    case 'tool_call':
      if (row) row.querySelector('.calls').append(h('details', { class: 'tool', 'data-call': data.id },
        h('summary', {}, h('code', { text: data.tool }), h('span', { class: 'st muted', text: ' called' })),
        h('pre', { class: 'json', text: pretty(data.args) })));
      break;
    case 'tool_result': {
      const el = row && row.querySelector(`[data-call="${CSS.escape(String(data.id))}"]`);
      if (el) {
        el.querySelector('.st').textContent = ` ${data.status} in ${data.duration_ms} ms`;
        el.append(h('pre', { class: 'json', text: data.error ? data.error : pretty(data.output) }));
      }
      break;
    }
    case 'rule':
      (row ? row.querySelector('.calls') : v.timeline).append(h('div', { class: 'rule-ev' }, 'rule ', h('code', { text: data.rule || '' }),
        ` ${data.action || ''}`, data.text ? `: ${data.text}` : ''));
      break;
    case 'interrupt':
      v.g.mark(p.node || data.node, 'paused');
      if (row) row.querySelector('.dur').textContent = 'paused';
      v.timeline.append(h('li', { class: 'ev pause' }, 'paused at ', h('code', { text: p.node || data.node }), data.message ? `: ${data.message}` : ''));
      break;
    case 'error':
      v.g.mark(p.node, 'error');
      v.timeline.append(h('li', { class: 'ev error', text: `${p.node || 'run'}: ${data.error || pretty(data)}` }));
      break;
    case 'done':
      if (p.thread === v.thread) v.timeline.append(h('li', { class: 'ev done', text: `done: ${data.status || ''}` }));
      break;
  }
}

// paused shows the interrupts the thread waits on, each as an approval
// card in place, and marks the node it paused at.
function paused(v, interrupts, node) {
  for (const intr of interrupts) {
    const n = node || (intr.value && intr.value.runner && intr.value.runner.node);
    if (n) v.g.mark(n, 'paused');
  }
  clear(v.pause, h('h2', { text: 'Waiting for a decision' }), interrupts.map((intr, i) => approvalCard(intr, {
    tools: v.tools, idPrefix: `live${i}`,
    decide: body => decide(v.thread, v.graphID, intr, body, interrupts.length > 1),
  })));
}
