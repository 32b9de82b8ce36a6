// JSON Schema in the page: a validator for the subset runner's schemas
// use (type, required, properties, additionalProperties, items, enum,
// bounds, lengths, pattern, format), and a form generated from an object
// schema. The server validates again: the page only saves a round trip.

import { h, clear, pretty } from './dom.js';

const FORMATS = {
  'date-time': v => !Number.isNaN(Date.parse(v)) && /^\d{4}-\d\d-\d\dT/.test(v),
  date: v => /^\d{4}-\d\d-\d\d$/.test(v),
  email: v => /^[^@\s]+@[^@\s]+$/.test(v),
  uri: v => /^[a-z][a-z0-9+.-]*:/i.test(v),
  uuid: v => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v),
};

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (Number.isInteger(v)) return 'integer';
  return typeof v;
}

function fits(type, v) {
  const t = typeOf(v);
  return t === type || (type === 'number' && t === 'integer');
}

// validate returns the problems of value against schema: [{path, message}].
export function validate(schema, value, path = '') {
  const out = [];
  if (!schema || typeof schema !== 'object') return out;
  const at = path || '(the value)';
  const types = schema.type === undefined ? [] : [schema.type].flat();
  if (types.length && !types.some(t => fits(t, value))) {
    out.push({ path: at, message: `must be ${types.join(' or ')}, not ${typeOf(value)}` });
    return out;
  }
  if (schema.enum && !schema.enum.some(e => JSON.stringify(e) === JSON.stringify(value))) {
    out.push({ path: at, message: `must be one of ${schema.enum.map(e => JSON.stringify(e)).join(', ')}` });
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) out.push({ path: at, message: `must have at least ${schema.minLength} characters` });
    if (schema.maxLength !== undefined && value.length > schema.maxLength) out.push({ path: at, message: `must have at most ${schema.maxLength} characters` });
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) out.push({ path: at, message: `must match ${schema.pattern}` });
    if (schema.format && FORMATS[schema.format] && !FORMATS[schema.format](value)) out.push({ path: at, message: `must be a ${schema.format}` });
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) out.push({ path: at, message: `must be at least ${schema.minimum}` });
    if (schema.maximum !== undefined && value > schema.maximum) out.push({ path: at, message: `must be at most ${schema.maximum}` });
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((v, i) => out.push(...validate(schema.items, v, `${path}[${i}]`)));
  }
  if (typeOf(value) === 'object') {
    const props = schema.properties || {};
    for (const r of schema.required || []) {
      if (!(r in value)) out.push({ path: join(path, r), message: 'is required' });
    }
    for (const [k, v] of Object.entries(value)) {
      if (props[k]) out.push(...validate(props[k], v, join(path, k)));
      else if (schema.additionalProperties === false) out.push({ path: join(path, k), message: 'is not a field of this schema' });
    }
  }
  return out;
}

function join(path, key) { return path ? `${path}.${key}` : key; }

// schemaForm is a form for an object schema: one control per property
// (text, number, checkbox, choice, or JSON for lists and objects), each
// labelled, its description as a hint and its errors beside it. read()
// returns {value, problems}: the value as the schema would take it, the
// problems of the page's own checks, each shown at its field.
export function schemaForm(schema, initial = {}, idPrefix = 'f') {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const fields = Object.entries(props).map(([name, prop]) => field(name, prop, required.has(name), initial[name], `${idPrefix}-${name}`));
  const el = h('div', { class: 'schema-form' }, fields.map(f => f.el));
  function read() {
    const value = {};
    const problems = [];
    for (const f of fields) {
      const r = f.read();
      if (r.problem) problems.push({ path: f.name, message: r.problem });
      else if (r.value !== undefined) value[f.name] = r.value;
    }
    if (problems.length === 0) problems.push(...validate(schema, value));
    for (const f of fields) f.show(problems.filter(p => p.path === f.name || p.path.startsWith(f.name + '.') || p.path.startsWith(f.name + '[')));
    return { value, problems };
  }
  return { el, read };
}

function field(name, prop, required, initial, id) {
  const t = [prop.type].flat()[0];
  const hintId = id + '-hint';
  const errId = id + '-err';
  const described = `${hintId} ${errId}`;
  let control;
  let read;
  if (prop.enum) {
    control = h('select', { id, 'aria-describedby': described }, required ? null : h('option', { value: '', text: '' }),
      prop.enum.map(v => h('option', { value: JSON.stringify(v), text: String(v) })));
    if (initial !== undefined) control.value = JSON.stringify(initial);
    read = () => (control.value === '' ? {} : { value: JSON.parse(control.value) });
  } else if (t === 'boolean') {
    control = h('input', { id, type: 'checkbox', 'aria-describedby': described, props: { checked: initial === true } });
    read = () => ({ value: control.checked });
  } else if (t === 'integer' || t === 'number') {
    control = h('input', { id, type: 'number', step: t === 'integer' ? '1' : 'any', 'aria-describedby': described, value: initial ?? '' });
    read = () => {
      if (control.value.trim() === '') return {};
      const n = Number(control.value);
      return Number.isNaN(n) ? { problem: 'must be a number' } : { value: n };
    };
  } else if (t === 'string') {
    control = h('input', { id, type: 'text', autocomplete: 'off', 'aria-describedby': described, value: initial ?? '' });
    read = () => (control.value === '' && !required ? {} : { value: control.value });
  } else {
    const start = initial !== undefined ? pretty(initial) : example(prop);
    control = h('textarea', { id, rows: Math.min(10, Math.max(3, start.split('\n').length)), spellcheck: 'false', 'aria-describedby': described });
    control.value = start;
    read = () => {
      if (control.value.trim() === '') return {};
      try { return { value: JSON.parse(control.value) }; } catch (e) { return { problem: 'is not valid JSON: ' + e.message }; }
    };
  }
  const err = h('div', { id: errId, class: 'field-error', role: 'alert' });
  const el = h('div', { class: 'field' },
    h('label', { for: id }, h('code', { text: name }), required ? h('span', { class: 'req', title: 'required', text: ' *' }) : null,
      t ? h('span', { class: 'muted', text: ` ${[prop.type].flat().join(' | ')}${prop.format ? ' (' + prop.format + ')' : ''}` }) : null),
    control,
    h('div', { id: hintId, class: 'hint', text: prop.description || '' }),
    err);
  return {
    name, el, read,
    show(problems) {
      clear(err, problems.map(p => h('div', { text: `${p.path} ${p.message}` })));
      control.setAttribute('aria-invalid', problems.length ? 'true' : 'false');
    },
  };
}

// example is a starting value for a JSON control: a user message for a
// conversation, else an empty list or object.
function example(prop) {
  const t = [prop.type].flat()[0];
  if (t === 'array' && /conversation|message/i.test(prop.description || '')) return pretty([{ role: 'user', content: '' }]);
  if (t === 'array') return '';
  return '';
}
