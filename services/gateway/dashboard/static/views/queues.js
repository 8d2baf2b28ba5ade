// Queues: every queue of the tenant with its depth by state, oldest pending
// age, pause state, limits and live rates, and the operator's actions
// (pause/resume, limits, redrive). #/queues/<name> is one queue in full
// (QueueStats with the vacuum health an administrator sees).
//
// Live: one Subscribe to sys:queue:<queue> for the listed queues (the first
// 100). Each lifecycle event counts toward the queue's rates and marks its
// counts stale; stale queues are re-read (QueueStats, or ListQueues when
// many changed) at most a few times a second. Nothing is polled.
import * as api from '../lib/api.js';
import { ago, duration, errorText, field, h, notice, number, table, time } from '../lib/dom.js';
import { Rates, btn, busy, debouncer, follow, loading, rate } from './queue-common.js';

const MAX_CHANNELS = 100;
const REFRESH_MS = 400;
// More stale queues than this at once: one ListQueues instead of a
// QueueStats per queue.
const STATS_FANOUT = 4;

const enc = encodeURIComponent;

/** listQueues reads every page of ListQueues (up to 50 pages). */
async function listQueues(signal) {
  const all = [];
  let token = '';
  for (let i = 0; i < 50; i++) {
    const body = await api.get('api/queues', { page_size: 100, page_token: token }, signal);
    all.push(...(body.queues || []));
    token = body.next_page_token || '';
    if (!token) break;
  }
  return all;
}

function limitsText(l) {
  if (!l) return 'none';
  const parts = [];
  if (l.max_running) parts.push('≤' + number(l.max_running) + ' running');
  if (l.key_max_running) parts.push('≤' + number(l.key_max_running) + '/key');
  if (l.rate_per_second) parts.push(number(l.rate_per_second) + '/s (burst ' + number(l.rate_burst || 1) + ')');
  if (l.key_rate_per_second) parts.push(number(l.key_rate_per_second) + '/s per key');
  if (Array.isArray(l.key_patterns) && l.key_patterns.length) parts.push(l.key_patterns.length + ' key pattern' + (l.key_patterns.length === 1 ? '' : 's'));
  return parts.length ? parts.join(' · ') : 'none';
}

function pausedBadge(paused) {
  const b = h('span.badge', { dataset: { kind: paused ? 'warn' : 'ok', testid: 'queue-paused', paused: String(!!paused) } }, paused ? 'paused' : 'active');
  return b;
}

// countColumn is a depth column whose number links to the queue's todos in
// that state.
function countColumn(label, key, state, alarm = false) {
  return {
    label,
    className: 'num',
    cell: (q) =>
      h(
        'a.count',
        { href: '#/todos?queue=' + enc(q.queue) + '&state=' + state, className: alarm && Number(q[key]) > 0 ? 'count-bad' : '', dataset: { count: key }, title: label + ' todos of ' + q.queue },
        number(q[key]),
      ),
  };
}

// ------------------------------------------------------------------ actions

async function pause(queue, ctx) {
  if (!window.confirm('Pause queue "' + queue + '"? Workers get no new todos from it until it is resumed; running todos finish normally.')) return null;
  const body = await api.post('api/queues/' + enc(queue) + ':pause', {}, ctx.signal);
  ctx.toast('Paused ' + queue);
  return body.control;
}

async function resume(queue, ctx) {
  const body = await api.post('api/queues/' + enc(queue) + ':resume', {}, ctx.signal);
  ctx.toast('Resumed ' + queue);
  return body.control;
}

function intValue(input) {
  const v = input.value.trim();
  return v === '' ? 0 : Number(v);
}

