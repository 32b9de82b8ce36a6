// The approvals inbox: what waits for a person across threads and agents
// — the paused threads of the tenant (POST /threads/search, status
// interrupted), each interrupt an approval card with its rule, message,
// tool and arguments, the last messages of its conversation, the expiry
// countdown and quorum progress where there are some. Filters by
// assistant, rule and age; newest or oldest first. The approvals stream
// (GET /approvals/stream) says when a thread paused or went on, and the
// inbox reads them again: a decided approval leaves every open inbox.
// Keys: j and k move between cards, a approves, r rejects (with the
// note), e edits, / goes to the filters.

import { call, stream, enc } from '../api.js';
import { h, clear, errorBox, ago } from '../dom.js';
import { approvalCard } from '../approval.js';
import { messages } from '../messages.js';
import { decide, toolSchemas } from '../decide.js';

const PAGE = 1000;
const AGES = { '': 'any age', '-1h': 'waiting over an hour', '-24h': 'waiting over a day', '1h': 'this hour', '24h': 'today' };

export async function render(main, { query, signal }) {
  const list = h('div', { class: 'inbox', 'aria-live': 'polite' });
  const count = h('p', { class: 'muted' });
  const agent = h('select', { id: 'ib-agent' }, h('option', { value: '', text: 'any assistant' }));
  const rule = h('select', { id: 'ib-rule' }, h('option', { value: '', text: 'any rule' }));
  const age = h('select', { id: 'ib-age' }, Object.entries(AGES).map(([v, t]) => h('option', { value: v, text: t })));
  const order = h('select', { id: 'ib-order' }, h('option', { value: 'newest', text: 'newest first' }), h('option', { value: 'oldest', text: 'oldest first' }));
  agent.value = query.get('agent') || '';
  age.value = query.get('age') || '';
  order.value = query.get('order') || 'newest';
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'filter approvals' },
    field('Assistant', agent), field('Rule', rule), field('Age', age), field('Order', order));
  main.append(h('h1', { text: 'Approvals inbox' }), filters, count, list);
  const schemas = new Map();
  let items = [];

  const load = async () => {
    const body = { status: 'interrupted', limit: PAGE };
    if (agent.value) body.metadata = { graph_id: agent.value };
    const threads = [];
    for (let offset = 0; ; offset += PAGE) {
      const page = await call('POST', '/threads/search', { ...body, offset }, { signal });
      threads.push(...page);
      if (page.length < PAGE) break;
    }
    items = threads.flatMap(t => Object.values(t.interrupts || {}).flat().map(intr => ({ t, intr })));
    for (const g of new Set(items.map(i => i.t.metadata.graph_id))) {
      if (g && !schemas.has(g)) schemas.set(g, await toolSchemas(g, signal).catch(() => ({})));
    }
    options(rule, [...new Set(items.map(i => ruleOf(i.intr)).filter(Boolean))].sort(), 'any rule');
    if (!agent.options.length || agent.options.length === 1) {
      const names = (await call('POST', '/assistants/search', { limit: 100 }, { signal })).map(a => a.graph_id);
      options(agent, names, 'any assistant');
      agent.value = query.get('agent') || '';
    }
    show();
  };

  const show = () => {
    const hours = parseInt(age.value, 10);
    const now = Date.now();
    let shown = items.filter(i => (!rule.value || ruleOf(i.intr) === rule.value) &&
      (!age.value || (hours < 0 ? now - Date.parse(i.t.updated_at) > -hours * 3600e3 : now - Date.parse(i.t.updated_at) <= hours * 3600e3)));
    shown = shown.sort((a, b) => Date.parse(b.t.updated_at) - Date.parse(a.t.updated_at));
    if (order.value === 'oldest') shown.reverse();
    const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('.inbox-item');
    const keep = focused ? focused.dataset.interrupt : null;
    count.textContent = `${shown.length} pending approval${shown.length === 1 ? '' : 's'}${shown.length !== items.length ? ` (of ${items.length})` : ''}`;
    badge(items.length);
    // a card whose thread has not changed is kept as it is, so a reload
    // the stream asks for never closes an edit form or drops a note
    // (and the list is left alone when it would show the same cards)
    const cards = new Map([...list.querySelectorAll('.inbox-item')].map(el => [el.dataset.interrupt + ' ' + el.dataset.updated, el]));
    const next = shown.map(({ t, intr }) => cards.get(intr.id + ' ' + t.updated_at) ||
      item(t, intr, schemas.get(t.metadata.graph_id) || {}, load));
    const same = next.length > 0 && next.length === list.children.length && next.every((el, i) => list.children[i] === el);
    if (!same) clear(list, next.length ? next : h('p', { class: 'empty', text: 'Nothing waits for a decision.' }));
    const again = keep && list.querySelector(`[data-interrupt="${CSS.escape(keep)}"]`);
    if (again) again.focus();
  };

  for (const el of [rule, age, order]) el.addEventListener('change', show);
  agent.addEventListener('change', load);
  filters.addEventListener('submit', e => e.preventDefault());
  main.addEventListener('keydown', e => keys(e, list, rule));
  await load();

  // the approvals stream: read them again when a thread pauses or goes on
  let pending = null;
  const again = () => {
    clearTimeout(pending);
    pending = setTimeout(() => load().catch(() => {}), 100);
  };
  (async () => {
    while (!signal.aborted) {
      try {
        await stream('/approvals/stream', { signal, onEvent: again });
      } catch (err) {
        if (signal.aborted || err.status === 404) return;
      }
      await new Promise(r => setTimeout(r, 1000));
      again();
    }
  })();
  return () => clearTimeout(pending);
}

