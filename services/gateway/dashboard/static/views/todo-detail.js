// One todo's page (#/todos/<id>): the todo in full with its errors per
// attempt, live progress and the actions its state allows (cancel, redrive,
// retry now). Not a view: todos.js mounts it.
import * as api from '../lib/api.js';
import { ago, errorText, h, json, notice, number, time } from '../lib/dom.js';
import { btn, busy, debouncer, eventTodoId, follow, loading, stateBadge, stateName, until } from './queue-common.js';

const enc = encodeURIComponent;

/** traceId is the trace-id part of a W3C traceparent ("00-<trace>-<span>-<flags>"). */
function traceId(tp) {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/i.exec(String(tp || ''));
  return m ? m[1] : '';
}

// progressBar draws {done, total} (or {current, total}, {percent}) when the
// worker reports numbers in one of those shapes; nothing otherwise.
function progressBar(p) {
  let value;
  let max = 100;
  const done = Number(p.done ?? p.current ?? p.completed);
  const total = Number(p.total);
  if (Number.isFinite(done) && Number.isFinite(total) && total > 0) {
    value = Math.min(done, total);
    max = total;
  } else if (Number.isFinite(Number(p.percent))) {
    value = Math.max(0, Math.min(100, Number(p.percent)));
  } else {
    return null;
  }
  return h('div.progress-row', h('progress', { value: String(value), max: String(max), dataset: { testid: 'progress-bar' } }), h('span', number(Math.round((value / max) * 100)) + '%'));
}

function dl(pairs) {
  return h(
    'dl.stat-list',
    pairs.filter(Boolean).map(([k, v, testid]) => [h('dt', k), h('dd', { dataset: testid ? { testid } : undefined }, v === '' || v === null || v === undefined ? '—' : v)]),
  );
}

