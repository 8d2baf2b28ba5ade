// A queue's operator actions (pause, resume, limits, redrive) and the small
// renderings of its state that the queue list and the queue page share.
// Not a view: the router never mounts it (no route is named after it).
import * as api from '../lib/api.js';
import { errorText, field, h, notice, number } from '../lib/dom.js';
import { btn, busy } from './queue-common.js';

const enc = encodeURIComponent;

export function limitsText(l) {
  if (!l) return 'none';
  const parts = [];
  if (l.max_running) parts.push('≤' + number(l.max_running) + ' running');
  if (l.key_max_running) parts.push('≤' + number(l.key_max_running) + '/key');
  if (l.rate_per_second) parts.push(number(l.rate_per_second) + '/s (burst ' + number(l.rate_burst || 1) + ')');
  if (l.key_rate_per_second) parts.push(number(l.key_rate_per_second) + '/s per key');
  if (Array.isArray(l.key_patterns) && l.key_patterns.length) parts.push(l.key_patterns.length + ' key pattern' + (l.key_patterns.length === 1 ? '' : 's'));
  return parts.length ? parts.join(' · ') : 'none';
}

export function pausedBadge(paused) {
  const b = h('span.badge', { dataset: { kind: paused ? 'warn' : 'ok', testid: 'queue-paused', paused: String(!!paused) } }, paused ? 'paused' : 'active');
  return b;
}

// ------------------------------------------------------------------ actions

export async function pause(queue, ctx) {
  if (!window.confirm('Pause queue "' + queue + '"? Workers get no new todos from it until it is resumed; running todos finish normally.')) return null;
  const body = await api.post('api/queues/' + enc(queue) + ':pause', {}, ctx.signal);
  ctx.toast('Paused ' + queue);
  return body.control;
}

export async function resume(queue, ctx) {
  const body = await api.post('api/queues/' + enc(queue) + ':resume', {}, ctx.signal);
  ctx.toast('Resumed ' + queue);
  return body.control;
}

function intValue(input) {
  const v = input.value.trim();
  return v === '' ? 0 : Number(v);
}

/** limitsForm edits a queue's limits (SetQueueLimits); onDone(control) after a save, onCancel to close. */
export function limitsForm(queue, limits, ctx, { onDone, onCancel }) {
  const l = limits || {};
  const num = (name, value, step = '1') => h('input', { name, type: 'number', min: '0', step, value: value ? String(value) : '', placeholder: '0 = none', dataset: { testid: 'limit-' + name } });
  const inputs = {
    max_running: num('max_running', l.max_running),
    key_max_running: num('key_max_running', l.key_max_running),
    rate_per_second: num('rate_per_second', l.rate_per_second, 'any'),
    rate_burst: num('rate_burst', l.rate_burst),
    key_rate_per_second: num('key_rate_per_second', l.key_rate_per_second, 'any'),
    key_rate_burst: num('key_rate_burst', l.key_rate_burst),
  };
  const patterns = h('textarea', { name: 'key_patterns', rows: '3', spellcheck: 'false', placeholder: '[{"pattern": "tenant-*", "max_running": 2}]' },
    Array.isArray(l.key_patterns) && l.key_patterns.length ? JSON.stringify(l.key_patterns, null, 2) : '');
  const msg = h('div');
  const save = btn('Save limits', { kind: 'primary', type: 'submit', action: 'save-limits' });
  const form = h(
    'form.panel.limits-form',
    { dataset: { testid: 'limits-form', queue } },
    h('h2', 'Limits of ', h('code', queue)),
    msg,
    h(
      'div.fields-grid',
      field('Max running', inputs.max_running, 'todos of the queue RUNNING at once'),
      field('Max running per key', inputs.key_max_running, 'per concurrency key'),
      field('Claims per second', inputs.rate_per_second, 'whole queue'),
      field('Burst', inputs.rate_burst, 'claims at once after idling'),
      field('Claims per second per key', inputs.key_rate_per_second),
      field('Burst per key', inputs.key_rate_burst),
    ),
    field('Key patterns (JSON array, optional)', patterns, 'Each {pattern, max_running, rate_per_second, rate_burst}; the first matching glob gives a key its limits.'),
    h('div.form-actions', save, btn('Cancel', { onclick: onCancel }), h('small.hint', 'All 0 removes every limit.')),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {};
    for (const [k, input] of Object.entries(inputs)) {
      const v = intValue(input);
      if (!Number.isFinite(v) || v < 0) {
        msg.replaceChildren(notice(k + ' must be a number ≥ 0'));
        return;
      }
      body[k] = v;
    }
    const text = patterns.value.trim();
    if (text) {
      try {
        body.key_patterns = JSON.parse(text);
        if (!Array.isArray(body.key_patterns)) throw new Error('not an array');
      } catch (err) {
        msg.replaceChildren(notice('Key patterns must be a JSON array: ' + err.message));
        return;
      }
    }
    msg.replaceChildren();
    try {
      const res = await busy(save, () => api.call('PUT', 'api/queues/' + enc(queue) + '/limits', { body, signal: ctx.signal }));
      ctx.toast('Limits of ' + queue + ' saved');
      onDone(res.control);
    } catch (err) {
      if (err.name !== 'AbortError') msg.replaceChildren(notice(errorText(err)));
    }
  });
  return form;
}

/** redriveForm moves dead todos back to pending (Redrive with an optional limit). */
export function redriveForm(queue, dead, ctx, { onDone, onCancel }) {
  const limit = h('input', { type: 'number', min: '0', step: '1', name: 'limit', placeholder: 'all', dataset: { testid: 'redrive-limit' } });
  const msg = h('div');
  const go = btn('Redrive', { kind: 'primary', type: 'submit', action: 'confirm-redrive' });
  const form = h(
    'form.panel.redrive-form',
    { dataset: { testid: 'redrive-form', queue } },
    h('h2', 'Redrive dead todos of ', h('code', queue)),
    h('p.hint', number(dead) + ' dead. Redriven todos become pending and runnable now, with a fresh budget of attempts; their error history is kept.'),
    msg,
    h('div.form-row', field('How many (oldest first; empty = all)', limit), go, btn('Cancel', { onclick: onCancel })),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const n = limit.value.trim() === '' ? 0 : Number(limit.value);
    if (!Number.isInteger(n) || n < 0) {
      msg.replaceChildren(notice('The limit must be a whole number ≥ 0.'));
      return;
    }
    try {
      const res = await busy(go, () => api.post('api/queues/' + enc(queue) + ':redrive', { limit: n }, ctx.signal));
      ctx.toast('Redrove ' + number(res.redriven_count || 0) + ' todos of ' + queue);
      onDone(res);
    } catch (err) {
      if (err.name !== 'AbortError') msg.replaceChildren(notice(errorText(err)));
    }
  });
  return form;
}
