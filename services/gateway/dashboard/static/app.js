// Switchboard admin dashboard: one card per cluster node, kept live from the
// registry's WatchNodes stream (newline-delimited JSON through the gateway).
//
// Everything shown comes from the network, so it is rendered with
// createElement and textContent only, never parsed as HTML. The page knows the
// fields of a Node but no key of its stats object: it renders whatever keys a
// node publishes.
'use strict';

(() => {
  // Relative URLs: the page is served at "/", and this keeps it working when a
  // proxy mounts the gateway under a path prefix.
  const LIST_URL = 'api/admin/cluster';
  const WATCH_URL = 'api/admin/cluster/watch';
  const TOKEN_KEY = 'switchboard_token';

  const BACKOFF_MIN_MS = 1000;
  const BACKOFF_MAX_MS = 10000;
  // Live nodes send UPDATED about once per heartbeat interval, so a stream
  // silent for this long is a dead connection that nobody closed.
  const IDLE_TIMEOUT_MS = 60000;
  // A heartbeat older than this marks the card as late. It is the registry's
  // default stale threshold: such a node is about to be swept by its peers.
  const LATE_AFTER_MS = 30000;

  // The gateway sends enum names; numbers are accepted too.
  const EVENT_NUMBERS = { 1: 'JOINED', 2: 'UPDATED', 3: 'LEFT', 4: 'SYNCED' };

  const STATUS_TEXT = {
    connecting: 'connecting…',
    live: 'live',
    reconnecting: 'reconnecting…',
  };

  const els = {
    grid: document.getElementById('nodes'),
    empty: document.getElementById('empty'),
    size: document.getElementById('cluster-size'),
    sizeLabel: document.getElementById('cluster-size-label'),
    status: document.getElementById('status'),
  };

  /** The membership shown: node_id → Node (as received). */
  let nodes = new Map();
  /** node_id → card element. */
  const cards = new Map();
  /** card element → the Node object it was last filled from. */
  const rendered = new WeakMap();
  /** Set once any membership (list or snapshot) has been shown. */
  let haveData = false;
  /** Set once a watch snapshot has been applied: the one-off list must not overwrite it. */
  let watchSynced = false;
  let backoffMs = BACKOFF_MIN_MS;

  // ---------------------------------------------------------------- helpers

  function authHeaders() {
    const headers = { Accept: 'application/json' };
    let token = null;
    try {
      token = window.localStorage.getItem(TOKEN_KEY);
    } catch (_) {
      // Storage can be disabled; then there is no token.
    }
    if (token) headers.Authorization = 'Bearer ' + token;
    return headers;
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  const integerFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
  const decimalFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

  function formatNumber(n) {
    if (!Number.isFinite(n)) return String(n);
    if (Number.isInteger(n)) return integerFormat.format(n);
    const abs = Math.abs(n);
    if (abs < 0.01 || abs >= 1e15) return n.toPrecision(3);
    return decimalFormat.format(n);
  }

  // parseTime reads an RFC 3339 timestamp as protojson writes it (up to nine
  // fractional digits; Date.parse wants at most three). NaN when absent.
  function parseTime(s) {
    if (typeof s !== 'string' || s === '') return NaN;
    return Date.parse(s.replace(/(\.\d{3})\d+/, '$1'));
  }

  function formatTime(ms) {
    return Number.isFinite(ms) ? new Date(ms).toLocaleString() : '—';
  }

  function formatAge(ms) {
    if (!Number.isFinite(ms)) return '—';
    // The heartbeat uses the database clock; a browser clock that runs behind
    // it must not show an age "in the future".
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's ago';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's ago';
    const h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm ago';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h ago';
  }

  function eventType(t) {
    if (typeof t === 'number') return EVENT_NUMBERS[t] || '';
    return typeof t === 'string' ? t.replace(/^NODE_EVENT_TYPE_/, '') : '';
  }

  function isNode(n) {
    return n !== null && typeof n === 'object' && typeof n.node_id === 'string';
  }

  function bySeq(a, b) {
    const d = (Number(a.seq) || 0) - (Number(b.seq) || 0);
    if (d !== 0) return d;
    return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
  }

  // ---------------------------------------------------------------- rendering

  // statValue renders one stats value: numbers readably, strings as text,
  // objects and arrays as compact JSON.
  function statValue(v) {
    const dd = el('dd');
    if (v === null || v === undefined) {
      dd.className = 'v-null';
      dd.textContent = 'null';
    } else if (typeof v === 'number') {
      dd.className = 'v-number';
      dd.textContent = formatNumber(v);
      dd.title = String(v);
    } else if (typeof v === 'boolean') {
      dd.className = 'v-bool';
      dd.textContent = String(v);
    } else if (typeof v === 'string') {
      dd.className = 'v-string';
      dd.textContent = v;
    } else {
      dd.className = 'v-json';
      dd.append(el('code', null, JSON.stringify(v)));
    }
    return dd;
  }

  function fillCard(card, node) {
    card.replaceChildren();

    const head = el('header', 'card-head');
    const titleRow = el('div', 'title-row');
    const title = el('h2', 'node-id', node.node_id);
    title.title = node.node_id;
    const seq = el('span', 'seq', '#' + (node.seq ?? '?'));
    seq.title = 'registration sequence number';
    titleRow.append(title, seq);

    const endpoint = el('code', 'endpoint', node.endpoint || '—');

    const services = el('ul', 'services');
    services.setAttribute('aria-label', 'services');
    const names = Array.isArray(node.services) ? node.services : [];
    if (names.length === 0) services.append(el('li', 'service none', 'no services'));
    for (const name of names) services.append(el('li', 'service', String(name)));

    const registeredMs = parseTime(node.registered_at);
    const heartbeatMs = parseTime(node.heartbeat);
    const meta = el('dl', 'meta');
    const registered = el('dd', 'registered', formatTime(registeredMs));
    if (node.registered_at) registered.title = String(node.registered_at);
    const age = el('dd', 'heartbeat-age');
    age.dataset.heartbeatMs = String(heartbeatMs);
    if (node.heartbeat) age.title = String(node.heartbeat);
    meta.append(el('dt', null, 'registered'), registered, el('dt', null, 'heartbeat'), age);

    head.append(titleRow, endpoint, services, meta);

    const body = el('div', 'card-body');
    const stats = node.stats !== null && typeof node.stats === 'object' && !Array.isArray(node.stats) ? node.stats : {};
    const keys = Object.keys(stats).sort();
    if (keys.length === 0) {
      body.append(el('p', 'no-stats', 'no stats'));
    } else {
      const list = el('dl', 'stats');
      for (const key of keys) {
        const dt = el('dt', 'stat-key', key);
        dt.title = key;
        list.append(dt, statValue(stats[key]));
      }
      body.append(list);
    }

    card.append(head, body);
  }

  // render reconciles the cards with `nodes`: one card per node, ordered by
  // seq; only cards whose node changed are rebuilt.
  function render() {
    const list = [...nodes.values()].sort(bySeq);
    const keep = new Set();
    list.forEach((node, i) => {
      keep.add(node.node_id);
      let card = cards.get(node.node_id);
      if (!card) {
        card = el('article', 'node-card');
        card.dataset.nodeId = node.node_id;
        cards.set(node.node_id, card);
      }
      if (rendered.get(card) !== node) {
        fillCard(card, node);
        rendered.set(card, node);
      }
      if (els.grid.children[i] !== card) els.grid.insertBefore(card, els.grid.children[i] || null);
    });
    for (const [id, card] of cards) {
      if (!keep.has(id)) {
        card.remove();
        cards.delete(id);
      }
    }
    els.size.textContent = String(list.length);
    els.sizeLabel.textContent = list.length === 1 ? 'node' : 'nodes';
    els.empty.hidden = !haveData || list.length > 0;
    tick();
  }

  // tick refreshes every heartbeat age (once a second).
  function tick() {
    const now = Date.now();
    for (const card of cards.values()) {
      const age = card.querySelector('.heartbeat-age');
      if (!age) continue;
      const hb = Number(age.dataset.heartbeatMs);
      age.textContent = formatAge(now - hb);
      card.classList.toggle('late', Number.isFinite(hb) && now - hb > LATE_AFTER_MS);
    }
  }

  function setStatus(state, detail) {
    els.status.dataset.state = state;
    els.status.textContent = STATUS_TEXT[state];
    els.status.title = detail ? 'Last disconnect: ' + detail : '';
    document.body.classList.toggle('disconnected', state === 'reconnecting');
  }

  function replaceAll(map) {
    nodes = map;
    haveData = true;
    render();
  }

  // ---------------------------------------------------------------- data

  // loadList shows the membership once, quickly, from the list endpoint. The
  // watch stream's snapshot replaces it (and wins if it arrives first).
  async function loadList() {
    try {
      const resp = await fetch(LIST_URL, { headers: authHeaders(), cache: 'no-store' });
      if (!resp.ok) return;
      const body = await resp.json();
      if (watchSynced || !body || !Array.isArray(body.data)) return;
      replaceAll(new Map(body.data.filter(isNode).map((n) => [n.node_id, n])));
    } catch (_) {
      // The watch stream reports connection problems.
    }
  }

  // handleMessage applies one stream line. Until SYNCED, JOINED events build
  // a pending snapshot that then replaces the shown set at once; after it,
  // each event changes the shown set.
  function handleMessage(msg, stream) {
    if (msg.error) {
      const e = msg.error;
      throw new Error('stream error' + (e.code ? ' ' + e.code : '') + (e.message ? ': ' + e.message : ''));
    }
    const res = msg.result;
    if (!res || typeof res !== 'object') return;
    const type = eventType(res.type);
    if (type === 'SYNCED') {
      if (!stream.synced) {
        stream.synced = true;
        watchSynced = true;
        backoffMs = BACKOFF_MIN_MS;
        setStatus('live');
        replaceAll(stream.pending);
        stream.pending = null;
      }
      return;
    }
    const node = res.node;
    if (!isNode(node)) return;
    const target = stream.synced ? nodes : stream.pending;
    switch (type) {
      case 'JOINED':
      case 'UPDATED':
        target.set(node.node_id, node);
        break;
      case 'LEFT':
        target.delete(node.node_id);
        break;
      default:
        return;
    }
    if (stream.synced) render();
  }

  function handleLine(line, stream) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (_) {
      console.warn('dashboard: ignoring a line that is not JSON:', line.slice(0, 200));
      return;
    }
    if (msg !== null && typeof msg === 'object') handleMessage(msg, stream);
  }

  // watchOnce reads one watch stream to its end. It resolves when the server
  // ends the stream and rejects on an HTTP, network or stream error.
  async function watchOnce() {
    const controller = new AbortController();
    let idle = 0;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(new Error('no data for ' + IDLE_TIMEOUT_MS / 1000 + 's')), IDLE_TIMEOUT_MS);
    };
    const stream = { synced: false, pending: new Map() };
    arm();
    try {
      const resp = await fetch(WATCH_URL, { headers: authHeaders(), cache: 'no-store', signal: controller.signal });
      if (!resp.ok || !resp.body) throw new Error('HTTP ' + resp.status);
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        arm();
        buf += decoder.decode(value, { stream: true });
        const lines = buf.split('\n');
        buf = lines.pop();
        for (const line of lines) {
          if (line.trim()) handleLine(line, stream);
        }
      }
      buf += decoder.decode();
      if (buf.trim()) handleLine(buf, stream);
      return 'stream ended';
    } finally {
      clearTimeout(idle);
      controller.abort();
    }
  }

  // run keeps a watch stream open forever: after a stream ends or fails it
  // waits (1 s, doubling to 10 s; back to 1 s once a stream synced) and
  // reconnects, getting a fresh snapshot.
  async function run() {
    for (;;) {
      let reason;
      try {
        reason = await watchOnce();
      } catch (err) {
        reason = err && err.message ? err.message : String(err);
      }
      const delay = backoffMs;
      backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
      setStatus('reconnecting', reason);
      await sleep(delay);
    }
  }

  setStatus('connecting');
  setInterval(tick, 1000);
  loadList();
  run();
})();
