// A conversation as the console shows it: each message with its role,
// its text as sanitised Markdown, and its tool calls as JSON. It takes
// LangChain's form (type: human|ai|tool) and runner's (role: user|
// assistant|tool).

import { h, pretty } from './dom.js';
import { markdown } from './markdown.js';

const ROLES = { human: 'user', user: 'user', ai: 'assistant', assistant: 'assistant', tool: 'tool', system: 'system' };

// roleOf names a message's author.
export function roleOf(m) {
  return ROLES[m.type] || ROLES[m.role] || m.type || m.role || 'message';
}

// textOf is a message's text (content parts joined).
export function textOf(m) {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map(p => (typeof p === 'string' ? p : p.text || '')).join('');
  return c == null ? '' : pretty(c);
}

// callsOf lists a message's tool calls as {name, args}.
export function callsOf(m) {
  return (m.tool_calls || []).map(c => (c.function
    ? { name: c.function.name, args: safeJSON(c.function.arguments) }
    : { name: c.name, args: c.args }));
}

function safeJSON(s) {
  try { return JSON.parse(s); } catch { return s; }
}

// message renders one message.
export function message(m) {
  const role = roleOf(m);
  const calls = callsOf(m);
  return h('article', { class: 'msg ' + role },
    h('header', { class: 'role', text: role + (m.name ? ` · ${m.name}` : '') }),
    h('div', { class: 'md' }, role === 'tool' ? h('pre', { text: textOf(m) }) : markdown(textOf(m))),
    calls.map(c => h('div', { class: 'call' }, h('span', { class: 'muted', text: 'calls ' }), h('code', { text: c.name }),
      h('pre', { class: 'json', text: pretty(c.args) }))));
}

// messages renders a list, the last n when n is given.
export function messages(list, n) {
  const shown = n ? (list || []).slice(-n) : (list || []);
  return h('div', { class: 'messages' }, shown.map(message));
}
