// An approval card: what a paused thread waits for — a gated tool call
// (LangChain's HITL request: action_requests and review_configs, with
// runner's extras under "runner") or an interrupt node's question — and
// the decisions a reviewer may take: approve, reject with a note, edit
// the arguments in a form generated from the tool's parameter schema
// (checked in the page, then by the server), or respond in the tool's
// place; an interrupt node's answer is a form of its resume schema. The
// decision goes through decide(), the same API call an SDK makes.

import { h, append, clear, errorBox, pretty, duration } from './dom.js';
import { schemaForm, validate } from './schema.js';

// approvalCard returns the card of interrupt intr ({id, value}) of a
// thread; tools maps tool names to their parameter schemas; decide(body)
// sends a decision: {decisions: [...]} for a gate, {resume: v} else.
export function approvalCard(intr, { tools = {}, decide, heading = null, idPrefix = 'a' }) {
  const extra = (intr.value || {}).runner || {};
  const card = h('section', { class: 'card approval', 'data-interrupt': intr.id, tabindex: '-1', 'aria-label': `approval ${extra.rule || extra.kind || ''}` },
    heading, approvalFacts(intr.value));
  append(card, approvalDecisions(card, intr, { tools, decide, idPrefix }));
  return card;
}

// approvalFacts shows what an approval (an interrupt's value) holds: its
// rule or kind, checkpoint type, expiry countdown, quorum progress, the
// rule's message, and each held call's tool and arguments.
export function approvalFacts(value) {
  const v = value || {};
  const extra = v.runner || {};
  return [
    h('p', { class: 'rule' }, extra.rule ? h('code', { text: extra.rule }) : h('code', { text: extra.kind || 'interrupt' }),
      extra.checkpoint_type ? h('span', { class: 'tag', text: extra.checkpoint_type }) : null,
      countdown(extra.expires_at), quorum(extra)),
    extra.message ? h('p', { class: 'message', text: extra.message }) : null,
    (v.action_requests || []).map(a => h('div', { class: 'action' },
      h('p', {}, h('span', { class: 'muted', text: 'tool ' }), h('code', { class: 'tool', text: a.name })),
      a.description && a.description !== extra.message ? h('p', { text: a.description }) : null,
      h('pre', { class: 'json args', text: pretty(a.args) })))];
}

// approvalDecisions offers the decisions interrupt intr allows, sent with
// decide(body); card is the card they sit in, its buttons disabled while
// a decision is on its way and marked decided after.
export function approvalDecisions(card, intr, { tools = {}, decide, idPrefix = 'a' }) {
  const v = intr.value || {};
  const actions = v.action_requests || [];
  const msg = h('div', { class: 'decision-msg', 'aria-live': 'polite' });
  const body = h('div', { class: 'decide' });
  const send = async (payload, what) => {
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    try {
      await decide(payload);
      clear(msg, h('p', { class: 'ok', text: `${what}.` }));
      card.classList.add('decided');
    } catch (err) {
      clear(msg, errorBox(err));
      for (const b of card.querySelectorAll('button')) b.disabled = false;
    }
  };
  if (actions.length) gate(body, actions, v.review_configs || [], tools, send, idPrefix);
  else answer(body, v.runner || {}, send, idPrefix);
  return [body, msg];
}

// gate offers a gated round's decisions, each applied to all its calls
// (an edit to each, in its own form).
function gate(body, actions, configs, tools, send, idPrefix) {
  const allowed = new Set(configs.length ? configs.flatMap(c => c.allowed_decisions || []) : ['approve', 'edit', 'reject', 'respond']);
  const note = h('textarea', { id: `${idPrefix}-note`, rows: 2, placeholder: 'A note for the model (why, or what to do instead)' });
  const all = (type, extra = {}) => ({ decisions: actions.map(() => ({ type, ...extra })) });
  const buttons = h('div', { class: 'buttons' },
    allowed.has('approve') ? h('button', { type: 'button', class: 'primary approve', text: 'Approve', onclick: () => send(all('approve'), 'Approved') }) : null,
    allowed.has('reject') ? h('button', { type: 'button', class: 'danger reject', text: 'Reject', onclick: () => send(all('reject', note.value.trim() ? { message: note.value.trim() } : {}), 'Rejected') }) : null,
    allowed.has('respond') ? h('button', { type: 'button', class: 'respond', text: 'Respond', onclick: () => {
      if (!note.value.trim()) { note.focus(); note.setAttribute('aria-invalid', 'true'); return; }
      send(all('respond', { message: note.value.trim() }), 'Responded');
    } }) : null,
    allowed.has('edit') ? h('button', { type: 'button', class: 'edit', text: 'Edit…', 'aria-expanded': 'false', onclick: e => toggleEdit(e.currentTarget) }) : null);
  const editArea = h('div', { class: 'edit-area', hidden: true });
  const toggleEdit = btn => {
    editArea.hidden = !editArea.hidden;
    btn.setAttribute('aria-expanded', String(!editArea.hidden));
    if (!editArea.hidden && !editArea.firstChild) editArea.append(editForm(actions, tools, send, idPrefix));
    if (!editArea.hidden) { const f = editArea.querySelector('input, textarea, select'); if (f) f.focus(); }
  };
  body.append(h('label', { for: `${idPrefix}-note`, text: 'Note (sent with Reject or Respond)' }), note, buttons, editArea);
}