let cardsMade = 0; // numbers each card's element ids, unique while the page lives

// item is one approval: the thread it belongs to, its card, and the last
// messages of the conversation it came from.
function item(t, intr, tools, reload) {
  const g = t.metadata.graph_id;
  const heading = h('h2', {},
    h('a', { href: `#/threads/${enc(t.thread_id)}`, text: g || 'thread' }),
    h('span', { class: 'muted', text: ` · thread ${t.thread_id} · waiting ${ago(t.updated_at).replace(' ago', '')}` }));
  const card = approvalCard(intr, { tools, heading, idPrefix: `ib${++cardsMade}`, decide: async body => {
    await decide(t.thread_id, g, intr, body, Object.values(t.interrupts).flat().length > 1);
    setTimeout(reload, 50);
  } });
  card.classList.add('inbox-item');
  card.setAttribute('tabindex', '0');
  card.dataset.updated = t.updated_at;
  const msgs = (t.values && t.values.messages) || [];
  if (msgs.length) card.append(h('details', { class: 'context' }, h('summary', { text: 'Conversation (last messages)' }), messages(msgs, 3)));
  return card;
}

function ruleOf(intr) {
  return intr.value && intr.value.runner && (intr.value.runner.rule || intr.value.runner.kind);
}

function field(text, control) {
  return h('div', { class: 'field inline' }, h('label', { for: control.id, text }), control);
}

function options(sel, values, none) {
  const cur = sel.value;
  clear(sel, h('option', { value: '', text: none }), values.map(v => h('option', { value: v, text: v })));
  sel.value = values.includes(cur) ? cur : '';
}

// badge shows the count of pending approvals beside the Inbox link.
export function badge(n) {
  const el = document.getElementById('inbox-count');
  if (!el) return;
  el.hidden = n === 0;
  el.textContent = String(n);
}

// keys are the inbox's shortcuts; they stay out of the way while a field
// has focus.
function keys(e, list, rule) {
  if (e.target.closest('input, textarea, select') || e.ctrlKey || e.metaKey || e.altKey) return;
  const cards = [...list.querySelectorAll('.inbox-item')];
  const cur = e.target.closest('.inbox-item');
  const at = cards.indexOf(cur);
  const press = sel => { const b = cur && cur.querySelector(sel); if (b) { e.preventDefault(); b.click(); } };
  switch (e.key) {
    case 'j': if (cards.length) { e.preventDefault(); cards[Math.min(cards.length - 1, at + 1)].focus(); } break;
    case 'k': if (cards.length) { e.preventDefault(); cards[Math.max(0, at - 1)].focus(); } break;
    case 'a': press('button.approve'); break;
    case 'r': press('button.reject'); break;
    case 'e': press('button.edit'); break;
    case '/': e.preventDefault(); rule.focus(); break;
  }
}
