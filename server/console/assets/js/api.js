// The console's client of runner's HTTP API: the same endpoints the SDKs
// call, with the signed-in key sent as x-api-key. The key lives in
// sessionStorage only (this tab, until it closes or the person logs out),
// never in a cookie, so no other site can make the browser use it.

const KEY = 'runner.key';
const NOAUTH = 'runner.noauth';

export const auth = {
  get key() { return sessionStorage.getItem(KEY) || ''; },
  get signedIn() { return this.key !== '' || sessionStorage.getItem(NOAUTH) === '1'; },
  signIn(key) {
    if (key) sessionStorage.setItem(KEY, key);
    else sessionStorage.setItem(NOAUTH, '1');
  },
  signOut() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(NOAUTH); },
};

// ApiError is an answer that is not 2xx, with its RFC 9457 problem.
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

function headers(json, extra = {}) {
  const h = { Accept: 'application/json', ...extra };
  if (json) h['Content-Type'] = 'application/json';
  if (auth.key) h['x-api-key'] = auth.key;
  return h;
}

async function fail(res) {
  if (res.status === 401) window.dispatchEvent(new CustomEvent('runner:unauthorized'));
  let problem = {};
  try { problem = await res.json(); } catch { /* not JSON */ }
  throw new ApiError(res.status, problem);
}

// call sends one request and returns its JSON answer (null for none).
export async function call(method, path, body, { signal, key } = {}) {
  const h = headers(body !== undefined);
  if (key !== undefined) {
    if (key) h['x-api-key'] = key; else delete h['x-api-key'];
  }
  const res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal });
  if (!res.ok) {
    if (key !== undefined) throw new ApiError(res.status, {}); // a probe: no sign-out
    return fail(res);
  }
  const text = await res.text();
  return text.trim() ? JSON.parse(text) : null;
}

// text fetches a plain-text resource (metrics).
export async function text(path) {
  const res = await fetch(path, { headers: headers(false, { Accept: 'text/plain' }) });
  if (!res.ok) return fail(res);
  return res.text();
}

// stream reads server-sent events from path (a fetch, so the key goes
// in a header, which EventSource cannot send), calling onEvent({id,
// event, data}) for each until the stream ends; lastEventId resumes after
// that event. It returns when the server ends the stream; a dropped
// connection throws.
export async function stream(path, { method = 'GET', body, lastEventId, signal, onEvent }) {
  const h = headers(body !== undefined, { Accept: 'text/event-stream' });
  if (lastEventId) h['Last-Event-ID'] = lastEventId;
  const res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal });
  if (!res.ok) return fail(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (ev.event || ev.data !== undefined) onEvent({ id: ev.id, event: ev.event || 'message', data: parse(ev.data) });
        ev = {};
      } else if (!line.startsWith(':')) {
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let v = c < 0 ? '' : line.slice(c + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'data') ev.data = ev.data === undefined ? v : ev.data + '\n' + v;
        else if (field === 'event') ev.event = v;
        else if (field === 'id') ev.id = v;
      }
    }
  }
}

function parse(data) {
  if (data === undefined) return null;
  try { return JSON.parse(data); } catch { return data; }
}

// assistants lists every assistant (by page of 100).
export async function assistants() {
  const out = [];
  for (let offset = 0; ; offset += 100) {
    const page = await call('POST', '/assistants/search', { limit: 100, offset });
    out.push(...page);
    if (page.length < 100) return out;
  }
}

// enc escapes a path segment.
export const enc = encodeURIComponent;
