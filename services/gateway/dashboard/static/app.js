// Switchboard admin dashboard: one card per cluster node, kept live from the
// registry's WatchNodes stream (newline-delimited JSON through the gateway).
//
// Everything shown comes from the network, so it is rendered with
// createElement and textContent only, never parsed as HTML. The page knows the
// fields of a Node but no key of its stats object: it renders whatever keys a
// node publishes.
//
// When the API answers 401 (no valid credential) or 403 (a credential without
// the admin scope), the page stops retrying and shows a sign-in panel; the
// token pasted there is kept in localStorage and sent as a bearer token.
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
    signedout: 'signed out',
  };

  // gRPC status codes the gateway puts in error bodies and stream error
  // lines, and the HTTP status each stands for.
  const AUTH_CODES = { 16: 401, 7: 403 };

  const els = {
    grid: document.getElementById('nodes'),
    empty: document.getElementById('empty'),
    size: document.getElementById('cluster-size'),
    sizeLabel: document.getElementById('cluster-size-label'),
    status: document.getElementById('status'),
    signin: document.getElementById('signin'),
    token: document.getElementById('token'),
    signinMessage: document.getElementById('signin-message'),
    signout: document.getElementById('signout'),
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
  /**
   * The running load: its AbortController stops the list request, the watch
   * loop and any wait between streams. Replaced on every (re)start.
   */
  let session = null;
  /** The token when localStorage is unavailable (kept for this page only). */
  let memoryToken = null;

  // ---------------------------------------------------------------- helpers

  function getToken() {
    try {
      return window.localStorage.getItem(TOKEN_KEY) || null;
    } catch (_) {
      // Storage can be disabled; then the token lives as long as the page.
      return memoryToken;
    }
  }

  function setToken(token) {
    memoryToken = token;
    try {
      if (token) window.localStorage.setItem(TOKEN_KEY, token);
      else window.localStorage.removeItem(TOKEN_KEY);
    } catch (_) {
      // See getToken.
    }
    els.signout.hidden = !getToken();
  }

  function authHeaders() {
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    return headers;
  }

  // AuthError means the server refused the credential: retrying cannot help.
  class AuthError extends Error {
    constructor(status, message) {
      super(message || 'HTTP ' + status);
      this.status = status;
    }
  }

  // checkAuth throws AuthError for a 401 or 403 answer.
  function checkAuth(resp) {
    if (resp.status === 401 || resp.status === 403) throw new AuthError(resp.status);
  }

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // sleep waits ms, or less if signal aborts first.
  function sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
    });
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
    hideSignIn();
    render();
  }

  // ---------------------------------------------------------------- sign-in

  // The panel's message for each refusal. Commands are <code>.
  const SIGNIN_TEXT = {
    401: ['Paste an administrator token (', ['switchboard token create --admin'], ', or the token ', ['make run'], ' printed).'],
    403: ['This token may not view the cluster: it needs the admin scope of an administrator.'],
    checking: ['Checking the token…'],
  };

  function setSignInMessage(key) {
    els.signinMessage.dataset.kind = String(key);
    els.signinMessage.replaceChildren(
      ...SIGNIN_TEXT[key].map((part) => (Array.isArray(part) ? el('code', null, part[0]) : part)),
    );
  }

  // showSignIn stops loading, forgets the membership shown (the credential
  // that fetched it is gone or refused) and asks for a token.
  function showSignIn(status) {
    stop();
    nodes = new Map();
    haveData = false;
    watchSynced = false;
    render();
    setStatus('signedout');
    setSignInMessage(status === 403 ? 403 : 401);
    els.token.value = '';
    els.token.setAttribute('aria-invalid', getToken() ? 'true' : 'false');
    const wasHidden = els.signin.hidden;
    els.signin.hidden = false;
    // Moving focus on first show lets a keyboard user paste at once; a
    // refused retry focuses again so the next attempt is as quick.
    if (wasHidden || document.activeElement === document.body || els.signin.contains(document.activeElement)) {
      els.token.focus();
    }
  }

  function hideSignIn() {
    if (els.signin.hidden) return;
    els.signin.hidden = true;
    els.token.value = '';
    els.token.removeAttribute('aria-invalid');
  }

  els.signin.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const token = els.token.value.trim();
    if (token === '') {
      els.token.focus();
      return;
    }
    setToken(token);
    setSignInMessage('checking');
    els.token.removeAttribute('aria-invalid');
    start();
  });

  els.signout.addEventListener('click', () => {
    setToken(null);
    showSignIn(401);
  });

  // Another tab signing in or out changes what this one would send.
  window.addEventListener('storage', (ev) => {
    if (ev.key === TOKEN_KEY || ev.key === null) els.signout.hidden = !getToken();
  });

  // ---------------------------------------------------------------- data

  // loadList shows the membership once, quickly, from the list endpoint. The
  // watch stream's snapshot replaces it (and wins if it arrives first).
  async function loadList(current) {
    try {
      const resp = await fetch(LIST_URL, { headers: authHeaders(), cache: 'no-store', signal: current.signal });
      checkAuth(resp);
      if (!resp.ok) return;
      const body = await resp.json();
      if (current.signal.aborted || watchSynced || !body || !Array.isArray(body.data)) return;
      replaceAll(new Map(body.data.filter(isNode).map((n) => [n.node_id, n])));
    } catch (err) {
      if (err instanceof AuthError && !current.signal.aborted) showSignIn(err.status);
      // Other failures: the watch stream reports connection problems.
    }
  }

  // handleMessage applies one stream line. Until SYNCED, JOINED events build
  // a pending snapshot that then replaces the shown set at once; after it,
  // each event changes the shown set.
  function handleMessage(msg, stream) {
    if (msg.error) {
      const e = msg.error;
      const detail = 'stream error' + (e.code ? ' ' + e.code : '') + (e.message ? ': ' + e.message : '');
      if (AUTH_CODES[e.code]) throw new AuthError(AUTH_CODES[e.code], detail);
      throw new Error(detail);
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
  // ends the stream and rejects on an HTTP, network or stream error (an
  // AuthError when the credential is refused).
  async function watchOnce(current) {
    const controller = new AbortController();
    const cancel = () => controller.abort(new Error('stopped'));
    current.signal.addEventListener('abort', cancel);
    let idle = 0;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(new Error('no data for ' + IDLE_TIMEOUT_MS / 1000 + 's')), IDLE_TIMEOUT_MS);
    };
    const stream = { synced: false, pending: new Map() };
    arm();
    try {
      const resp = await fetch(WATCH_URL, { headers: authHeaders(), cache: 'no-store', signal: controller.signal });
      checkAuth(resp);
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
          if (current.signal.aborted) return 'stopped';
          if (line.trim()) handleLine(line, stream);
        }
      }
      buf += decoder.decode();
      if (buf.trim()) handleLine(buf, stream);
      return 'stream ended';
    } finally {
      clearTimeout(idle);
      current.signal.removeEventListener('abort', cancel);
      controller.abort();
    }
  }

  // run keeps a watch stream open until current stops: after a stream ends
  // or fails it waits (1 s, doubling to 10 s; back to 1 s once a stream
  // synced) and reconnects, getting a fresh snapshot. A refused credential
  // stops it and shows the sign-in panel instead.
  async function run(current) {
    while (!current.signal.aborted) {
      let reason;
      try {
        reason = await watchOnce(current);
      } catch (err) {
        if (current.signal.aborted) return;
        if (err instanceof AuthError) {
          showSignIn(err.status);
          return;
        }
        reason = err && err.message ? err.message : String(err);
      }
      if (current.signal.aborted) return;
      const delay = backoffMs;
      backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
      setStatus('reconnecting', reason);
      await sleep(delay, current.signal);
    }
  }

  function stop() {
    if (session) session.abort();
    session = null;
  }

  // start (re)starts loading with the current token.
  function start() {
    stop();
    const current = new AbortController();
    session = current;
    watchSynced = false;
    backoffMs = BACKOFF_MIN_MS;
    setStatus('connecting');
    loadList(current);
    run(current);
  }

  els.signout.hidden = !getToken();
  setInterval(tick, 1000);
  start();
})();
