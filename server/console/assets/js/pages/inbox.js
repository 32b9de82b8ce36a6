// The approvals inbox: the pending approvals the signed-in principal may
// decide (GET /approvals, which selects them by the principal's name and
// roles), across threads and agents, filtered by assistant, rule and age,
// newest or oldest first. A card shows at once what the approval record
// holds — agent, rule, each held call's tool and arguments, the expiry
// countdown and quorum progress — and, once it comes near the screen,
// reads its thread for the rest: the rule's message, the decisions it
// allows and the last messages of the conversation. The approvals stream
// (GET /approvals/stream) says when a thread paused or went on, and the
// inbox reads the list again: a decided approval leaves every open inbox.
// Keys: j and k move between cards, a approves, r rejects (with the
// note), e edits, / goes to the filters.

import { call, stream, enc } from '../api.js';
import { h, clear, errorBox, ago } from '../dom.js';
import { approvalFacts, approvalDecisions } from '../approval.js';
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
  age.value = query.get('age') || '';
  order.value = query.get('order') || 'newest';
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'filter approvals' },
    field('Assistant', agent), field('Rule', rule), field('Age', age), field('Order', order));
  main.append(h('h1', { text: 'Approvals inbox' }), filters, count, list);
  const schemas = new Map(); // assistant → its tools' parameter schemas
  const rules = new Set(); // every rule seen, for the filter
  // a card reads its thread once it comes within a screen of the view
  const details = new WeakMap();
  const near = new IntersectionObserver(entries => {
    for (const e of entries.filter(e => e.isIntersecting)) {
      near.unobserve(e.target);
      details.get(e.target)();
    }
  }, { rootMargin: '100% 0px' });
  let items = [];

  const load = async () => {
    const q = new URLSearchParams({ limit: PAGE, order: order.value });
    if (agent.value) q.set('agent', agent.value);
    if (rule.value) q.set('rule', rule.value);
    const hours = parseInt(age.value, 10);
    if (hours) q.set(hours < 0 ? 'created_before' : 'created_after', new Date(Date.now() - Math.abs(hours) * 3600e3).toISOString());
    const all = [];
    for (;;) {
      const page = await call('GET', `/approvals?${q}`, undefined, { signal });
      all.push(...page.approvals);
      if (!page.next) break;
      q.set('after', page.next);
    }
    items = all;
    for (const a of items) rules.add(a.rule);
    options(rule, [...rules].filter(Boolean).sort(), 'any rule');
    show();
  };

  const show = () => {
    const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('.inbox-item');
    const keep = focused ? focused.dataset.approval : null;
    count.textContent = `${items.length} pending approval${items.length === 1 ? '' : 's'}`;
    badge(items.length);
    // a card whose approval has not changed is kept as it is, so a reload
    // the stream asks for never closes an edit form or drops a note
    // (and the list is left alone when it would show the same cards)
    const cards = new Map([...list.querySelectorAll('.inbox-item')].map(el => [el.dataset.approval + ' ' + el.dataset.updated, el]));
    const next = items.map(a => cards.get(a.id + ' ' + a.updated_at) || item(a));
    const same = next.length > 0 && next.length === list.children.length && next.every((el, i) => list.children[i] === el);
    if (!same) clear(list, next.length ? next : h('p', { class: 'empty', text: 'Nothing waits for a decision.' }));
    const again = keep && list.querySelector(`[data-approval="${CSS.escape(keep)}"]`);
    if (again) again.focus();
  };

  // item is approval a's card: the record's facts now, the rest when it
  // comes near the view.
  const item = a => {
    const calls = (a.record && a.record.calls) || [];
    const heading = h('h2', {},
      h('a', { href: `#/threads/${enc(a.thread_id)}`, text: a.agent || 'thread' }),
      h('span', { class: 'muted', text: ` · thread ${a.thread_id} · waiting ${ago(a.created_at).replace(' ago', '')}` }));
    const facts = h('div', { class: 'facts' }, approvalFacts({ action_requests: calls.map(c => ({ name: c.tool, args: c.args })),
      runner: { rule: a.rule, expires_at: a.expires_at, ballot: calls.length ? calls[0].ballot : null } }));
    const rest = h('div', { class: 'rest' }, h('p', { class: 'muted', text: 'Reading the approval…' }));
    const card = h('section', { class: 'card approval inbox-item', tabindex: '0', 'aria-label': `approval ${a.rule}`,
      'data-approval': a.id, 'data-updated': a.updated_at }, heading, facts, rest);
    details.set(card, () => detail(a, card, facts, rest).catch(err => { if (!signal.aborted) clear(rest, errorBox(err)); }));
    near.observe(card);
    return card;
  };

  // detail reads the thread of approval a and fills its card in: the
  // interrupt's facts, the decisions it allows, the last messages.
  const detail = async (a, card, facts, rest) => {
    const t = await call('GET', `/threads/${enc(a.thread_id)}`, undefined, { signal });
    const intrs = Object.values(t.interrupts || {}).flat();
    const intr = intrs.find(i => ((i.value || {}).runner || {}).approval_id === a.id) || (intrs.length === 1 ? intrs[0] : null);
    if (!intr) {
      clear(rest, h('p', { class: 'muted', text: 'The thread no longer waits for this approval.' }));
      return;
    }
    const graph = (t.metadata && t.metadata.graph_id) || a.agent;
    if (!schemas.has(graph)) schemas.set(graph, await toolSchemas(graph, signal).catch(() => ({})));
    clear(facts, approvalFacts(intr.value));
    clear(rest, approvalDecisions(card, intr, { tools: schemas.get(graph), idPrefix: `ib${++cardsMade}`, decide: async body => {
      await decide(a.thread_id, graph, intr, body, intrs.length > 1);
      setTimeout(() => load().catch(() => {}), 50);
    } }));
    const msgs = (t.values && t.values.messages) || [];
    if (msgs.length) card.append(h('details', { class: 'context' }, h('summary', { text: 'Conversation (last messages)' }), messages(msgs, 3)));
  };

  for (const el of [agent, rule, age, order]) el.addEventListener('change', () => load().catch(err => clear(list, errorBox(err))));
  filters.addEventListener('submit', e => e.preventDefault());
  main.addEventListener('keydown', e => keys(e, list, rule));
  const names = (await call('POST', '/assistants/search', { limit: 100 }, { signal })).map(a => a.graph_id);
  options(agent, names, 'any assistant');
  agent.value = names.includes(query.get('agent')) ? query.get('agent') : '';
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
  return () => { clearTimeout(pending); near.disconnect(); };
}

let cardsMade = 0; // numbers each card's element ids, unique while the page lives

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
