// DOM helpers: every node is made with createElement and every text set
// with textContent — never innerHTML — so data cannot become markup.

const SVG = 'http://www.w3.org/2000/svg';

// h makes an element: attrs sets attributes (class, for, aria-*), on*
// handlers (onclick: fn) and properties given as props; children are
// nodes or strings (as text), arrays flattened, null skipped.
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element the same way.
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'props') Object.assign(el, v);
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'innerHTML' || k === 'style' || k.startsWith('on')) throw new Error('refused attribute ' + k);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings as text, arrays) to el.
export function append(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    if (c instanceof NodeList || c instanceof HTMLCollection) append(el, [...c]);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// clear empties el and adds children.
export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// pretty is a value as indented JSON.
export function pretty(v) {
  return JSON.stringify(v, null, 2);
}

// tree shows a JSON value as a collapsible tree (details/summary), the
// first levels open.
export function tree(value, open = 1, label = null) {
  const isObj = value !== null && typeof value === 'object';
  if (!isObj) {
    return h('div', { class: 'leaf' }, label !== null ? h('span', { class: 'key', text: label + ': ' }) : null,
      h('span', { class: 'v-' + (value === null ? 'null' : typeof value), text: JSON.stringify(value) }));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  return h('details', { class: 'node', open: open > 0 },
    h('summary', {}, label !== null ? h('span', { class: 'key', text: label + ': ' }) : null, h('span', { class: 'muted', text: summary })),
    entries.map(([k, v]) => tree(v, open - 1, k)));
}

// ago says how long ago an RFC 3339 time was, roughly.
export function ago(t) {
  if (!t) return '';
  const sec = Math.round((Date.now() - Date.parse(t)) / 1000);
  return duration(Math.abs(sec)) + (sec >= 0 ? ' ago' : ' from now');
}

// duration renders seconds as 1h 2m, 3m 4s or 5s.
export function duration(sec) {
  sec = Math.max(0, Math.round(sec));
  if (sec >= 3600) return `${Math.floor(sec / 3600)}h ${Math.floor(sec % 3600 / 60)}m`;
  if (sec >= 60) return `${Math.floor(sec / 60)}m ${sec % 60}s`;
  return `${sec}s`;
}

// confirmDialog asks a question in a modal dialog; it resolves true when
// the person confirms. Escape cancels; focus starts on Cancel.
export function confirmDialog(question, action = 'Confirm', detail = '') {
  return new Promise(resolve => {
    const cancel = h('button', { type: 'button', text: 'Cancel' });
    const ok = h('button', { type: 'submit', class: 'danger', text: action });
    const dlg = h('dialog', { class: 'confirm', 'aria-label': question },
      h('form', { method: 'dialog' }, h('p', { class: 'question', text: question }),
        detail ? h('p', { class: 'muted', text: detail }) : null, h('div', { class: 'actions' }, cancel, ok)));
    let answer = false;
    ok.addEventListener('click', () => { answer = true; });
    cancel.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => { dlg.remove(); resolve(answer); });
    document.body.append(dlg);
    dlg.showModal();
    cancel.focus();
  });
}

// notice shows a short message in the page's status line (role=status,
// read out by screen readers).
export function notice(text, kind = 'info') {
  const el = document.getElementById('status');
  if (!el) return;
  clear(el, h('span', { class: 'notice ' + kind, text }));
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => el.replaceChildren(), 6000);
}

// errorBox shows an API error (a problem's detail) where it happened.
export function errorBox(err) {
  const status = err && err.status ? `${err.status} ` : '';
  return h('div', { class: 'error', role: 'alert', text: status + (err && err.message ? err.message : String(err)) });
}