/** limitsForm edits a queue's limits (SetQueueLimits); onDone(control) after a save, onCancel to close. */
function limitsForm(queue, limits, ctx, { onDone, onCancel }) {
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
function redriveForm(queue, dead, ctx, { onDone, onCancel }) {
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

// --------------------------------------------------------------------- list

export async function mount(root, ctx) {
  if (ctx.path.length) return mountDetail(root, ctx, ctx.path[0]);

  const count = h('span.size', { id: 'queue-count' }, '');
  const message = h('div', { id: 'queues-message' });
  const editor = h('div', { id: 'queue-editor' });
  const body = h('div', { id: 'queues' }, loading('Loading queues…'));
  const live = h('small.hint', { id: 'queues-live' }, '');
  // A name filter (?q=) narrows the list and the live channels to matching
  // queues, so any queue can be watched live however many there are.
  const filter = (ctx.params.get('q') || '').trim();
  const search = h('input', { type: 'search', name: 'q', value: filter, placeholder: 'filter by name', 'aria-label': 'Filter queues by name', dataset: { testid: 'queue-filter' } });
  const searchForm = h('form.queue-search', { role: 'search' }, search);
  searchForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate({ q: search.value.trim() });
  });
  root.append(
    h('header.view-head', h('h1', 'Queues ', count), h('div.actions', live, searchForm)),
    message,
    editor,
    body,
  );

  const rates = new Rates();
  let total = 0; // queues before the name filter
  const queues = new Map(); // name → summary
  const lastEvent = new Map(); // name → lifecycle kind
  const rows = new Map(); // name → tr
  let sub = null; // AbortController of the current subscription
  let subscribed = '';

  function closeEditor() {
    editor.replaceChildren();
  }

  function rateCells(name) {
    const r = rates.of(name);
    return h(
      'span.rates',
      { dataset: { testid: 'queue-rates' }, title: 'per second over the last minute: enqueued / completed / failed' },
      h('span.rate-in', '↓' + rate(r.enqueued)),
      ' ',
      h('span.rate-ok', '✓' + rate(r.completed)),
      ' ',
      h('span.rate-bad', '✗' + rate(r.failed)),
    );
  }

  function actions(q) {
    const name = q.queue;
    return h(
      'div.row-actions',
      q.paused
        ? btn('Resume', {
            action: 'resume',
            onclick: (ev) => run(ev.currentTarget, async () => applyControl(name, await resume(name, ctx))),
          })
        : btn('Pause', {
            action: 'pause',
            onclick: (ev) => run(ev.currentTarget, async () => applyControl(name, await pause(name, ctx))),
          }),
      btn('Limits', {
        action: 'limits',
        onclick: () => {
          editor.replaceChildren(
            limitsForm(name, queues.get(name)?.limits, ctx, {
              onDone: (control) => {
                applyControl(name, control);
                closeEditor();
              },
              onCancel: closeEditor,
            }),
          );
          editor.querySelector('input')?.focus();
        },
      }),
      Number(q.dead) > 0 &&
        btn('Redrive', {
          action: 'redrive',
          kind: 'danger',
          onclick: () => {
            editor.replaceChildren(
              redriveForm(name, q.dead, ctx, {
                onDone: () => {
                  closeEditor();
                  stale(name);
                },
                onCancel: closeEditor,
              }),
            );
            editor.querySelector('input')?.focus();
          },
        }),
      h('a.more-link', { href: '#/todos?queue=' + enc(name), dataset: { action: 'todos' } }, 'Todos →'),
    );
  }

  async function run(button, fn) {
    message.replaceChildren();
    try {
      await busy(button, fn);
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
    }
  }

  // applyControl shows a PauseQueue/ResumeQueue/SetQueueLimits answer at once.
  function applyControl(name, control) {
    if (!control) return;
    const q = queues.get(name);
    if (!q) return;
    queues.set(name, { ...q, paused: !!control.paused, limits: control.limits || null });
    updateRow(name);
  }

  const columns = [
    { label: 'Queue', cell: (q) => h('div.queue-cell', h('a.queue-name', { href: '#/queues/' + enc(q.queue) }, q.queue), ' ', pausedBadge(q.paused)) },
    countColumn('Ready', 'pending_ready', 'TODO_STATE_PENDING'),
    countColumn('Scheduled', 'pending_scheduled', 'TODO_STATE_PENDING'),
    countColumn('Running', 'running', 'TODO_STATE_RUNNING'),
    countColumn('Completed', 'completed', 'TODO_STATE_COMPLETED'),
    countColumn('Dead', 'dead', 'TODO_STATE_DEAD', true),
    countColumn('Cancelled', 'cancelled', 'TODO_STATE_CANCELLED'),
    {
      label: 'Oldest',
      className: 'num',
      cell: (q) => h('span.nowrap', { className: q.oldest_pending_age_seconds > 300 ? 'count-bad' : '', title: 'how long the oldest claimable todo has waited' }, q.oldest_pending_age_seconds ? duration(q.oldest_pending_age_seconds) : '—'),
    },
    { label: 'Rates /s', className: 'rates-cell', cell: (q) => rateCells(q.queue) },
    { label: 'Limits', cell: (q) => h('span.limits', limitsText(q.limits)) },
    { label: 'Actions', className: 'actions-cell', cell: actions },
  ];

  function row(q) {
    const t = table(columns, [q]);
    const tr = t.querySelector('tbody tr');
    tr.dataset.testid = 'queue-row';
    tr.dataset.queue = q.queue;
    tr.dataset.paused = String(!!q.paused);
    if (lastEvent.has(q.queue)) tr.dataset.lastEvent = lastEvent.get(q.queue);
    return tr;
  }

  function updateRow(name) {
    const old = rows.get(name);
    const q = queues.get(name);
    if (!old || !q) return render();
    const tr = row(q);
    old.replaceWith(tr);
    rows.set(name, tr);
  }

  function render() {
    rows.clear();
    const list = [...queues.values()].sort((a, b) => (a.queue < b.queue ? -1 : 1));
    count.textContent = filter ? '(' + list.length + ' of ' + total + ')' : list.length ? '(' + list.length + ')' : '';
    if (!list.length && filter) {
      body.replaceChildren(h('p.empty', { dataset: { testid: 'queues-empty' } }, 'No queue name contains "' + filter + '". Clear the filter to see all ' + total + '.'));
      return;
    }
    if (!list.length) {
      body.replaceChildren(
        h('p.empty', { dataset: { testid: 'queues-empty' } }, 'No queues yet. A queue appears when its first todo is enqueued (POST api/queues/<queue>/todos, a webhook endpoint route or a schedule).'),
      );
      return;
    }
    const t = table(columns, list, { label: 'Queues' });
    const trs = t.querySelectorAll('tbody tr');
    list.forEach((q, i) => {
      const tr = row(q);
      trs[i].replaceWith(tr);
      rows.set(q.queue, tr);
    });
    body.replaceChildren(t);
  }

  function resubscribe() {
    const names = [...queues.keys()].sort().slice(0, MAX_CHANNELS);
    const key = names.join(',');
    if (key === subscribed) return;
    subscribed = key;
    if (sub) sub.abort();
    sub = null;
    if (!names.length) {
      ctx.setStatus(null);
      live.textContent = '';
      return;
    }
    live.textContent = queues.size > MAX_CHANNELS ? 'live for the first ' + MAX_CHANNELS + ' queues' : '';
    sub = new AbortController();
    ctx.signal.addEventListener('abort', () => sub && sub.abort(), { once: true });
    follow(
      names.map((n) => 'sys:queue:' + n),
      {
        ctx,
        signal: sub.signal,
        marker: body,
        onRefused: (detail) => message.replaceChildren(notice('Live updates refused: ' + errorText(detail))),
        onEvent(ev) {
          const name = String(ev.channel || '').replace(/^sys:queue:/, '');
          rates.add(name, ev.kind);
          lastEvent.set(name, ev.kind);
          stale(name);
        },
      },
    );
  }

  const stale = debouncer(
    async (names) => {
      try {
        if (names.size > STATS_FANOUT) {
          await load();
          return;
        }
        await Promise.all(
          [...names].map(async (name) => {
            const s = await api.get('api/queues/' + enc(name) + '/stats', undefined, ctx.signal);
            const known = queues.has(name);
            queues.set(name, { ...(queues.get(name) || {}), ...s, queue: name });
            if (known) updateRow(name);
            else render();
          }),
        );
      } catch (err) {
        if (err.name !== 'AbortError') message.replaceChildren(notice('Could not refresh: ' + errorText(err)));
      }
    },
    REFRESH_MS,
    ctx.signal,
  );

  async function load() {
    const list = await listQueues(ctx.signal);
    queues.clear();
    for (const q of list) if (!filter || q.queue.includes(filter)) queues.set(q.queue, q);
    total = list.length;
    render();
    resubscribe();
  }

  // Rates decay without events: re-render the rate cells every second (no fetch).
  const timer = setInterval(() => {
    for (const [name, tr] of rows) {
      const cell = tr.querySelector('[data-testid="queue-rates"]');
      if (cell) cell.replaceWith(rateCells(name));
    }
  }, 1000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));

  try {
    await load();
  } catch (err) {
    if (err.name === 'AbortError') return;
    body.replaceChildren(notice(err.status === 403 ? 'This token may not list queues: it needs the read, agent or admin scope.' : errorText(err)));
  }
}

