// Events: the tenant's event history (IngestService) and one event.
//
//   #/events?endpoint_id=&source=&topic=&received_after=&received_before=
//        ListEvents, newest first, one page at a time; events that arrive
//        while the page is open are announced on sys:ingest (event.received)
//        and prepended when they match the filters (read with GetEvent)
//   #/events/<id>
//        GetEvent: metadata, the payload (pretty JSON, raw text or a hex
//        dump), headers, the todos it made (ListTodos event_id) and Replay
import * as api from '../lib/api.js';
import { ago, badge, bytes, decodeBase64, enumName, errorText, field, h, hexdump, notice, number, table, time } from '../lib/dom.js';
import { follow } from './endpoints.js';

const PAGE_SIZE = 50;
const eventUrl = (id) => 'api/events/' + encodeURIComponent(id);

const TODO_STATE_KIND = { pending: 'info', running: 'warn', completed: 'ok', dead: 'bad', cancelled: 'muted' };

// names: endpoint and adapter names by id, for the source column.
async function loadNames(signal) {
  const names = { endpoints: [], adapters: [], endpoint: new Map(), adapter: new Map(), errors: [] };
  const [eps, ads] = await Promise.allSettled([
    api.get('api/admin/endpoints', { page_size: 1000 }, signal),
    api.get('api/admin/adapters', { page_size: 1000 }, signal),
  ]);
  if (eps.status === 'fulfilled') names.endpoints = eps.value.endpoints || [];
  else names.errors.push(eps.reason);
  if (ads.status === 'fulfilled') names.adapters = ads.value.adapters || [];
  else names.errors.push(ads.reason);
  for (const e of names.endpoints) names.endpoint.set(e.id, e.name || e.url_path || e.id);
  for (const a of names.adapters) names.adapter.set(a.id, a.name || a.id);
  return names;
}

function sourceCell(ev, names) {
  const src = String(ev.source || '');
  const [kind, id = ''] = src.split(':');
  if (kind === 'endpoint') {
    const name = names.endpoint.get(id);
    return h('span.source', badge('endpoint', 'info'), ' ', id ? h('a', { href: '#/endpoints/' + encodeURIComponent(id), title: id }, name || id.slice(0, 8) + '…') : '(deleted)');
  }
  if (kind === 'adapter') return h('span.source', badge('adapter', 'warn'), ' ', h('span', { title: id }, names.adapter.get(id) || id.slice(0, 8) + '…'));
  if (kind === 'publish') return h('span.source', badge('publish', 'muted'));
  return src || '—';
}

// The datetime-local inputs speak local time without a zone; the API wants
// RFC 3339.
function toRfc3339(local) {
  if (!local) return undefined;
  const ms = Date.parse(local);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}
