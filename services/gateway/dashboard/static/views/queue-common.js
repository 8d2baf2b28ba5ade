// Helpers shared by the queue-side views (queues, todos, schedules,
// settings): todo state names and badges, a debouncer for lifecycle-driven
// refetches, lifecycle rate counters and small form helpers. Not a view: the
// router never mounts it (no route is named after it).
import * as api from '../lib/api.js';
import { ago, badge, duration, h } from '../lib/dom.js';

/** The todo states in lifecycle order, as the API names them. */
export const TODO_STATES = ['TODO_STATE_PENDING', 'TODO_STATE_RUNNING', 'TODO_STATE_COMPLETED', 'TODO_STATE_DEAD', 'TODO_STATE_CANCELLED'];

const STATE_KIND = { pending: 'info', running: 'warn', completed: 'ok', dead: 'bad', cancelled: 'muted' };

/** stateName turns "TODO_STATE_DEAD" (or 4) into "dead". */
export function stateName(s) {
  if (typeof s === 'number') return ['unspecified', ...TODO_STATES.map((x) => x.slice(11).toLowerCase())][s] || String(s);
  return String(s || '').replace(/^TODO_STATE_/, '').toLowerCase();
}

/** stateBadge is a todo state chip carrying data-state for tests. */
export function stateBadge(s) {
  const name = stateName(s);
  const b = badge(name, STATE_KIND[name]);
  b.dataset.state = name;
  b.dataset.testid = 'todo-state';
  return b;
}

/**
 * debouncer collects keys and calls fn(keys) at most once per waitMs, after
 * the first key of a burst (trailing), until signal aborts.
 */
export function debouncer(fn, waitMs, signal) {
  let keys = new Set();
  let timer = 0;
  let running = false;
  const fire = async () => {
    timer = 0;
    if (signal.aborted) return;
    if (running) {
      timer = setTimeout(fire, waitMs);
      return;
    }
    const batch = keys;
    keys = new Set();
    running = true;
    try {
      await fn(batch);
    } finally {
      running = false;
    }
  };
  signal.addEventListener('abort', () => clearTimeout(timer));
  return (key) => {
    keys.add(key);
    if (!timer) timer = setTimeout(fire, waitMs);
  };
}

/** How long the queue views gather lifecycle events before re-reading the counts they made stale. */
export const REFRESH_MS = 400;

/** eventTodoId reads a lifecycle event's todo id (a number or a string of digits). */
export function eventTodoId(ev) {
  const p = ev && ev.payload;
  if (!p || p.todo_id === undefined || p.todo_id === null) return '';
  return String(p.todo_id);
}

const RATE_WINDOW_MS = 60000;
// Which lifecycle kinds count toward which rate.
const RATE_OF = {
  'todo.enqueued': 'enqueued',
  'todo.completed': 'completed',
  'todo.failed': 'failed',
  'todo.expired': 'failed',
};

/**
 * Rates keeps the lifecycle events of the last minute per queue and turns
 * them into per-second rates. Before a minute of watching has passed, the
 * rate is over the time watched so far (at least 10 s, so the first event
 * does not read as a burst).
 */
export class Rates {
  constructor() {
    this.since = Date.now();
    this.events = new Map(); // queue → {enqueued: [ms…], completed: […], failed: […]}
  }

  reset() {
    this.since = Date.now();
    this.events.clear();
  }

  add(queue, kind, at = Date.now()) {
    const which = RATE_OF[kind];
    if (!which) return;
    let q = this.events.get(queue);
    if (!q) this.events.set(queue, (q = { enqueued: [], completed: [], failed: [] }));
    q[which].push(at);
  }

