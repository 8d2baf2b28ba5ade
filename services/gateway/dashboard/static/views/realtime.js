// Realtime: the tenant's channels (RealtimeService).
//
//   #/realtime?prefix=      channels with presence (ListChannels) and a box
//                           to open any channel by name
//   #/realtime/<channel>    its presence and a live tail (Subscribe, ephemeral
//                           events included; newest on top, the last 500),
//                           with a small publish form for testing. sys:
//                           channels (sys:ingest, sys:queue:<queue>,
//                           sys:todo:<id>) can be tailed too.
import * as api from '../lib/api.js';
import { ago, badge, errorText, field, h, notice, number, table, time } from '../lib/dom.js';
import { follow } from './endpoints.js';

const MAX_TAIL = 500;
const CHANNEL_RE = /^[A-Za-z0-9][A-Za-z0-9:._/-]{0,127}$/;
const channelUrl = (c) => 'api/realtime/channels/' + encodeURIComponent(c);
const channelHref = (c) => '#/realtime/' + encodeURIComponent(c);

// ------------------------------------------------------------------ list

async function mountList(root, ctx) {
  const prefix = ctx.params.get('prefix') || '';
  const name = h('input', { id: 'channel-name', name: 'channel', placeholder: 'chat:room-1 or sys:ingest', autocomplete: 'off', spellcheck: 'false', maxlength: 128 });
  const openMsg = h('small.hint', 'Letters, digits and : . _ / -; sys:ingest, sys:queue:<queue> and sys:todo:<id> carry lifecycle events.');
  const open = h(
    'form.toolbar',
    { id: 'open-channel', 'aria-label': 'Open a channel' },
    h('label.field.grow', h('span.field-label', 'Open a channel'), name, openMsg),
    h('button.btn.primary', { type: 'submit', dataset: { action: 'open-channel' } }, 'Open'),
  );
  // Lifecycle channels worth tailing: sys:ingest and each queue's.
  const lifecycle = h('div.chips', { id: 'lifecycle-channels', 'aria-label': 'Lifecycle channels' }, h('a.btn-link', { href: channelHref('sys:ingest') }, 'sys:ingest'));
  api
    .get('api/queues', { page_size: 50 }, ctx.signal)
    .then((res) => {
      for (const q of res.queues || []) lifecycle.append(h('a.btn-link', { href: channelHref('sys:queue:' + q.queue) }, 'sys:queue:' + q.queue));
    })
    .catch((err) => {
      if (err.name !== 'AbortError') lifecycle.append(h('small.hint', 'Queues unavailable (' + errorText(err) + '): type sys:queue:<queue> above.'));
    });
  open.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const c = name.value.trim();
    if (!CHANNEL_RE.test(c)) {
      openMsg.textContent = 'Not a channel name: 1–128 letters, digits and : . _ / -, starting with a letter or digit.';
      openMsg.classList.add('bad');
      name.focus();
      return;
    }
    ctx.navigate(channelHref(c));
  });

  const prefixInput = h('input', { id: 'channel-prefix', name: 'prefix', value: prefix, placeholder: 'chat:', maxlength: 128 });
  const filter = h(
    'form.toolbar',
    { 'aria-label': 'Filter channels' },
    field('Prefix', prefixInput),
    h('button.btn', { type: 'submit', dataset: { action: 'filter' } }, 'Filter'),
    h('button.btn', { type: 'button', dataset: { action: 'refresh' }, onclick: () => reload() }, 'Refresh'),
  );
  filter.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate({ prefix: prefixInput.value.trim() });
  });
  const body = h('div', { id: 'channels-body' }, h('p.empty', 'Loading channels…'));
  const more = h('button.btn', { type: 'button', hidden: true, dataset: { action: 'more' } }, 'Load more');
  root.append(
    h('header.view-head', h('h1', 'Realtime')),
    h('section.panel', open, h('h3', 'Lifecycle channels'), lifecycle),
    h('section.panel', h('h2', 'Channels with subscribers'), filter, body, h('div.toolbar', more)),
  );

  let rows = [];
  let token = '';
  function render() {
    const t = table(
      [
        { label: 'Channel', cell: (c) => h('a', { href: channelHref(c.channel) }, c.channel) },
        { label: 'Subscribers', className: 'num', cell: (c) => number(c.subscribers ?? 0) },
        {
          label: 'Members',
          cell: (c) => {
            const m = Array.isArray(c.members) ? c.members : [];
            if (!Array.isArray(c.members)) return number(c.members ?? 0);
            return m.length ? h('span', m.map((x, i) => [i ? ', ' : '', h('code', typeof x === 'string' ? x : x.member || JSON.stringify(x))])) : '0';
          },
        },
        { label: 'Nodes', cell: (c) => (Array.isArray(c.node_ids) ? c.node_ids.join(', ') : '—') },
      ],
      rows,
      {
        label: 'Channels',
        empty: prefix ? 'No channel starting with "' + prefix + '" has subscribers right now.' : 'No channel has subscribers right now. Open one by name above: your own tail subscribes to it.',
        onRow: (c) => ctx.navigate(channelHref(c.channel)),
      },
    );
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      tr.setAttribute('data-testid', 'channel-row');
      tr.dataset.channel = rows[i].channel;
    });
    body.replaceChildren(t);
    more.hidden = !token;
  }
  async function load() {
    try {
      const res = await api.get('api/realtime/channels', { prefix, page_size: 100, page_token: token || undefined }, ctx.signal);
      rows = rows.concat(res.channels || []);
      token = res.next_page_token || '';
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      body.replaceChildren(
        err.status === 404 || err.status === 501
          ? notice('This server cannot list channels yet (ListChannels is not available). Open a channel by name above.', 'info')
          : notice(err.status === 403 ? 'This token may not list channels: ' + err.message : errorText(err)),
      );
      more.hidden = true;
    }
  }
  function reload() {
    rows = [];
    token = '';
    return load();
  }
  more.addEventListener('click', load);
  await load();
}

