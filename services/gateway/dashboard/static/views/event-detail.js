// One event's page (#/events/<id>): GetEvent's metadata, the payload
// (pretty JSON, raw text or a hex dump), headers, the todos it made
// (ListTodos event_id) and Replay. Not a view: events.js mounts it.
import * as api from '../lib/api.js';
import { ago, badge, bytes, decodeBase64, enumName, errorText, h, hexdump, notice, number, table, time } from '../lib/dom.js';
import { eventUrl, loadNames, sourceCell } from './event-common.js';
import { follow } from './endpoint-common.js';

const TODO_STATE_KIND = { pending: 'info', running: 'warn', completed: 'ok', dead: 'bad', cancelled: 'muted' };

function isJsonType(ct) {
  return /(^|[/+])json($|;|\s)/i.test(String(ct || '').split(';')[0].trim()) || /json/i.test(String(ct || ''));
}

export async function mountDetail(root, ctx, id) {
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
