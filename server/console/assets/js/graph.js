// Draws an assistant's graph (GET /assistants/{id}/graph) as SVG with a
// layered layout: each node one layer below the longest path that leads
// to it from __start__, loops drawn back up the right-hand side, nodes in
// a layer ordered by the mean place of their neighbours. Conditional
// routes carry their condition; interrupts and approval gates are marked.

import { s } from './dom.js';

const W = 176;
const H = 46;
const GAP_X = 40;
const GAP_Y = 58;
let graphs = 0;

// layout places the graph's nodes: {pos: id → {x, y, layer}, back: set of
// "source→target" edges that go back up, width, height}.
export function layout(graph) {
  const ids = graph.nodes.map(n => n.id);
  const out = new Map(ids.map(id => [id, []]));
  for (const e of graph.edges) if (out.has(e.source) && out.has(e.target)) out.get(e.source).push(e.target);
  // back edges: those that close a cycle in a depth-first walk from __start__
  const back = new Set();
  const state = new Map();
  const order = [];
  const visit = id => {
    state.set(id, 1);
    order.push(id);
    for (const t of out.get(id)) {
      if (state.get(t) === 1) back.add(id + '→' + t);
      else if (!state.has(t)) visit(t);
    }
    state.set(id, 2);
  };
  visit(ids.includes('__start__') ? '__start__' : ids[0]);
  for (const id of ids) if (!state.has(id)) visit(id);
  // layers: the longest forward path to each node
  const layer = new Map(ids.map(id => [id, 0]));
  for (let changed = true, rounds = 0; changed && rounds < ids.length; rounds++) {
    changed = false;
    for (const e of graph.edges) {
      if (back.has(e.source + '→' + e.target) || e.source === e.target) continue;
      if (layer.get(e.target) < layer.get(e.source) + 1) { layer.set(e.target, layer.get(e.source) + 1); changed = true; }
    }
  }
  if (layer.has('__end__')) layer.set('__end__', Math.max(...layer.values()) + (ids.length > 1 ? 1 : 0));
  const layers = [];
  for (const id of order) (layers[layer.get(id)] ??= []).push(id);
  const rows = layers.filter(Boolean);
  // order: a few sweeps of the barycentre heuristic
  const preds = new Map(ids.map(id => [id, []]));
  for (const e of graph.edges) if (!back.has(e.source + '→' + e.target) && preds.has(e.target)) preds.get(e.target).push(e.source);
  const place = new Map();
  rows.forEach(r => r.forEach((id, i) => place.set(id, i)));
  for (let sweep = 0; sweep < 4; sweep++) {
    for (const r of rows) {
      const bary = id => {
        const ns = sweep % 2 === 0 ? preds.get(id) : out.get(id);
        const known = ns.filter(n => place.has(n));
        return known.length ? known.reduce((a, n) => a + place.get(n), 0) / known.length : place.get(id);
      };
      const keyed = r.map(id => [bary(id), place.get(id), id]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      keyed.forEach(([, , id], i) => { r[i] = id; place.set(id, i); });
    }
  }
  const widest = Math.max(...rows.map(r => r.length));
  const width = widest * (W + GAP_X) + 160;
  const pos = new Map();
  rows.forEach((r, li) => {
    const left = (widest * (W + GAP_X) - r.length * (W + GAP_X)) / 2 + GAP_X / 2;
    r.forEach((id, i) => pos.set(id, { x: left + i * (W + GAP_X), y: 20 + li * (H + GAP_Y), layer: li }));
  });
  return { pos, back, width, height: rows.length * (H + GAP_Y) + 20 };
}

// drawGraph returns {el, mark(node, state), clear()}: state is active,
// done, paused or error, shown as the node's class.
export function drawGraph(graph) {
  const id = ++graphs;
  const { pos, back, width, height } = layout(graph);
  const svg = s('svg', { class: 'graph', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'graph of the assistant' },
    s('defs', {}, s('marker', { id: `arrow${id}`, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }))));
  const edges = s('g', { class: 'edges' });
  const labels = s('g', { class: 'labels' });
  graph.edges.forEach((e, i) => {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) return;
    let d;
    let mid;
    if (back.has(e.source + '→' + e.target) || e.source === e.target || b.layer <= a.layer) {
      const off = 60 + 18 * (i % 4) + 14 * Math.abs(a.layer - b.layer);
      const x1 = a.x + W;
      const x2 = b.x + W;
      const y1 = a.y + H / 2;
      const y2 = b.y + H / 2;
      d = `M ${x1} ${y1} C ${x1 + off} ${y1}, ${x2 + off} ${y2}, ${x2} ${y2}`;
      mid = { x: Math.max(x1, x2) + off * 0.75, y: (y1 + y2) / 2 };
    } else {
      const x1 = a.x + W / 2;
      const y1 = a.y + H;
      const x2 = b.x + W / 2;
      const y2 = b.y;
      const dy = (y2 - y1) / 2;
      d = `M ${x1} ${y1} C ${x1} ${y1 + dy}, ${x2} ${y2 - dy}, ${x2} ${y2}`;
      mid = { x: (x1 + x2) / 2, y: y1 + (y2 - y1) * (b.layer - a.layer > 1 ? 0.25 : 0.5) };
    }
    edges.append(s('path', { d, class: 'edge' + (e.conditional ? ' conditional' : ''), 'marker-end': `url(#arrow${id})`, 'data-edge': `${e.source}→${e.target}` }));
    if (e.conditional && e.data) {
      const text = e.data.length > 30 ? e.data.slice(0, 29) + '…' : e.data;
      const w = text.length * 6.2 + 10;
      labels.append(s('g', { class: 'edge-label', transform: `translate(${mid.x - w / 2} ${mid.y - 9})` },
        s('title', { text: e.data }), s('rect', { width: w, height: 17, rx: 4 }), s('text', { x: 5, y: 12.5, text })));
    }
  });
  const nodes = s('g', { class: 'nodes' });
  const byId = new Map();
  for (const n of graph.nodes) {
    const p = pos.get(n.id);
    const data = n.data || {};
    const special = n.id === '__start__' || n.id === '__end__';
    const name = String(data.name || n.id);
    const cls = ['gnode', special ? 'terminal' : 'type-' + (data.type || 'node'), data.interrupt ? 'interrupt' : '', data.gated_tools ? 'gated' : ''];
    const g = s('g', { class: cls.filter(Boolean).join(' '), transform: `translate(${p.x} ${p.y})`, 'data-node': n.id, tabindex: special ? null : 0 },
      s('title', { text: [name, data.type && `(${data.type})`, data.description, data.interrupt && `pauses: ${data.interrupt}`,
        data.gated_tools && `approval gate on: ${data.gated_tools.join(', ')}`].filter(Boolean).join('\n') }),
      s('rect', { width: W, height: H, rx: special ? 23 : 7 }),
      s('text', { x: W / 2, y: special ? 28 : 20, class: 'name', text: name.length > 24 ? name.slice(0, 23) + '…' : name }),
      special ? null : s('text', { x: W / 2, y: 36, class: 'type', text: data.type || '' }),
      data.interrupt ? s('g', { class: 'pause-mark', transform: 'translate(9 7)' }, s('rect', { width: 3.5, height: 11 }), s('rect', { x: 6, width: 3.5, height: 11 })) : null,
      data.gated_tools ? s('text', { x: W - 20, y: 16, class: 'badge', text: '⚑' }) : null);
    byId.set(n.id, g);
    nodes.append(g);
  }
  svg.append(edges, labels, nodes);
  const states = ['active', 'done', 'paused', 'error'];
  return {
    el: svg,
    mark(node, state) {
      const g = byId.get(node);
      if (!g) return;
      if (state === 'active') for (const other of byId.values()) other.classList.remove('active');
      g.classList.remove(...states);
      g.classList.add(state);
    },
    clear() { for (const g of byId.values()) g.classList.remove(...states); },
  };
}
