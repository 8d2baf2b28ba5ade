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
import { ago, bytes, errorText, field, h, notice, number, table, time } from '../lib/dom.js';
import { follow } from './endpoints.js';
import { eventUrl, loadNames, sourceCell } from './event-common.js';
import { mountDetail } from './event-detail.js';

const PAGE_SIZE = 50;

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
export async function mount(root, ctx) {
  const [first] = ctx.path;
  if (!first) return mountList(root, ctx);
  return mountDetail(root, ctx, first);
}
