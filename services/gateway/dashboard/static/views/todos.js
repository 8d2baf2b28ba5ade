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
import { ago, errorText, field, h, notice, number, table, time } from '../lib/dom.js';
import { TODO_STATES, btn, busy, debouncer, eventTodoId, follow, excerpt, fromLocalInput, loading, localInput, stateBadge, stateName, until } from './queue-common.js';
import { mountDetail } from './todo-detail.js';

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
