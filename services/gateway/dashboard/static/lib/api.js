// The console's only way to the server: JSON calls and newline-delimited
// JSON streams through the gateway's REST API, with the signed-in token.
//
// Every call carries the bearer token (kept in localStorage) and, when an
// administrator picked another tenant, X-Switchboard-Tenant. A 401 from any
// call signs the console out (onUnauthenticated); a 403 is the view's to
// explain, since one token may read queues but not the cluster.
//
// URLs are relative ("api/…"): the page is served at "/", and this keeps it
// working when a proxy mounts the gateway under a path prefix.

const TOKEN_KEY = 'switchboard_token';
const TENANT_KEY = 'switchboard_tenant';

const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 10000;
// A stream silent for this long is a dead connection nobody closed. Watch
// and subscribe streams both send keep-alives well inside it.
const IDLE_TIMEOUT_MS = 60000;

// gRPC status codes in error bodies and stream error lines → HTTP status.
const CODE_STATUS = { 3: 400, 5: 404, 6: 409, 7: 403, 8: 429, 9: 412, 14: 503, 16: 401 };

let memory = { [TOKEN_KEY]: null, [TENANT_KEY]: null };
let unauthenticated = () => {};

function load(key) {
  try {
    return window.localStorage.getItem(key) || null;
  } catch (_) {
    return memory[key]; // storage disabled: the value lives as long as the page
  }
}

function store(key, value) {
  memory[key] = value || null;
  try {
    if (value) window.localStorage.setItem(key, value);
    else window.localStorage.removeItem(key);
  } catch (_) {
    // See load.
  }
}

export const TOKEN_STORAGE_KEY = TOKEN_KEY;
export const getToken = () => load(TOKEN_KEY);
export const setToken = (t) => store(TOKEN_KEY, t);
/** The tenant (human id) an administrator acts in; null for its own. */
export const getTenant = () => load(TENANT_KEY);
export const setTenant = (t) => store(TENANT_KEY, t);

/** onUnauthenticated sets what a 401 does (the app shows the sign-in panel). */
export function onUnauthenticated(fn) {
  unauthenticated = fn;
}

/** ApiError is a refused or failed call: status is the HTTP status. */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message || 'HTTP ' + status);
    this.status = status;
    this.code = code;
  }
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const token = getToken();
  if (token) h.Authorization = 'Bearer ' + token;
  const tenant = getTenant();
  if (tenant) h['X-Switchboard-Tenant'] = tenant;
  return h;
}

/** withQuery builds "path?query", skipping empty values; arrays repeat the key. */
export function withQuery(path, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one !== undefined && one !== null && one !== '') q.append(k, String(one));
    }
  }
  const s = q.toString();
  return s ? path + '?' + s : path;
}

async function failure(resp) {
  let message = '';
  let code;
  try {
    const body = await resp.json();
    message = body.message || '';
    code = body.code;
  } catch (_) {
    // Not a gateway error body (a proxy's page, say): the status says enough.
  }
  const err = new ApiError(resp.status, message || resp.status + ' ' + resp.statusText, code);
  if (resp.status === 401) unauthenticated(err);
  return err;
}

/**
 * call sends one request and returns the decoded JSON answer ({} for an
 * empty one). It throws ApiError on an HTTP error; network failures reject
 * as TypeError, aborts as AbortError.
 */
export async function call(method, path, { query, body, signal } = {}) {
  const init = { method, headers: headers(), cache: 'no-store', signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(withQuery(path, query), init);
  if (!resp.ok) throw await failure(resp);
  const text = await resp.text();
  return text ? JSON.parse(text) : {};
}

export const get = (path, query, signal) => call('GET', path, { query, signal });
export const post = (path, body, signal) => call('POST', path, { body: body || {}, signal });
export const patch = (path, body, signal) => call('PATCH', path, { body, signal });
export const del = (path, signal) => call('DELETE', path, { signal });

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

// readOnce reads one stream to its end, calling onResult for each result
// line. It resolves with why it ended and rejects on an HTTP, network or
// stream error.
async function readOnce(path, query, signal, onResult) {
  const controller = new AbortController();
  const cancel = () => controller.abort(new Error('stopped'));
  signal.addEventListener('abort', cancel);
  let idle = 0;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => controller.abort(new Error('no data for ' + IDLE_TIMEOUT_MS / 1000 + 's')), IDLE_TIMEOUT_MS);
  };
  const line = (text) => {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (_) {
      return; // not JSON: nothing the console can use
    }
    if (msg && msg.error) {
      const e = msg.error;
      const err = new ApiError(CODE_STATUS[e.code] || 500, e.message || 'stream error ' + e.code, e.code);
      if (err.status === 401) unauthenticated(err);
      throw err;
    }
    if (msg && msg.result && typeof msg.result === 'object') onResult(msg.result);
  };
  arm();
  try {
    const resp = await fetch(withQuery(path, query), { headers: headers(), cache: 'no-store', signal: controller.signal });
    if (!resp.ok) throw await failure(resp);
    if (!resp.body) throw new Error('no stream body');
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
      for (const l of lines) {
        if (signal.aborted) return 'stopped';
        if (l.trim()) line(l);
      }
    }
    buf += decoder.decode();
    if (buf.trim()) line(buf);
    return 'stream ended';
  } finally {
    clearTimeout(idle);
    signal.removeEventListener('abort', cancel);
    controller.abort();
  }
}

/**
 * stream keeps a server stream open until signal aborts: after it ends or
 * fails it waits (1 s doubling to 10 s) and opens it again. onOpen runs
 * before each attempt (to reset state a new stream resends); onResult gets
 * each message's result; onState gets 'connecting', 'reconnecting' (with
 * the reason) or 'refused' (with the ApiError: 401, 403, 400, 404 end it,
 * since retrying cannot help). Call ready() from onResult once the stream
 * is known good (a snapshot synced, a subscription confirmed): it resets the
 * backoff.
 */
export async function stream(path, { query, signal, onOpen, onResult, onState }) {
  let backoff = BACKOFF_MIN_MS;
  const ready = () => {
    backoff = BACKOFF_MIN_MS;
  };
  onState?.('connecting');
  while (!signal.aborted) {
    let reason;
    try {
      onOpen?.();
      reason = await readOnce(path, typeof query === 'function' ? query() : query, signal, (r) => onResult(r, ready));
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && [400, 401, 403, 404].includes(err.status)) {
        onState?.('refused', err);
        return;
      }
      reason = err && err.message ? err.message : String(err);
    }
    if (signal.aborted) return;
    onState?.('reconnecting', reason);
    const delay = backoff;
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    await sleep(delay, signal);
  }
}

/**
 * subscribe follows realtime channels (at most 100) through
 * RealtimeService.Subscribe. onEvent gets each RealtimeEvent ({durable, id,
 * channel, kind, payload, published_by, created_at}). Durable events resume after
 * the last id seen when the stream reconnects, so none is missed or shown
 * twice; lifecycle (sys:) events are ephemeral and need includeEphemeral.
 */
export function subscribe(channels, { signal, onEvent, onState, includeEphemeral = true, afterId = 0 }) {
  let last = afterId;
  return stream('api/realtime/subscribe', {
    signal,
    onState,
    query: () => ({ channels, include_ephemeral: includeEphemeral, after_id: last || undefined }),
    onResult(result, ready) {
      ready();
      const ev = result.event;
      if (!ev) return; // a keep-alive carries no event
      const id = Number(ev.id) || 0;
      if (id) {
        if (id <= last) return;
        last = id;
      }
      onEvent(ev, result);
    },
  });
}