// --------------------------------------------------------------- channel

function tailItem(ev) {
  const payload = ev.payload && typeof ev.payload === 'object' ? ev.payload : {};
  const text = JSON.stringify(payload, null, 2);
  const small = text.length < 600;
  const keys = Object.keys(payload).length;
  return h(
    'li.tail-item',
    { 'data-testid': 'tail-message', dataset: { kind: ev.kind || '', id: String(ev.id || 0), durable: String(!!ev.durable) } },
    h(
      'div.tail-meta',
      h('time', { title: ev.created_at || '' }, time(ev.created_at)),
      h('code.tail-kind', ev.kind || '(no kind)'),
      ev.durable ? badge('durable', 'ok') : badge('ephemeral', 'muted'),
      ev.durable && ev.id ? h('span.tail-id', '#' + ev.id) : null,
      ev.published_by ? h('span.tail-by', { title: 'published by' }, ev.published_by) : null,
    ),
    h('details.tail-payload', { open: small }, h('summary', keys ? 'payload (' + keys + (keys === 1 ? ' key)' : ' keys)') : 'payload {}'), h('pre.code', h('code', text))),
  );
}

async function mountChannel(root, ctx, channel) {
  const sys = channel.startsWith('sys:');
  const message = h('div');
  const presenceBody = h('div', { id: 'presence-body' }, h('p.empty', 'Loading presence…'));
  const presence = h(
    'section.panel',
    { id: 'presence' },
    h('div.panel-head', h('h2', 'Presence'), h('button.btn', { type: 'button', dataset: { action: 'refresh-presence' }, onclick: () => loadPresence() }, 'Refresh')),
    presenceBody,
  );

  const list = h('ol.tail.tail-list', { id: 'tail', 'aria-live': 'polite', 'aria-label': 'Messages, newest first' });
  const empty = h('p.empty', { id: 'tail-empty' }, sys ? 'Waiting for lifecycle events on ' + channel + '…' : 'Waiting for messages. Publish one below, or from any client on this channel.');
  const count = h('span.size', { id: 'tail-count' }, '0 messages');
  const pauseBtn = h('button.btn', { type: 'button', id: 'tail-pause', dataset: { action: 'pause' } }, 'Pause');
  const clearBtn = h('button.btn', { type: 'button', id: 'tail-clear', dataset: { action: 'clear' } }, 'Clear');
  const kindFilter = h('input', { id: 'tail-filter', type: 'search', placeholder: 'filter by kind', 'aria-label': 'Show only kinds containing', size: 14 });
  const tail = h('section.panel', { id: 'tail-panel' }, h('div.panel-head', h('h2', 'Live tail'), h('div.actions', count, kindFilter, pauseBtn, clearBtn)), empty, list);

  const kind = h('input', { id: 'publish-kind', name: 'kind', value: 'message', maxlength: 255 });
  const payloadInput = h('textarea', { id: 'publish-payload', name: 'payload', rows: 4, spellcheck: 'false' }, '{\n  "text": "hello"\n}');
  const ephemeral = h('input', { type: 'checkbox', id: 'publish-ephemeral', name: 'ephemeral' });
  const publishMsg = h('div');
  const publishBtn = h('button.btn.primary', { type: 'submit', id: 'publish-submit', dataset: { action: 'publish' } }, 'Publish');
  const publish = h(
    'form.panel',
    { id: 'publish-form', 'aria-label': 'Publish a message' },
    h('h2', 'Publish'),
    sys
      ? h('p.hint', 'sys: channels carry lifecycle events that only the service publishes; clients cannot publish on them.')
      : [
          h('div.form-grid', field('Kind', kind), h('label.field.check', ephemeral, h('span', 'Ephemeral (not stored; only current subscribers get it)'))),
          field('Payload (a JSON object)', payloadInput),
          publishMsg,
          h('div.toolbar', publishBtn),
        ],
  );

  root.append(h('header.view-head', h('h1', { id: 'channel-title' }, h('code', channel)), h('a', { href: '#/realtime' }, '← Channels')), message, presence, tail, publish);

  // Presence: who is subscribed now (this console's own tail included).
  let presenceTimer = 0;
  async function loadPresence() {
    try {
      const res = await api.get(channelUrl(channel) + '/presence', undefined, ctx.signal);
      const members = res.members || [];
      const t = table(
        [
          { label: 'Member', className: 'mono', cell: (m) => m.member },
          { label: 'Streams', className: 'num', cell: (m) => number(m.streams) },
          { label: 'Nodes', cell: (m) => (m.node_ids || []).join(', ') },
          { label: 'Joined', cell: (m) => ago(m.joined_at) },
        ],
        members,
        { label: 'Presence', empty: 'Nobody is subscribed.' },
      );
      t.querySelectorAll('tbody tr').forEach((tr, i) => {
        tr.setAttribute('data-testid', 'presence-member');
        tr.dataset.member = members[i].member;
      });
      presenceBody.replaceChildren(t);
    } catch (err) {
      if (err.name === 'AbortError') return;
      presenceBody.replaceChildren(notice(err.status === 403 ? 'This token may not read presence: ' + err.message : errorText(err)));
    }
  }
  const presenceSoon = () => {
    clearTimeout(presenceTimer);
    presenceTimer = setTimeout(loadPresence, 250);
  };
  ctx.signal.addEventListener('abort', () => clearTimeout(presenceTimer));

  // The tail: newest first, at most MAX_TAIL items; while paused, arrivals
  // wait in a buffer (also bounded) and are shown on resume.
  let paused = false;
  let buffered = [];
  let total = 0;
  function updateCount() {
    const n = list.children.length;
    count.textContent = number(n) + (n === 1 ? ' message' : ' messages') + (n >= MAX_TAIL ? ' (the last ' + MAX_TAIL + ')' : '') + (paused ? ' · paused, ' + number(buffered.length) + ' waiting' : '');
    empty.hidden = n > 0;
  }
  const visible = (kindText) => !kindFilter.value.trim() || kindText.toLowerCase().includes(kindFilter.value.trim().toLowerCase());
  kindFilter.addEventListener('input', () => {
    for (const li of list.children) li.hidden = !visible(li.dataset.kind);
  });
  function show(ev) {
    const li = tailItem(ev);
    li.hidden = !visible(ev.kind || '');
    list.insertBefore(li, list.firstChild);
    while (list.children.length > MAX_TAIL) list.lastChild.remove();
  }
  pauseBtn.addEventListener('click', () => {
    paused = !paused;
    pauseBtn.textContent = paused ? 'Resume' : 'Pause';
    pauseBtn.dataset.action = paused ? 'resume' : 'pause';
    pauseBtn.setAttribute('aria-pressed', String(paused));
    if (!paused) {
      for (const ev of buffered) show(ev);
      buffered = [];
    }
    updateCount();
  });
  clearBtn.addEventListener('click', () => {
    list.replaceChildren();
    buffered = [];
    updateCount();
  });
  updateCount();

  if (!sys) {
    publish.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      publishMsg.replaceChildren();
      let payload;
      try {
        payload = payloadInput.value.trim() ? JSON.parse(payloadInput.value) : {};
      } catch (err) {
        publishMsg.replaceChildren(notice('The payload is not JSON: ' + err.message));
        return;
      }
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
        publishMsg.replaceChildren(notice('The payload must be a JSON object ({…}).'));
        return;
      }
      publishBtn.disabled = true;
      try {
        const res = await api.post(channelUrl(channel) + '/messages', { kind: kind.value.trim(), payload, durable: !ephemeral.checked }, ctx.signal);
        ctx.toast(ephemeral.checked ? 'Published (ephemeral).' : 'Published #' + res.id + '.');
      } catch (err) {
        if (err.name === 'AbortError') return;
        publishMsg.replaceChildren(notice(err.status === 403 ? 'This token may not publish: ' + err.message : errorText(err)));
      } finally {
        publishBtn.disabled = false;
      }
    });
  }

  let first = true;
  follow(
    [channel],
    ctx,
    (ev) => {
      total++;
      if (ev.kind === 'presence.join' || ev.kind === 'presence.leave') presenceSoon();
      if (paused) {
        buffered.push(ev);
        if (buffered.length > MAX_TAIL) buffered.shift();
      } else show(ev);
      updateCount();
      if (first) {
        first = false;
        presenceSoon();
      }
    },
    (err) => message.replaceChildren(notice(err.status === 400 ? 'Not a channel this console can follow: ' + err.message : 'The tail stopped: ' + errorText(err))),
  );
  // Presence once now, and again shortly after the subscription is up so
  // this console's own stream is listed.
  loadPresence();
  setTimeout(() => {
    if (!ctx.signal.aborted && total === 0) loadPresence();
  }, 1500);
}

export async function mount(root, ctx) {
  const channel = ctx.path.join('/');
  if (!channel) return mountList(root, ctx);
  if (!CHANNEL_RE.test(channel)) {
    root.append(h('header.view-head', h('h1', 'Realtime'), h('a', { href: '#/realtime' }, '← Channels')), notice('Not a channel name: ' + channel));
    return;
  }
  return mountChannel(root, ctx, channel);
}