function toLocalInput(rfc) {
  const ms = Date.parse(rfc || '');
  if (!Number.isFinite(ms)) return '';
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

// ------------------------------------------------------------------ list

async function mountList(root, ctx) {
  const p = ctx.params;
  const filters = {
    endpoint_id: p.get('endpoint_id') || '',
    source: p.get('source') || '',
    topic: p.get('topic') || '',
    received_after: p.get('received_after') || '',
    received_before: p.get('received_before') || '',
    todo_state: p.get('todo_state') || '',
  };
  const endpointSel = h('select', { name: 'endpoint_id', id: 'filter-endpoint' }, h('option', { value: '' }, 'any endpoint'));
  const sourceSel = h(
    'select',
    { name: 'source', id: 'filter-source' },
    h('option', { value: '' }, 'any source'),
    h('option', { value: 'publish', selected: filters.source === 'publish' }, 'published (PublishEvent)'),
  );
  const topic = h('input', { name: 'topic', id: 'filter-topic', value: filters.topic, placeholder: 'push', maxlength: 255 });
  const todoState = h(
    'select',
    { name: 'todo_state', id: 'filter-todo-state' },
    h('option', { value: '' }, 'any'),
    ['PENDING', 'RUNNING', 'COMPLETED', 'DEAD', 'CANCELLED'].map((st) => h('option', { value: 'TODO_STATE_' + st, selected: filters.todo_state === 'TODO_STATE_' + st }, st.toLowerCase())),
  );
  const after = h('input', { type: 'datetime-local', name: 'received_after', id: 'filter-after', value: toLocalInput(filters.received_after) });
  const before = h('input', { type: 'datetime-local', name: 'received_before', id: 'filter-before', value: toLocalInput(filters.received_before) });
  const form = h(
    'form.toolbar',
    { id: 'event-filters', 'aria-label': 'Filters' },
    field('Endpoint', endpointSel),
    field('Source', sourceSel),
    field('Topic', topic),
    field('Todo state', todoState),
    field('Received after', after),
    field('Received before', before),
    h('button.btn.primary', { type: 'submit', dataset: { action: 'filter' } }, 'Apply'),
    h('button.btn', { type: 'button', dataset: { action: 'clear-filters' }, onclick: () => ctx.navigate({}) }, 'Clear'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate({
      endpoint_id: endpointSel.value,
      source: sourceSel.value,
      topic: topic.value.trim(),
      received_after: toRfc3339(after.value),
      received_before: toRfc3339(before.value),
      todo_state: todoState.value,
    });
  });
  const count = h('span.size', { id: 'event-count' });
  const bulk = h('button.btn', { type: 'button', id: 'replay-matching', dataset: { action: 'replay-matching' } }, 'Replay matching…');
  // ReplayEvents filters by endpoint, adapter, topic and time, not by
  // todo state or the publish source: those filters cannot be replayed in bulk.
  const bulkBlocked = filters.todo_state ? 'todo state' : filters.source === 'publish' ? 'the publish source' : '';
  if (bulkBlocked) {
    bulk.disabled = true;
    bulk.title = 'Bulk replay cannot filter by ' + bulkBlocked + '; replay events one by one from their pages.';
  }
  bulk.addEventListener('click', replayMatching);
  const message = h('div');
  const namesNote = h('div');
  const body = h('div', { id: 'events-body' }, h('p.empty', 'Loading events…'));
  const more = h('button.btn', { type: 'button', hidden: true, dataset: { action: 'more' } }, 'Load more');
  root.append(h('header.view-head', h('h1', 'Events'), h('div.actions', count, bulk)), form, message, namesNote, body, h('div.toolbar', more));

  let names = { endpoints: [], adapters: [], endpoint: new Map(), adapter: new Map(), errors: [] };
  const namesReady = loadNames(ctx.signal).then((n) => {
    names = n;
    for (const e of n.endpoints) endpointSel.append(h('option', { value: e.id, selected: e.id === filters.endpoint_id }, e.name || e.url_path || e.id));
    if (filters.endpoint_id && !n.endpoint.has(filters.endpoint_id)) endpointSel.append(h('option', { value: filters.endpoint_id, selected: true }, filters.endpoint_id));
    if (n.adapters.length) {
      sourceSel.append(h('optgroup', { label: 'adapters' }, n.adapters.map((a) => h('option', { value: 'adapter:' + a.id, selected: filters.source === 'adapter:' + a.id }, a.name || a.id))));
    }
    if (filters.source.startsWith('adapter:') && !n.adapter.has(filters.source.slice(8))) sourceSel.append(h('option', { value: filters.source, selected: true }, filters.source));
    if (n.errors.length) namesNote.replaceChildren(notice('Endpoint or adapter names are unavailable, so sources show ids: ' + errorText(n.errors[0]), 'info'));
  });

  let events = [];
  const seen = new Set();
  let token = '';
  let loaded = false;
  const columns = [
    { label: 'Id', className: 'num', cell: (e) => h('a', { href: '#/events/' + encodeURIComponent(e.id) }, '#' + e.id) },
    { label: 'Received', cell: (e) => ago(e.received_at) },
    { label: 'Source', cell: (e) => sourceCell(e, names) },
    { label: 'Topic', cell: (e) => (e.topic ? h('code', e.topic) : h('span.muted', 'none')) },
    { label: 'Delivery id', className: 'mono', cell: (e) => e.delivery_id || '—' },
    { label: 'Size', className: 'num', cell: (e) => bytes(e.size_bytes) },
    { label: 'Replays', className: 'num', cell: (e) => number(e.replay_count || 0) },
  ];
  const fresh = new Set();
  function render() {
    const hint = Object.values(filters).some(Boolean)
      ? 'No events match these filters. Clear them, or widen the time range.'
      : 'No events yet. Create an endpoint and give its URL to a provider, or publish one with POST api/events: it appears here as it arrives.';
    const t = table(columns, events, { label: 'Events', empty: hint, onRow: (e) => ctx.navigate('#/events/' + encodeURIComponent(e.id)) });
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      tr.setAttribute('data-testid', 'event-row');
      tr.dataset.eventId = String(events[i].id);
      if (fresh.has(String(events[i].id))) tr.classList.add('fresh');
    });
    body.replaceChildren(t);
    more.hidden = !token;
    count.textContent = events.length ? number(events.length) + (token ? '+' : '') + (events.length === 1 && !token ? ' event' : ' events') : '';
  }

  function query() {
    return {
      endpoint_id: filters.endpoint_id,
      source: filters.source,
      topic: filters.topic,
      received_after: filters.received_after,
      received_before: filters.received_before,
      todo_state: filters.todo_state,
      page_size: PAGE_SIZE,
      page_token: token || undefined,
    };
  }
  async function load() {
    more.disabled = true;
    try {
      const res = await api.get('api/events', query(), ctx.signal);
      for (const e of res.events || []) {
        if (seen.has(String(e.id))) continue;
        seen.add(String(e.id));
        events.push(e);
      }
      token = res.next_page_token || '';
      loaded = true;
      await namesReady.catch(() => {});
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      body.replaceChildren(notice(err.status === 403 ? 'This token may not read events: ' + err.message : err.status === 400 ? 'These filters are not valid: ' + err.message : errorText(err)));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', load);

  // replayMatching replays (ReplayEvents) up to 1000 events matching the
  // filters, oldest first, after a confirmation naming the filters.
  let bulkAfter = 0; // after a partial bulk replay: where the next one continues
  let bulkKey = '';
  async function replayMatching() {
    const described = [
      filters.endpoint_id && 'endpoint ' + (names.endpoint.get(filters.endpoint_id) || filters.endpoint_id),
      filters.source && 'source ' + filters.source,
      filters.topic && 'topic ' + filters.topic,
      filters.received_after && 'received after ' + time(filters.received_after),
      filters.received_before && 'received before ' + time(filters.received_before),
    ].filter(Boolean);
    const what = described.length ? 'the events matching ' + described.join(', ') : 'EVERY event';
    const next = bulkAfter ? ' after event #' + bulkAfter : '';
    if (!window.confirm('Replay ' + what + next + ' (up to 1000, oldest first)? Each gets new todos as if it had just arrived.')) return;
    if (!bulkAfter) bulkKey = 'console-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 8);
    const req = { limit: 1000, replay_key: bulkKey, after_id: bulkAfter || undefined };
    if (filters.endpoint_id) req.endpoint_id = filters.endpoint_id;
    if (filters.source.startsWith('adapter:')) req.adapter_id = filters.source.slice(8);
    if (filters.source.startsWith('endpoint:')) req.endpoint_id = filters.source.slice(9);
    if (filters.topic) req.topic = filters.topic;
    if (filters.received_after) req.received_after = filters.received_after;
    if (filters.received_before) req.received_before = filters.received_before;
    bulk.disabled = true;
    try {
      const res = await api.post('api/events:replay', req, ctx.signal);
      const n = (k) => Number(res[k] || 0);
      const parts = [number(n('replayed')) + ' replayed'];
      if (n('already_replayed')) parts.push(number(n('already_replayed')) + ' already replayed');
      if (n('skipped_pruned')) parts.push(number(n('skipped_pruned')) + ' skipped (payload pruned)');
      if (n('skipped_no_target')) parts.push(number(n('skipped_no_target')) + ' skipped (nowhere to send them)');
      bulkAfter = res.more ? Number(res.last_event_id) || 0 : 0;
      bulk.textContent = bulkAfter ? 'Replay the next 1000…' : 'Replay matching…';
      if (res.more) parts.push('more may match: "Replay the next 1000" continues after event #' + res.last_event_id);
      message.replaceChildren(notice('Bulk replay: ' + parts.join(', ') + '.', 'ok'));
      ctx.toast('Replayed ' + number(n('replayed')) + (n('replayed') === 1 ? ' event.' : ' events.'));
    } catch (err) {
      if (err.name === 'AbortError') return;
      message.replaceChildren(notice(err.status === 403 ? 'This token may not replay events: ' + err.message : errorText(err)));
    } finally {
      bulk.disabled = !!bulkBlocked;
    }
  }

  // matches says whether an event announced on sys:ingest belongs on this
  // page; GetEvent reads it in full (the announcement has ids only).
  function matches(p) {
    if (filters.endpoint_id && p.source !== 'endpoint:' + filters.endpoint_id) return false;
    if (filters.source && p.source !== filters.source) return false;
    if (filters.topic && p.topic !== filters.topic) return false;
    if (filters.received_before && Date.parse(filters.received_before) <= Date.now()) return false;
    // A new event's todo is pending (or it has none): other states cannot match yet.
    if (filters.todo_state && filters.todo_state !== 'TODO_STATE_PENDING') return false;
    return true;
  }
  // Announced events are read in batches at most about three times a
  // second: a few with GetEvent each, a burst with one ListEvents page.
  const pending = new Set();
  const tries = new Map(); // id → reads that did not find it yet
  let flushTimer = 0;
  ctx.signal.addEventListener('abort', () => clearTimeout(flushTimer));
  function arrived(p) {
    const id = String(p.event_id ?? '');
    if (!id || seen.has(id) || pending.has(id) || !matches(p)) return;
    pending.add(id);
    if (!flushTimer) flushTimer = setTimeout(flush, 300);
  }
  async function flush() {
    const ids = [...pending];
    pending.clear();
    try {
      let got;
      if (ids.length <= 10) {
        got = await Promise.all(ids.map((id) => api.get(eventUrl(id), undefined, ctx.signal).then((r) => r.event, () => null)));
      } else {
        const res = await api.get('api/events', { ...query(), page_token: undefined, page_size: Math.min(1000, ids.length + 10) }, ctx.signal);
        const want = new Set(ids);
        got = (res.events || []).filter((e) => want.has(String(e.id)));
      }
      // An id not read (a refused or failed call) is tried again, twice.
      const found = new Set(got.filter(Boolean).map((e) => String(e.id)));
      for (const id of ids) {
        if (found.has(id)) {
          tries.delete(id);
          continue;
        }
        const n = (tries.get(id) || 0) + 1;
        if (n <= 2) {
          tries.set(id, n);
          pending.add(id);
        } else tries.delete(id);
      }
      let added = 0;
      for (const e of got) {
        if (!e || seen.has(String(e.id))) continue;
        if (filters.received_after && Date.parse(e.received_at) < Date.parse(filters.received_after)) continue;
        delete e.payload; // the list needs no payload
        const id = String(e.id);
        seen.add(id);
        events.push(e);
        fresh.add(id);
        added++;
        setTimeout(() => {
          fresh.delete(id);
          body.querySelector('tr[data-event-id="' + id + '"]')?.classList.remove('fresh');
        }, 3000);
      }
      if (added) {
        events.sort((a, b) => Number(b.id) - Number(a.id));
        if (loaded) render();
      }
    } catch (err) {
      if (err.name === 'AbortError') return;
      message.replaceChildren(notice('Could not read new events: ' + errorText(err) + '. Reload the list to see them.', 'info'));
    } finally {
      flushTimer = 0;
      if (pending.size && !ctx.signal.aborted) flushTimer = setTimeout(flush, tries.size ? 1000 : 300);
    }
  }

  follow(
    ['sys:ingest'],
    ctx,
    (ev) => {
      if (ev.kind === 'event.received' && ev.payload) arrived(ev.payload);
    },
    (err) => message.replaceChildren(notice('Live updates are off: ' + errorText(err), 'info')),
  );
  await load();
}

// ---------------------------------------------------------------- detail

function isJsonType(ct) {
  return /(^|[/+])json($|;|\s)/i.test(String(ct || '').split(';')[0].trim()) || /json/i.test(String(ct || ''));
}

async function mountDetail(root, ctx, id) {
  const head = h('header.view-head', h('h1', 'Event #' + id), h('a', { href: '#/events' }, '← Events'));
  const message = h('div');
  const meta = h('section.panel', { id: 'event-meta' }, h('p.empty', 'Loading…'));
  const payload = h('section.panel', { id: 'event-payload' });
  const headers = h('section.panel', { id: 'event-headers' });
  const todosBody = h('div', h('p.empty', 'Loading todos…'));
  const replayResult = h('div', { id: 'replay-result' });
  const todos = h('section.panel', { id: 'event-todos' }, h('h2', 'Todos'), replayResult, todosBody);
  root.append(head, message, meta, payload, headers, todos);

  let ev;
  let names = { endpoint: new Map(), adapter: new Map() };
  try {
    const [res, n] = await Promise.all([api.get(eventUrl(id), undefined, ctx.signal), loadNames(ctx.signal).catch(() => names)]);
    ev = res.event;
    names = n;
  } catch (err) {
    if (err.name === 'AbortError') return;
    meta.replaceChildren(notice(err.status === 404 ? 'No such event: it may have been removed by retention, or belong to another agent.' : errorText(err)));
    payload.remove();
    headers.remove();
    todos.remove();
    return;
  }

  const replay = h('button.btn.primary', { type: 'button', id: 'replay-event', dataset: { action: 'replay' }, disabled: !!ev.payload_pruned_at }, 'Replay');
  replay.title = ev.payload_pruned_at ? 'The payload was pruned: the event cannot be replayed.' : 'Create new todos for this event, as if it had just arrived';
  head.replaceChildren(h('h1', 'Event #' + ev.id, ev.topic ? [' ', h('code.topic', ev.topic)] : null), h('div.actions', replay, h('a', { href: '#/events' }, '← Events')));

  function renderMeta() {
    const rows = [
      ['Id', String(ev.id)],
      ['Received', [time(ev.received_at), ' (', ago(ev.received_at), ')']],
      ['Source', sourceCell(ev, names)],
      ['Topic', ev.topic ? h('code', ev.topic) : 'none'],
      ['Delivery id', ev.delivery_id ? h('code', ev.delivery_id) : 'none'],
      ['Content type', ev.content_type || 'unknown'],
      ['Size', bytes(ev.size_bytes) + ' (' + number(ev.size_bytes) + ' bytes)'],
      ['Replays', [number(ev.replay_count || 0), ev.last_replayed_at ? [' · last ', ago(ev.last_replayed_at)] : '']],
      ev.agent_id && ['For agent', h('code', ev.agent_id)],
      ev.published_by && ['Published by', h('code', ev.published_by)],
    ].filter(Boolean);
    meta.replaceChildren(h('h2', 'Event'), h('dl.kv', { 'data-testid': 'event-meta' }, rows.map(([k, v]) => [h('dt', k), h('dd', v)])));
  }
  renderMeta();

  // The payload: pretty JSON when it is JSON, else a hex dump; the toggle
  // switches between pretty, raw text and hex.
  if (ev.payload_pruned_at) {
    payload.replaceChildren(
      h('h2', 'Payload'),
      notice(
        'The payload was pruned ' + time(ev.payload_pruned_at) + ' by retention (setting retention.event_payloads): only its record is kept. It was ' + bytes(ev.size_bytes) + ' when received. A pruned event cannot be replayed.',
        'info',
      ),
    );
  } else {
    let raw = new Uint8Array();
    try {
      raw = decodeBase64(ev.payload || '');
    } catch (_) {
      // not base64: shown as empty
    }
    const text = new TextDecoder('utf-8', { fatal: false }).decode(raw);
    let parsed;
    let isJson = false;
    if (isJsonType(ev.content_type) || /^\s*[[{]/.test(text)) {
      try {
        parsed = JSON.parse(text);
        isJson = true;
      } catch (_) {
        isJson = false;
      }
    }
    const views = {
      pretty: () => (isJson ? h('pre.code', { id: 'payload-pretty', 'data-testid': 'payload-pretty' }, h('code', JSON.stringify(parsed, null, 2))) : h('p.hint', 'Not JSON: see raw or hex.')),
      raw: () => h('pre.code', { id: 'payload-raw', 'data-testid': 'payload-raw' }, h('code', text)),
      hex: () => {
        const el = hexdump(raw);
        el.id = 'payload-hex';
        el.setAttribute('data-testid', 'payload-hex');
        return el;
      },
    };
    const box = h('div.payload-box');
    const buttons = {};
    const show = (mode) => {
      for (const [m, b] of Object.entries(buttons)) b.setAttribute('aria-pressed', String(m === mode));
      box.replaceChildren(views[mode]());
    };
    for (const mode of ['pretty', 'raw', 'hex']) {
      buttons[mode] = h('button.btn', { type: 'button', dataset: { mode, action: 'payload-' + mode }, onclick: () => show(mode) }, mode);
    }
    payload.replaceChildren(
      h('div.panel-head', h('h2', 'Payload ', h('span.muted', bytes(raw.length))), h('div.segmented', { role: 'group', 'aria-label': 'Payload view' }, Object.values(buttons))),
      raw.length ? box : h('p.hint', 'Empty payload.'),
    );
    show(isJson ? 'pretty' : 'hex');
  }

  // Headers as received (lower-cased names).
  const hdrs = Object.entries(ev.headers || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const ht = table(
    [
      { label: 'Header', className: 'mono', cell: ([k]) => k },
      { label: 'Value', className: 'mono', cell: ([, v]) => v },
    ],
    hdrs,
    { label: 'Headers', empty: 'No headers were stored.' },
  );
  ht.querySelectorAll('tbody tr').forEach((tr, i) => {
    tr.setAttribute('data-testid', 'header-row');
    tr.dataset.header = hdrs[i][0];
  });
  headers.replaceChildren(h('h2', 'Headers'), ht);

  // The todos the event made (ListTodos event_id). A server that does not
  // know the filter yet ignores it: keep only this event's todos.
  async function loadTodos() {
    try {
      const res = await api.get('api/todos', { event_id: ev.id, page_size: 100 }, ctx.signal);
      const list = (res.todos || []).filter((t) => String(t.event_id) === String(ev.id));
      const t = table(
        [
          { label: 'Todo', cell: (t) => h('a', { href: '#/todos/' + encodeURIComponent(t.id), 'data-testid': 'todo-link' }, '#' + t.id) },
          { label: 'Queue', cell: (t) => t.queue || '—' },
          { label: 'Kind', cell: (t) => (t.kind ? h('code', t.kind) : '—') },
          {
            label: 'State',
            cell: (t) => {
              const s = enumName(t.state, 'TODO_STATE_');
              return badge(s, TODO_STATE_KIND[s]);
            },
          },
          { label: 'Created', cell: (t) => ago(t.created_at) },
        ],
        list,
        { label: 'Todos', empty: 'No todos for this event (none was made, or they were removed by retention). Replay makes a new one.', onRow: (t) => ctx.navigate('#/todos/' + encodeURIComponent(t.id)) },
      );
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        tr.setAttribute('data-testid', 'event-todo');
        tr.dataset.todoId = String(list[i].id);
      });
      todosBody.replaceChildren(t);
      shown = new Set(list.map((x) => String(x.id)));
      watch(list.map((x) => x.queue).filter(Boolean));
    } catch (err) {
      if (err.name === 'AbortError') return;
      todosBody.replaceChildren(notice(err.status === 403 ? 'This token may not list todos: ' + err.message : errorText(err)));
    }
  }

  // The todos' states stay current from their queues' lifecycle channels
  // (sys:queue:<queue>, todo.* events naming one of them); one stream, opened
  // once for the queues of the first list.
  let shown = new Set();
  let watching = false;
  let todoTimer = 0;
  function watch(queues) {
    if (watching || !queues.length) return;
    watching = true;
    const channels = [...new Set(queues)].slice(0, 100).map((q) => 'sys:queue:' + q);
    follow(channels, ctx, (e) => {
      if (!String(e.kind).startsWith('todo.') || !e.payload || !shown.has(String(e.payload.todo_id))) return;
      clearTimeout(todoTimer);
      todoTimer = setTimeout(loadTodos, 300);
    });
    ctx.signal.addEventListener('abort', () => clearTimeout(todoTimer));
  }
  loadTodos();

  replay.addEventListener('click', async () => {
    replay.disabled = true;
    try {
      const res = await api.post(eventUrl(ev.id) + ':replay', {}, ctx.signal);
      const made = res.todos || [];
      if (res.event) ev = { ...ev, replay_count: res.event.replay_count, last_replayed_at: res.event.last_replayed_at };
      renderMeta();
      replayResult.replaceChildren(
        h(
          'p.notice',
          { dataset: { kind: 'ok' }, role: 'status', 'data-testid': 'replay-result' },
          made.length ? ['Replayed: ', made.map((t, i) => [i ? ', ' : '', h('a', { href: '#/todos/' + encodeURIComponent(t.todo_id), 'data-testid': 'replayed-todo' }, 'todo #' + t.todo_id), ' in ', t.queue])] : 'Replayed; no todo was made (no route matched).',
        ),
      );
      ctx.toast('Event replayed' + (made.length ? ': ' + made.length + ' new todo' + (made.length > 1 ? 's' : '') : '') + '.');
      await loadTodos();
    } catch (err) {
      if (err.name === 'AbortError') return;
      const text =
        err.status === 412 || err.code === 9
          ? 'This event cannot be replayed: ' + err.message
          : err.status === 403
            ? 'This token may not replay events: ' + err.message
            : errorText(err);
      replayResult.replaceChildren(notice(text));
    } finally {
      replay.disabled = !!ev.payload_pruned_at;
    }
  });
}

export async function mount(root, ctx) {
  const [first] = ctx.path;
  if (!first) return mountList(root, ctx);
  return mountDetail(root, ctx, first);
}