export async function mountDetail(root, ctx, id) {
  const message = h('div', { id: 'todo-message' });
  const actions = h('div.actions', { id: 'todo-actions' });
  const content = h('div', { id: 'todo-detail', dataset: { id } }, loading('Loading todo #' + id + '…'));
  root.append(h('header.view-head', h('h1', h('a.crumb', { href: '#/todos' }, 'Todos'), ' / ', h('code', '#' + id)), actions), message, content);

  let todo = null;

  async function act(button, label, fn) {
    message.replaceChildren();
    try {
      const res = await busy(button, fn);
      if (res && res.todo) todo = res.todo;
      else await load();
      render();
      ctx.toast(label + ': todo #' + id + ' is now ' + stateName(todo.state));
    } catch (err) {
      if (err.name === 'AbortError') return;
      let text = errorText(err);
      if (err.status === 412 || err.code === 9) text = 'Not possible in this state: ' + err.message;
      if (err.status === 405 || err.status === 501) text = 'This server does not offer that action yet (' + err.message + ').';
      message.replaceChildren(notice(text));
    }
  }

  function renderActions() {
    const s = stateName(todo.state);
    const future = Date.parse(todo.run_at) > Date.now();
    actions.replaceChildren(
      ...[
      (s === 'pending' || s === 'running') &&
        btn('Cancel', {
          action: 'cancel',
          kind: 'danger',
          onclick: (ev) => {
            if (!window.confirm('Cancel todo #' + id + '? ' + (s === 'running' ? 'Its worker learns it on its next heartbeat.' : 'It will not run.'))) return;
            act(ev.currentTarget, 'Cancelled', () => api.post('api/todos/' + enc(id) + ':cancel', { reason: 'cancelled from the console' }, ctx.signal));
          },
        }),
      s === 'dead' &&
        btn('Redrive', {
          action: 'redrive',
          kind: 'primary',
          onclick: (ev) =>
            act(ev.currentTarget, 'Redriven', async () => {
              const res = await api.post('api/queues/' + enc(todo.queue) + ':redrive', { ids: [String(id)] }, ctx.signal);
              if (!Number(res.redriven_count)) throw new Error('Nothing was redriven: the todo is no longer dead.');
              return null; // re-read the todo
            }),
        }),
      s === 'pending' &&
        future &&
        btn('Retry now', {
          action: 'retry',
          kind: 'primary',
          title: 'Make it runnable now instead of at ' + time(todo.run_at),
          onclick: (ev) => act(ev.currentTarget, 'Retried', () => api.post('api/todos/' + enc(id) + ':retry', {}, ctx.signal)),
        }),
      h('a.more-link', { href: '#/todos?queue=' + enc(todo.queue) }, 'Queue\'s todos →'),
      ].filter(Boolean),
    );
  }

  function render() {
    const t = todo;
    const errors = Array.isArray(t.errors) ? t.errors : [];
    const tid = traceId(t.trace_parent);
    const s = stateName(t.state);
    content.dataset.state = s;
    content.replaceChildren(
      h(
        'div.grid.detail-grid',
        h(
          'section.panel',
          h('h2', 'Todo ', stateBadge(t.state)),
          dl([
            ['Queue', h('a', { href: '#/queues/' + enc(t.queue) }, t.queue)],
            ['Kind', t.kind ? h('code', t.kind) : ''],
            ['Attempt', number(t.attempt) + ' of ' + number(t.max_attempts), 'todo-attempt'],
            ['Priority', String(t.priority ?? '')],
            ['Run at', [time(t.run_at), ' ', h('small.hint', until(t.run_at))]],
            ['Created', time(t.created_at)],
            ['Last claimed', t.attempted_at ? time(t.attempted_at) : ''],
            ['Finished', t.finished_at ? time(t.finished_at) : ''],
            ['Event', Number(t.event_id) ? h('a', { href: '#/events/' + enc(t.event_id), dataset: { testid: 'todo-event' } }, 'event #' + t.event_id) : ''],
            ['Agent', t.agent_id ? h('code', t.agent_id) : ''],
          ]),
        ),
        h(
          'section.panel',
          h('h2', 'Lease and keys'),
          dl([
            ['Lease owner', t.lease_owner ? h('code', t.lease_owner) : ''],
            ['Lease expires', t.lease_expires_at ? [time(t.lease_expires_at), ' ', h('small.hint', until(t.lease_expires_at))] : ''],
            ['Lease expiries', number(t.lease_expiries || 0)],
            ['Dedupe key', t.dedupe_key ? h('code', t.dedupe_key) : ''],
            ['Concurrency key', t.concurrency_key ? h('code', t.concurrency_key) : ''],
            ['Remove on complete', t.remove_on_complete ? 'yes' : 'no'],
            ['Traceparent', t.trace_parent ? h('code', { dataset: { testid: 'traceparent' } }, t.trace_parent) : ''],
            ['Trace id', tid ? h('code', { dataset: { testid: 'trace-id' } }, tid) : ''],
          ]),
        ),
      ),
      h(
        'section.panel',
        { dataset: { testid: 'todo-progress' } },
        h('h2', 'Progress ', t.progress_at ? h('small.hint', 'reported ', ago(t.progress_at)) : null),
        t.progress ? [progressBar(t.progress), json(t.progress)] : h('p.hint', 'No progress reported for this attempt. Workers report it with their heartbeats; it shows here live.'),
      ),
      h(
        'section.panel',
        h('h2', 'Errors per attempt (' + errors.length + ')'),
        errors.length
          ? h(
              'ol.errors',
              { dataset: { testid: 'todo-errors' } },
              errors.map((e) =>
                h('li', { dataset: { testid: 'todo-error', attempt: String(e.attempt) } }, h('div.error-head', h('strong', 'Attempt ' + e.attempt), ' ', h('small.hint', time(e.at))), h('pre.code', h('code', e.error || ''))),
              ),
            )
          : h('p.hint', 'No failed attempts.'),
        t.last_error && !errors.length ? [h('h3', 'Last error'), h('pre.code', h('code', t.last_error))] : null,
      ),
      h('section.panel', h('h2', 'Payload'), t.payload ? json(t.payload) : h('p.hint', 'No payload (it could not be delivered; see the last error).')),
      h('section.panel', h('h2', 'Result'), t.result ? json(t.result) : h('p.hint', s === 'completed' ? 'Completed without a result.' : 'No result yet.')),
    );
    renderActions();
  }

  async function load() {
    const body = await api.get('api/todos/' + enc(id), undefined, ctx.signal);
    todo = body.todo;
  }

  try {
    await load();
    render();
  } catch (err) {
    if (err.name === 'AbortError') return;
    content.replaceChildren(
      notice(err.status === 404 ? 'No todo #' + id + ' in this tenant (it may have been removed by retention, or completed with remove_on_complete).' : errorText(err)),
    );
    return;
  }

  // Live: progress on sys:todo:<id>; state changes on sys:queue:<queue>
  // (only this todo's events count). Each refetches the todo, debounced.
  const refetch = debouncer(
    async () => {
      try {
        await load();
        render();
      } catch (err) {
        if (err.name !== 'AbortError') message.replaceChildren(notice('Could not refresh: ' + errorText(err)));
      }
    },
    250,
    ctx.signal,
  );
  follow(['sys:todo:' + id, 'sys:queue:' + todo.queue], {
    ctx,
    marker: content,
    onEvent(ev) {
      if (eventTodoId(ev) === String(id)) refetch(id);
    },
  });
}
