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
import { duration, errorText, h, notice, number, table } from '../lib/dom.js';
import { REFRESH_MS, Rates, btn, busy, debouncer, follow, loading, rate } from './queue-common.js';
import { limitsForm, limitsText, pause, pausedBadge, redriveForm, resume } from './queue-actions.js';
import { mountDetail } from './queue-detail.js';

const MAX_CHANNELS = 100;
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
