// Todos: a filterable, paginated list of the tenant's todos
// (#/todos?queue=&state=&kind=&event_id=&created_after=&created_before=)
// and one todo in full (#/todos/<id>) with its errors per attempt, live
// progress and the actions its state allows (cancel, redrive, retry now).
//
// The filters live in the URL, so a filtered list is a link. kind, event_id
// and the created range are newer ListTodos fields: a server that does not
// know them either ignores them or answers 400; the view then asks without
// them and applies them to the rows it shows itself, and says so.
import * as api from '../lib/api.js';
import { ago, errorText, field, h, json, notice, number, table, time } from '../lib/dom.js';
import { TODO_STATES, btn, busy, debouncer, eventTodoId, follow, excerpt, fromLocalInput, loading, localInput, stateBadge, stateName, until } from './queue-common.js';

const PAGE_SIZE = 50;
const NEW_FILTERS = ['kind', 'event_id', 'created_after', 'created_before'];
const enc = encodeURIComponent;

export async function mount(root, ctx) {
  if (ctx.path.length) return mountDetail(root, ctx, ctx.path[0]);
  return mountList(root, ctx);
}

// --------------------------------------------------------------------- list

function filtersOf(params) {
  const f = {};
  for (const k of ['queue', 'state', ...NEW_FILTERS]) {
    const v = (params.get(k) || '').trim();
    if (v) f[k] = v;
  }
  if (f.state && !f.state.startsWith('TODO_STATE_')) f.state = 'TODO_STATE_' + f.state.toUpperCase();
  return f;
}

// matches applies the newer filters in the browser, for a server that
// ignored them (an older node): harmless when the server applied them too.
function matches(t, f) {
  if (f.kind && t.kind !== f.kind) return false;
  if (f.event_id && String(t.event_id) !== String(f.event_id)) return false;
  const created = Date.parse(t.created_at || '');
  if (f.created_after && Number.isFinite(created) && created < Date.parse(f.created_after)) return false;
  if (f.created_before && Number.isFinite(created) && created >= Date.parse(f.created_before)) return false;
  return true;
}

