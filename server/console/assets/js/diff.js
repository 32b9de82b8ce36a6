// diff lists what differs between two JSON values, path by path:
// [{path, kind: added|removed|changed, before, after}]. Lists are
// compared item by item.
export function diff(a, b, path = '') {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const obj = v => v !== null && typeof v === 'object';
  if (!obj(a) || !obj(b) || Array.isArray(a) !== Array.isArray(b)) return [{ path: path || '(root)', kind: 'changed', before: a, after: b }];
  const out = [];
  const keys = Array.isArray(a) ? [...Array(Math.max(a.length, b.length)).keys()].map(String) : [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  for (const k of keys) {
    const p = Array.isArray(a) ? `${path}[${k}]` : (path ? `${path}.${k}` : k);
    if (!(k in a)) out.push({ path: p, kind: 'added', after: b[k] });
    else if (!(k in b)) out.push({ path: p, kind: 'removed', before: a[k] });
    else out.push(...diff(a[k], b[k], p));
  }
  return out;
}
