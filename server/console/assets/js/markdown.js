// A small Markdown renderer that makes DOM nodes, never HTML: text from
// models, tools and people is always text. It knows paragraphs, headings,
// lists, block quotes, fenced code, inline code, emphasis and links; a
// link is a link only to http, https or mailto (anything else — a
// javascript: URL — stays plain text). Raw HTML in the source is shown as
// the characters it is made of.

import { h } from './dom.js';

const SAFE = /^(https?:|mailto:)/i;

// markdown renders source as a document fragment.
export function markdown(source) {
  const out = document.createDocumentFragment();
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) { i++; continue; }
    if ((m = /^\s*(```|~~~)/.exec(line))) {
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) body.push(lines[i]);
      i++;
      out.append(h('pre', {}, h('code', { text: body.join('\n') })));
      continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      out.append(inline(h('h' + Math.min(6, m[1].length + 2)), m[2]));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) body.push(lines[i].replace(/^\s*> ?/, ''));
      out.append(h('blockquote', {}, markdown(body.join('\n'))));
      continue;
    }
    if ((m = /^\s*([-*+]|\d+[.)])\s+/.exec(line))) {
      const ordered = /\d/.test(m[1]);
      const list = h(ordered ? 'ol' : 'ul');
      const item = ordered ? /^\s*\d+[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
      for (; i < lines.length && item.test(lines[i]); i++) list.append(inline(h('li'), item.exec(lines[i])[1]));
      out.append(list);
      continue;
    }
    const para = [];
    for (; i < lines.length && !/^\s*$/.test(lines[i]) && !/^\s*(```|~~~|#{1,6}\s|>|[-*+]\s|\d+[.)]\s)/.test(lines[i]); i++) para.push(lines[i]);
    if (para.length === 0) para.push(lines[i++]);
    out.append(inline(h('p'), para.join('\n')));
  }
  return out;
}

// Inline tokens, the earliest match first: code, link, strong, emphasis
// (underscores only at word boundaries: snake_case stays as it is).
const TOKENS = /`([^`]+)`|\[([^\]]*)\]\(\s*([^)\s]*)\s*\)|\*\*(?=\S)([^*]+?)(?<=\S)\*\*|(?<!\w)__(?=\S)([^_]+?)(?<=\S)__(?!\w)|\*(?=\S)([^*]+?)(?<=\S)\*|(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)/;

// inline appends text with its inline Markdown to el.
export function inline(el, text) {
  let rest = String(text);
  for (;;) {
    const m = TOKENS.exec(rest);
    if (!m) break;
    if (m.index > 0) el.append(document.createTextNode(rest.slice(0, m.index)));
    if (m[1] !== undefined) el.append(h('code', { text: m[1] }));
    else if (m[2] !== undefined) el.append(link(m[2], m[3]));
    else if (m[4] !== undefined || m[5] !== undefined) el.append(inline(h('strong'), m[4] ?? m[5]));
    else el.append(inline(h('em'), m[6] ?? m[7]));
    rest = rest.slice(m.index + m[0].length);
  }
  if (rest) el.append(document.createTextNode(rest));
  return el;
}

// link is an anchor to a safe URL, else the label as plain text.
function link(label, url) {
  if (!SAFE.test(url)) return inline(h('span', { class: 'unsafe-link', title: 'link not followed: ' + url }), label);
  return inline(h('a', { href: url, rel: 'noopener noreferrer nofollow', target: '_blank' }), label || url);
}