// editForm edits each call's arguments in a form of its tool's parameter
// schema (JSON when the tool has none).
function editForm(actions, tools, send, idPrefix) {
  const forms = actions.map((a, i) => {
    const schema = tools[a.name] && tools[a.name].properties ? tools[a.name] : null;
    if (schema) return { a, schema, form: schemaForm(schema, a.args || {}, `${idPrefix}-e${i}`) };
    const ta = h('textarea', { rows: 6, spellcheck: 'false', 'aria-label': `arguments of ${a.name}` });
    ta.value = pretty(a.args);
    return { a, form: { el: ta, read: () => { try { return { value: JSON.parse(ta.value), problems: [] }; } catch (e) { return { problems: [{ path: 'arguments', message: 'are not valid JSON: ' + e.message }] }; } } } };
  });
  const msg = h('div', { role: 'alert', class: 'field-error' });
  const f = h('form', { class: 'edit-form' },
    forms.map(x => h('fieldset', {}, h('legend', {}, 'Arguments of ', h('code', { text: x.a.name })), x.form.el)),
    msg, h('button', { type: 'submit', class: 'primary', text: 'Approve with these arguments' }));
  f.addEventListener('submit', e => {
    e.preventDefault();
    const decisions = [];
    const problems = [];
    for (const x of forms) {
      const r = x.form.read();
      problems.push(...r.problems);
      if (x.schema && !r.problems.length) problems.push(...validate(x.schema, r.value));
      decisions.push({ type: 'edit', edited_action: { name: x.a.name, args: r.value } });
    }
    if (problems.length) {
      clear(msg, `Fix ${problems.length} argument(s) first: ${problems.map(p => `${p.path} ${p.message}`).join('; ')}`);
      return;
    }
    clear(msg);
    send({ decisions }, 'Approved with edited arguments');
  });
  return f;
}

// answer offers an interrupt node's answer: a form of its resume schema,
// or a JSON value.
function answer(body, extra, send, idPrefix) {
  const schema = extra.resume_schema;
  let form;
  if (schema && schema.properties) form = schemaForm(schema, {}, `${idPrefix}-r`);
  else {
    const ta = h('textarea', { rows: 3, spellcheck: 'false', 'aria-label': 'resume value (JSON)' });
    ta.value = 'true';
    form = { el: ta, read: () => { try { return { value: JSON.parse(ta.value), problems: [] }; } catch (e) { return { problems: [{ path: 'value', message: 'is not valid JSON: ' + e.message }] }; } } };
  }
  const msg = h('div', { role: 'alert', class: 'field-error' });
  const f = h('form', {}, form.el, msg, h('button', { type: 'submit', class: 'primary', text: 'Resume with this answer' }));
  f.addEventListener('submit', e => {
    e.preventDefault();
    const r = form.read();
    if (r.problems.length) { clear(msg, r.problems.map(p => `${p.path} ${p.message}`).join('; ')); return; }
    send({ resume: r.value }, 'Resumed');
  });
  body.append(f);
}

// countdown shows the time left before the approval expires, ticking.
function countdown(expires) {
  if (!expires) return null;
  const el = h('span', { class: 'expiry' });
  const tick = () => {
    if (!el.isConnected && el.dataset.started) return;
    el.dataset.started = '1';
    const left = (Date.parse(expires) - Date.now()) / 1000;
    el.textContent = left > 0 ? `expires in ${duration(left)}` : 'expired';
    el.classList.toggle('soon', left < 300);
    if (left > 0) setTimeout(tick, 1000);
  };
  tick();
  return el;
}

// quorum shows how many approvals a quorum still needs, where the gate's
// ballot asks for more than one, with who approved so far.
function quorum(extra) {
  const b = extra.ballot;
  if (!b || !(b.quorum > 1)) return null;
  const have = b.approved_by || [];
  return h('span', { class: 'quorum', title: have.join(', ') },
    h('progress', { max: b.quorum, value: have.length, 'aria-label': 'approvals toward the quorum' }), ` ${have.length} of ${b.quorum} approvals`);
}