  /** of returns {enqueued, completed, failed} per second for queue. */
  of(queue, now = Date.now()) {
    const q = this.events.get(queue);
    const span = Math.max(10000, Math.min(RATE_WINDOW_MS, now - this.since)) / 1000;
    const out = { enqueued: 0, completed: 0, failed: 0 };
    if (!q) return out;
    for (const k of Object.keys(out)) {
      const list = q[k];
      while (list.length && now - list[0] > RATE_WINDOW_MS) list.shift();
      out[k] = list.length / span;
    }
    return out;
  }
}

/** lifecycle says whether a realtime event is a queue lifecycle event (not presence and the like). */
export function lifecycle(ev) {
  return /^(todo|queue|schedule)\./.test(String(ev && ev.kind));
}

/**
 * follow subscribes to lifecycle channels for a view and drives the top
 * bar's pill. The subscription is known to be in place when its first event
 * arrives: the server announces the subscriber's own presence.join on each
 * channel. Until then marker (an element) has data-live="false", after it
 * "true" (tests wait for it before acting). The pill turns live on that
 * event, or 3 s after the first connect if none came (an older server).
 * onEvent gets the lifecycle events only (todo.*, queue.*, schedule.*).
 */
export function follow(channels, { ctx, signal = ctx.signal, marker, onEvent, onRefused }) {
  let live = false;
  let timer = 0;
  const mark = (v) => {
    live = v;
    if (marker) marker.dataset.live = String(v);
  };
  mark(false);
  signal.addEventListener('abort', () => clearTimeout(timer));
  return api.subscribe(channels, {
    signal,
    onState(state, detail) {
      if (state === 'connecting' || state === 'reconnecting') mark(false);
      if (state === 'connecting') {
        clearTimeout(timer);
        timer = setTimeout(() => !signal.aborted && !live && ctx.setStatus('live'), 3000);
      } else {
        clearTimeout(timer);
      }
      ctx.setStatus(state, detail && (detail.message || detail));
      if (state === 'refused') onRefused?.(detail);
    },
    onEvent(ev, result) {
      if (!live) {
        mark(true);
        clearTimeout(timer);
        ctx.setStatus('live');
      }
      if (lifecycle(ev)) onEvent(ev, result);
    },
  });
}

/** until formats a future timestamp as "in 3m 20s" (the exact time as tooltip); past ones as ago(). */
export function until(ts) {
  const ms = Date.parse(ts || '');
  if (!Number.isFinite(ms)) return '—';
  if (ms <= Date.now()) return ago(ts);
  return h('time', { title: new Date(ms).toLocaleString(), datetime: new Date(ms).toISOString() }, 'in ' + duration((ms - Date.now()) / 1000));
}

/** rate formats a per-second rate ("0", "0.35", "12"). */
export function rate(n) {
  if (!n) return '0';
  if (n >= 10) return String(Math.round(n));
  return n.toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
}

/** localInput turns an RFC 3339 time into a datetime-local input value. */
export function localInput(rfc3339) {
  const ms = Date.parse(rfc3339 || '');
  if (!Number.isFinite(ms)) return '';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes());
}

/** fromLocalInput turns a datetime-local value (the browser's zone) into RFC 3339 UTC; '' when empty or invalid. */
export function fromLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return Number.isFinite(d.getTime()) ? d.toISOString() : '';
}

/** excerpt shortens text to n characters on one line. */
export function excerpt(text, n = 80) {
  const s = String(text || '').replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

/** busy disables a button while fn runs, returning fn's promise. */
export async function busy(button, fn) {
  button.disabled = true;
  try {
    return await fn();
  } finally {
    button.disabled = false;
  }
}

/** btn is a console button: btn('Pause', {action: 'pause', kind: 'danger', onclick}). */
export function btn(text, { action, kind, onclick, title, type = 'button' } = {}) {
  return h('button.btn' + (kind ? '.' + kind : ''), { type, title: title || false, dataset: action ? { action } : undefined, onclick }, text);
}

/** loading is the placeholder shown while a view's first answer is on its way. */
export function loading(text = 'Loading…') {
  return h('p.empty.loading', { role: 'status' }, text);
}