async function mountList(root, ctx) {
  const f = filtersOf(ctx.params);
  const message = h('div', { id: 'todos-message' });
  const list = h('div', { id: 'todos' }, loading('Loading todos…'));
  const more = btn('Load more', { action: 'load-more' });
  more.hidden = true;
  const countEl = h('span.size', { id: 'todo-count' });

  // Filters form: submitting navigates, so the filters become the URL.
  const queueSel = h('select', { name: 'queue', dataset: { testid: 'filter-queue' } }, h('option', { value: '' }, 'every queue'), f.queue && h('option', { value: f.queue, selected: true }, f.queue));
  const stateSel = h(
    'select',
    { name: 'state', dataset: { testid: 'filter-state' } },
    h('option', { value: '' }, 'any state'),
    TODO_STATES.map((s) => h('option', { value: s, selected: s === f.state }, stateName(s))),
  );
  const kindIn = h('input', { name: 'kind', value: f.kind || '', placeholder: 'any kind', dataset: { testid: 'filter-kind' } });
  const eventIn = h('input', { name: 'event_id', inputmode: 'numeric', value: f.event_id || '', placeholder: 'any', dataset: { testid: 'filter-event' } });
  const afterIn = h('input', { name: 'created_after', type: 'datetime-local', value: localInput(f.created_after), dataset: { testid: 'filter-after' } });
  const beforeIn = h('input', { name: 'created_before', type: 'datetime-local', value: localInput(f.created_before), dataset: { testid: 'filter-before' } });
  const form = h(
    'form.toolbar',
    { id: 'todo-filters', 'aria-label': 'Filters' },
    field('Queue', queueSel),
    field('State', stateSel),
    field('Kind', kindIn),
    field('Event id', eventIn),
    field('Created after', afterIn),
    field('Created before', beforeIn),
    btn('Apply', { kind: 'primary', type: 'submit', action: 'apply-filters' }),
    btn('Clear', { action: 'clear-filters', onclick: () => ctx.navigate({}) }),
  );
  const apply = () => {
    if (eventIn.value.trim() && !/^\d+$/.test(eventIn.value.trim())) {
      message.replaceChildren(notice('The event id is a whole number.'));
      return;
    }
    const after = fromLocalInput(afterIn.value);
    const before = fromLocalInput(beforeIn.value);
    if (after && before && after > before) {
      message.replaceChildren(notice('"Created after" must not be later than "created before".'));
      return;
    }
    ctx.navigate({
      queue: queueSel.value,
      state: stateSel.value,
      kind: kindIn.value.trim(),
      event_id: eventIn.value.trim(),
      created_after: after,
      created_before: before,
    });
  };
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    apply();
  });
  // Selecting a queue or state applies at once (the common case).
  queueSel.addEventListener('change', apply);
  stateSel.addEventListener('change', apply);

  // On the dead todos of one queue, redriving them all is one click away.
  const headActions = h('div.actions');
  if (f.queue && f.state === 'TODO_STATE_DEAD') {
    headActions.append(
      btn('Redrive all dead of ' + f.queue, {
        action: 'redrive-all',
        kind: 'danger',
        onclick: async (ev) => {
          if (!window.confirm('Move every dead todo of "' + f.queue + '" back to pending, runnable now?')) return;
          try {
            const res = await busy(ev.currentTarget, () => api.post('api/queues/' + enc(f.queue) + ':redrive', { limit: 0 }, ctx.signal));
            ctx.toast('Redrove ' + number(res.redriven_count || 0) + ' todos of ' + f.queue);
            ctx.navigate({ ...f });
          } catch (err) {
            if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
          }
        },
      }),
    );
  }
  root.append(h('header.view-head', h('h1', 'Todos ', countEl), headActions), form, message, list, h('div.load-more', more));

  // The queue choices come from ListQueues (first page is plenty for a select).
  const queueNames = api
    .get('api/queues', { page_size: 100 }, ctx.signal)
    .then((body) => {
      const names = (body.queues || []).map((q) => q.queue);
      for (const n of names) if (n !== f.queue) queueSel.append(h('option', { value: n }, n));
      return names;
    })
    .catch(() => []); // the list itself reports access problems

  const shown = [];
  let token = '';
  let serverFilters = NEW_FILTERS.some((k) => f[k]); // false once the server refused them
  let clientFiltered = false;

  const columns = [
    { label: 'Id', className: 'mono', cell: (t) => h('a', { href: '#/todos/' + enc(t.id), dataset: { testid: 'todo-link' } }, '#' + t.id) },
    { label: 'Queue', cell: (t) => h('a', { href: '#/queues/' + enc(t.queue) }, t.queue) },
    { label: 'Kind', className: 'mono', cell: (t) => t.kind || '—' },
    { label: 'State', cell: (t) => stateBadge(t.state) },
    { label: 'Attempt', className: 'num', cell: (t) => number(t.attempt) + '/' + number(t.max_attempts) },
    { label: 'Run at', cell: (t) => until(t.run_at) },
    { label: 'Created', cell: (t) => ago(t.created_at) },
    { label: 'Last error', className: 'error-cell', cell: (t) => (t.last_error ? h('span.error-text', { title: t.last_error }, excerpt(t.last_error, 90)) : '') },
  ];

  function render() {
    countEl.textContent = shown.length ? '(' + shown.length + (token ? '+' : '') + ')' : '';
    const hint = Object.keys(f).length
      ? 'No todos match these filters. Clear them, or widen the time range.'
      : 'No todos yet. Enqueue one (POST api/queues/<queue>/todos), route a webhook to a queue, or create a schedule.';
    const t = table(columns, shown, { label: 'Todos', empty: hint, onRow: (r) => ctx.navigate('#/todos/' + enc(r.id)) });
    for (const [i, tr] of [...t.querySelectorAll('tbody tr')].entries()) {
      tr.dataset.testid = 'todo-row';
      tr.dataset.id = shown[i].id;
      tr.dataset.state = stateName(shown[i].state);
    }
    if (!shown.length) t.dataset.testid = 'todos-empty';
    list.replaceChildren(t);
    more.hidden = !token;
  }

  async function page() {
    const q = { queue: f.queue, state: f.state, page_size: PAGE_SIZE, page_token: token };
    if (serverFilters) for (const k of NEW_FILTERS) q[k] = f[k];
    let body;
    try {
      body = await api.get('api/todos', q, ctx.signal);
    } catch (err) {
      // An older server refuses the fields it does not know: ask without them.
      if (err.status === 400 && serverFilters && !token && /unknown|unrecognized|no such field|not found in message/i.test(err.message)) {
        serverFilters = false;
        return page();
      }
      throw err;
    }
    const todos = body.todos || [];
    const kept = todos.filter((t) => matches(t, f));
    if (kept.length < todos.length) clientFiltered = true;
    shown.push(...kept);
    token = body.next_page_token || '';
    if (!serverFilters && NEW_FILTERS.some((k) => f[k])) clientFiltered = true;
    if (clientFiltered) {
      message.replaceChildren(
        notice('This server does not filter by kind, event id or creation time yet: the rows below were filtered in the browser, page by page, so a page may show fewer rows. Load more to look further.', 'info'),
      );
    }
  }

  more.addEventListener('click', async () => {
    try {
      await busy(more, page);
      render();
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
    }
  });

  try {
    await page();
    // Filtered in the browser, a page can come back empty while older
    // pages hold matches: look a few pages further before saying "none".
    for (let i = 0; i < 4 && clientFiltered && !shown.length && token; i++) await page();
    render();
  } catch (err) {
    if (err.name === 'AbortError') return;
    list.replaceChildren(notice(err.status === 403 ? 'This token may not list todos: it needs the read, agent or admin scope.' : errorText(err)));
    return;
  }

  // Live: the lifecycle channels of the filtered queue (or of the first 100
  // queues). A shown todo that changes is re-read in place; new todos are
  // counted in a banner that reloads the list, so rows never jump under the
  // reader's pointer.
  const names = f.queue ? [f.queue] : (await queueNames).slice(0, 100);
  if (!names.length || ctx.signal.aborted) return;
  let fresh = 0;
  const banner = h('button.btn.new-todos', { type: 'button', hidden: true, dataset: { testid: 'new-todos' }, onclick: () => ctx.navigate({ ...f }) });
  list.before(banner);
  const reread = debouncer(
    async (ids) => {
      const batch = [...ids].slice(0, 20);
      try {
        const todos = await Promise.all(batch.map((id) => api.get('api/todos/' + enc(id), undefined, ctx.signal).then((b) => b.todo, (e) => (e.status === 404 ? null : Promise.reject(e)))));
        batch.forEach((id, i) => {
          const at = shown.findIndex((t) => String(t.id) === id);
          if (at < 0) return;
          if (todos[i]) shown[at] = todos[i];
          else shown.splice(at, 1); // removed (remove_on_complete, retention)
        });
        render();
      } catch (err) {
        if (err.name !== 'AbortError') message.replaceChildren(notice('Could not refresh: ' + errorText(err)));
      }
    },
    300,
    ctx.signal,
  );
  follow(
    names.map((n) => 'sys:queue:' + n),
    {
      ctx,
      marker: list,
      onEvent(ev) {
        const id = eventTodoId(ev);
        if (!id) return;
        if (shown.some((t) => String(t.id) === id)) reread(id);
        else if (ev.kind === 'todo.enqueued' && (!f.state || f.state === 'TODO_STATE_PENDING') && (!f.kind || ev.payload?.kind === undefined || ev.payload.kind === f.kind)) {
          fresh++;
          banner.textContent = fresh + (fresh === 1 ? ' new todo' : ' new todos') + ' — show';
          banner.hidden = false;
        }
      },
    },
  );
}

// ------------------------------------------------------------------- detail

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

async function mountDetail(root, ctx, id) {
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
      (s === 'dead' || s === 'cancelled') &&
        btn('Redrive', {
          action: 'redrive',
          kind: 'primary',
          onclick: (ev) =>
            act(ev.currentTarget, 'Redriven', async () => {
              const res = await api.post('api/queues/' + enc(todo.queue) + ':redrive', { ids: [String(id)] }, ctx.signal);
              if (!Number(res.redriven_count)) throw new Error('Nothing was redriven: the server redrives dead todos only (this one is ' + stateName(todo.state) + ').');
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
