// Health: what /readyz says, and a few figures from /metrics — runs a
// minute (from two readings of the runs counter), runs that ended in
// error, pending approvals — with a link to the metrics themselves.

import { call, text } from '../api.js';
import { h, clear, errorBox } from '../dom.js';

const EVERY = 5000;

export async function render(main) {
  const ready = h('div', { 'aria-live': 'polite' });
  const figures = h('dl', { class: 'figures' });
  main.append(h('h1', { text: 'Health' }),
    h('section', { class: 'card' }, h('h2', { text: 'Ready' }), ready),
    h('section', { class: 'card' }, h('h2', { text: 'Figures' }), figures,
      h('p', {}, h('a', { href: '/metrics', target: '_blank', rel: 'noopener', text: 'All metrics (/metrics, Prometheus text)' }))));
  let before = null;
  const tick = async () => {
    try {
      await call('GET', '/readyz');
      clear(ready, h('p', { class: 'good', text: 'Ready: the server takes runs and its store answers.' }));
    } catch (err) {
      clear(ready, errorBox(err));
    }
    try {
      const now = { at: Date.now(), m: parse(await text('/metrics')) };
      const runs = sum(now.m, 'runner_runs_total');
      const rate = before ? ((runs - sum(before.m, 'runner_runs_total')) / ((now.at - before.at) / 60000)) : null;
      clear(figures,
        fig('Runs a minute', rate === null ? 'measuring…' : rate.toFixed(1)),
        fig('Runs ended', String(runs)),
        fig('Runs ended in error', String(sum(now.m, 'runner_runs_total', { status: 'error' }))),
        fig('Pending approvals', String(sum(now.m, 'runner_pending_approvals'))),
        fig('Model calls failed', String(sum(now.m, 'runner_model_calls_total', { status: 'error' }))),
        fig('Tool calls failed', String(sum(now.m, 'runner_tool_calls_total', { status: 'FAILED' }))));
      before = before || now;
    } catch (err) {
      clear(figures, errorBox(err.status === 404 ? 'The metrics are served on a listener of their own (metrics_addr).' : err));
    }
  };
  await tick();
  const timer = setInterval(tick, EVERY);
  return () => clearInterval(timer);
}

function fig(label, value) {
  return [h('dt', { text: label }), h('dd', { text: value })];
}

// parse reads the Prometheus text format: [{name, labels, value}].
export function parse(src) {
  const out = [];
  for (const line of src.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

function sum(samples, name, want = {}) {
  return samples.filter(s => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}