// ------------------------------------------------------------------- detail

async function mountDetail(root, ctx, name) {
  const message = h('div');
  const editor = h('div');
  const head = h('div.actions');
  const content = h('div', { id: 'queue-detail', dataset: { queue: name } }, loading());
  const tail = h('ol.event-tail', { id: 'queue-events', 'aria-label': 'Lifecycle events' });
  root.append(
    h('header.view-head', h('h1', h('a.crumb', { href: '#/queues' }, 'Queues'), ' / ', h('code', name)), head),
    message,
    editor,
    content,
    h('section.panel', h('h2', 'Live lifecycle events'), h('p.hint', { id: 'queue-events-empty' }, 'Waiting for events on sys:queue:' + name + '…'), tail),
  );
  const rates = new Rates();
  let stats = null;

  const closeEditor = () => editor.replaceChildren();

  async function act(button, fn) {
    message.replaceChildren();
    try {
      await busy(button, fn);
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
    }
  }

  function renderHead() {
    head.replaceChildren(
      ...[
      stats && stats.paused
        ? btn('Resume', { action: 'resume', onclick: (ev) => act(ev.currentTarget, async () => (await resume(name, ctx)) && refresh()) })
        : btn('Pause', { action: 'pause', onclick: (ev) => act(ev.currentTarget, async () => (await pause(name, ctx)) && refresh()) }),
      btn('Limits', {
        action: 'limits',
        onclick: () => editor.replaceChildren(limitsForm(name, stats && stats.limits, ctx, { onDone: () => (closeEditor(), refresh()), onCancel: closeEditor })),
      }),
      stats &&
        Number(stats.dead) > 0 &&
        btn('Redrive', {
          action: 'redrive',
          kind: 'danger',
          onclick: () => editor.replaceChildren(redriveForm(name, stats.dead, ctx, { onDone: () => (closeEditor(), refresh()), onCancel: closeEditor })),
        }),
      h('a.more-link', { href: '#/todos?queue=' + enc(name) }, 'Todos →'),
      ].filter(Boolean),
    );
  }

  function stateLink(label, key, state) {
    return [h('dt', label), h('dd', { dataset: { count: key } }, h('a', { href: '#/todos?queue=' + enc(name) + (state ? '&state=' + state : '') }, number(stats[key])))];
  }

  function render() {
    const s = stats;
    const r = rates.of(name);
    const l = s.limits;
    const v = s.vacuum;
    content.replaceChildren(
      h(
        'div.grid.detail-grid',
        h(
          'section.panel',
          h('h2', 'Depth ', pausedBadge(s.paused)),
          h(
            'dl.stat-list',
            stateLink('Pending, ready', 'pending_ready', 'TODO_STATE_PENDING'),
            stateLink('Pending, scheduled', 'pending_scheduled', 'TODO_STATE_PENDING'),
            stateLink('Running', 'running', 'TODO_STATE_RUNNING'),
            stateLink('Completed', 'completed', 'TODO_STATE_COMPLETED'),
            stateLink('Dead', 'dead', 'TODO_STATE_DEAD'),
            stateLink('Cancelled', 'cancelled', 'TODO_STATE_CANCELLED'),
            h('dt', 'Oldest pending'),
            h('dd', s.oldest_pending_age_seconds ? duration(s.oldest_pending_age_seconds) : '—'),
            s.paused && [h('dt', 'Paused since'), h('dd', ago(s.paused_at))],
          ),
        ),
        h(
          'section.panel',
          h('h2', 'Rates (last minute)'),
          h(
            'dl.stat-list',
            { dataset: { testid: 'queue-rates' } },
            h('dt', 'Enqueued'),
            h('dd', rate(r.enqueued) + '/s'),
            h('dt', 'Completed'),
            h('dd', rate(r.completed) + '/s'),
            h('dt', 'Failed'),
            h('dd', rate(r.failed) + '/s'),
          ),
          h('p.hint', 'Counted from the lifecycle events since this page opened.'),
        ),
        h(
          'section.panel',
          h('h2', 'Limits'),
          l
            ? h(
                'dl.stat-list',
                h('dt', 'Max running'),
                h('dd', l.max_running ? number(l.max_running) + ' (now ' + number(l.running) + ')' : 'no limit'),
                h('dt', 'Max running per key'),
                h('dd', l.key_max_running ? number(l.key_max_running) : 'no limit'),
                h('dt', 'Claims per second'),
                h('dd', l.rate_per_second ? number(l.rate_per_second) + ' (burst ' + number(l.rate_burst) + ')' : 'no limit'),
                h('dt', 'Per key'),
                h('dd', l.key_rate_per_second ? number(l.key_rate_per_second) + ' (burst ' + number(l.key_rate_burst) + ')' : 'no limit'),
                h('dt', 'Key patterns'),
                h(
                  'dd',
                  Array.isArray(l.key_patterns) && l.key_patterns.length
                    ? h('ul.setting-kv', l.key_patterns.map((kp) => h('li', h('code', kp.pattern), ' ', h('span.k', limitsText({ max_running: kp.max_running, rate_per_second: kp.rate_per_second, rate_burst: kp.rate_burst })))))
                    : 'none',
                ),
                h('dt', 'Set'),
                h('dd', time(l.updated_at)),
              )
            : h('p.hint', 'No limits: claims are not throttled.'),
        ),
        v
          ? h(
              'section.panel',
              { dataset: { testid: 'vacuum' } },
              h('h2', 'Vacuum health (todos table, every tenant)'),
              h(
                'dl.stat-list',
                h('dt', 'Live tuples'),
                h('dd', number(v.live_tuples)),
                h('dt', 'Dead tuples'),
                h('dd', { className: Number(v.dead_tuples) > Number(v.live_tuples) ? 'count-bad' : '' }, number(v.dead_tuples)),
                h('dt', 'Oldest transaction'),
                h('dd', { className: v.oldest_transaction_age_seconds > 300 ? 'count-bad' : '' }, v.oldest_transaction_age_seconds ? duration(v.oldest_transaction_age_seconds) : 'none open'),
                h('dt', 'Last autovacuum'),
                h('dd', v.last_autovacuum ? ago(v.last_autovacuum) : 'never'),
                h('dt', 'Last vacuum'),
                h('dd', v.last_vacuum ? ago(v.last_vacuum) : 'never'),
              ),
              h('p.hint', 'A dead-tuple count that keeps growing, or a transaction open for minutes, means vacuum is blocked and claims slow down.'),
            )
          : null,
      ),
    );
    renderHead();
  }

  async function refresh() {
    try {
      stats = await api.get('api/queues/' + enc(name) + '/stats', undefined, ctx.signal);
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      (stats ? message : content).replaceChildren(notice(err.status === 403 ? 'This token may not read queue stats.' : errorText(err)));
    }
  }
  const stale = debouncer(refresh, REFRESH_MS, ctx.signal);

  const timer = setInterval(() => stats && !editor.childElementCount && render(), 5000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));

  await refresh();
  follow(['sys:queue:' + name], {
    ctx,
    marker: content,
    onEvent(ev) {
      rates.add(name, ev.kind);
      document.getElementById('queue-events-empty')?.remove();
      const p = ev.payload || {};
      tail.prepend(
        h(
          'li',
          h('code.kind', ev.kind),
          p.todo_id ? [' ', h('a', { href: '#/todos/' + enc(String(p.todo_id)) }, 'todo ' + p.todo_id)] : null,
          p.state ? [' → ', h('span', String(p.state))] : null,
          ' ',
          h('small.hint', time(ev.created_at)),
        ),
      );
      while (tail.childElementCount > 50) tail.lastElementChild.remove();
      stale(name);
    },
  });
}
