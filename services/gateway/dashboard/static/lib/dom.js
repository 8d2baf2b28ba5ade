// DOM building and formatting shared by the console's views.
//
// Everything shown comes from the network, so it is rendered with
// createElement and textContent only, never parsed as HTML: h() has no way
// to hand markup to the parser, and attributes are set one by one.

/**
 * h builds an element: h('a.link', {href: '#/x', onclick: fn}, 'text', child).
 * The tag may carry classes after dots. Attributes starting with "on" are
 * listeners; "dataset" takes an object; false/null/undefined attributes and
 * children are skipped; arrays of children are flattened.
 */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split('.');
  const e = document.createElement(name || 'div');
  if (classes.length) e.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'className') e.className = [e.className, v].filter(Boolean).join(' ');
    else if (k === 'value' || k === 'checked' || k === 'selected') e[k] = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children) {
    if (c === false || c === null || c === undefined) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : String(c));
  }
}

const integerFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimalFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** number formats a count or measure readably ("12,345", "0.25"). */
export function number(n) {
  n = Number(n);
  if (!Number.isFinite(n)) return '—';
  if (Number.isInteger(n)) return integerFormat.format(n);
  const abs = Math.abs(n);
  if (abs < 0.01 || abs >= 1e15) return n.toPrecision(3);
  return decimalFormat.format(n);
}

/** bytes formats a size ("512 B", "1.5 KiB"). */
export function bytes(n) {
  n = Number(n) || 0;
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}

/**
 * parseTime reads an RFC 3339 timestamp as protojson writes it (up to nine
 * fractional digits; Date.parse wants at most three). NaN when absent.
 */
export function parseTime(s) {
  if (typeof s !== 'string' || s === '') return NaN;
  return Date.parse(s.replace(/(\.\d{3})\d+/, '$1'));
}

/** time formats a timestamp in the browser's locale ("—" when unset). */
export function time(s) {
  const ms = typeof s === 'number' ? s : parseTime(s);
  return Number.isFinite(ms) ? new Date(ms).toLocaleString() : '—';
}

/** duration formats seconds as "45s", "3m 20s", "2h 5m", "3d 4h". */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(Number(seconds) || 0));
  if (s < 60) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + (s % 60) + 's';
  const hr = Math.floor(m / 60);
  if (hr < 48) return hr + 'h ' + (m % 60) + 'm';
  return Math.floor(hr / 24) + 'd ' + (hr % 24) + 'h';
}

/** age formats how long ago a timestamp was ("12s ago"); clocks may differ, so never negative. */
export function age(s) {
  const ms = typeof s === 'number' ? s : parseTime(s);
  return Number.isFinite(ms) ? duration((Date.now() - ms) / 1000) + ' ago' : '—';
}

/**
 * ago is an element showing age(s) that the app's ticker refreshes every
 * second, with the exact time as its tooltip.
 */
export function ago(s) {
  const ms = typeof s === 'number' ? s : parseTime(s);
  return h('time.ago', { dataset: { ms: String(ms) }, title: time(ms), datetime: Number.isFinite(ms) ? new Date(ms).toISOString() : false }, age(ms));
}

/** tick refreshes every ago() element in root. */
export function tick(root = document) {
  for (const e of root.querySelectorAll('time.ago')) e.textContent = age(Number(e.dataset.ms));
}

/** enumName strips a proto enum's prefix: enumName('TODO_STATE_PENDING', 'TODO_STATE_') → 'pending'. */
export function enumName(v, prefix) {
  return typeof v === 'string' ? v.replace(prefix, '').toLowerCase() : String(v ?? '');
}

/** badge is a coloured state chip; kind picks the colour (ok, warn, bad, info, muted). */
export function badge(text, kind) {
  return h('span.badge', { dataset: { kind: kind || 'muted' } }, text);
}

/** json renders a value as indented JSON in a code block. */
export function json(value) {
  return h('pre.code', h('code', JSON.stringify(value ?? null, null, 2)));
}

/** decodeBase64 turns protojson bytes into a Uint8Array. */
export function decodeBase64(b64) {
  const bin = atob(String(b64 || '').replace(/-/g, '+').replace(/_/g, '/'));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** hexdump renders bytes as offset, hex and ASCII columns (first max bytes). */
export function hexdump(u8, max = 64 * 1024) {
  const lines = [];
  const n = Math.min(u8.length, max);
  for (let off = 0; off < n; off += 16) {
    const row = u8.subarray(off, Math.min(off + 16, n));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '.')).join('');
    lines.push(off.toString(16).padStart(8, '0') + '  ' + hex.padEnd(48) + ' ' + ascii);
  }
  if (u8.length > n) lines.push('… ' + (u8.length - n) + ' more bytes');
  return h('pre.code.hex', h('code', lines.join('\n')));
}

/**
 * table renders rows under columns [{label, cell(row) → Node|string, className}].
 * onRow(row) makes rows clickable (and keyboard-activatable) links.
 */
export function table(columns, rows, { onRow, empty = 'Nothing here yet.', label } = {}) {
  if (!rows.length) return h('p.empty', empty);
  const head = h('tr', columns.map((c) => h('th', { scope: 'col', className: c.className }, c.label)));
  const body = rows.map((r) => {
    const tr = h('tr', columns.map((c) => h('td', { className: c.className, 'data-label': c.label }, c.cell(r))));
    if (onRow) {
      tr.classList.add('link');
      tr.tabIndex = 0;
      tr.addEventListener('click', (ev) => {
        if (!ev.target.closest('a, button, input, select')) onRow(r);
      });
      tr.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' && ev.target === tr) onRow(r);
      });
    }
    return tr;
  });
  return h('div.table-wrap', h('table.data', { 'aria-label': label }, h('thead', head), h('tbody', body)));
}

/** field is a labelled form control. */
export function field(label, control, hint) {
  return h('label.field', h('span.field-label', label), control, hint && h('small.hint', hint));
}

/** errorText says what an ApiError or network failure means for a person. */
export function errorText(err) {
  if (!err) return '';
  if (err.name === 'AbortError') return 'cancelled';
  if (err.status === 403) return 'This token may not do this: ' + err.message;
  if (err.status === 503) return 'The service is unavailable right now; try again. (' + err.message + ')';
  if (err instanceof TypeError) return 'The server could not be reached.';
  return err.message || String(err);
}

/** notice is an inline message block; kind is 'error', 'ok' or 'info'. */
export function notice(text, kind = 'error') {
  return h('p.notice', { dataset: { kind }, role: kind === 'error' ? 'alert' : 'status' }, text);
}
