// Switchboard console: sign-in, navigation and the view router.
//
// The route lives in the URL hash, "#/<view>/<path…>?<params>", so every
// screen (a filtered todo list, one event) is a link that can be shared or
// reloaded. Each view is a module in views/ exporting
//
//   mount(root, ctx)   render into root; ctx.signal aborts when the view is
//                      left, the route changes or the token changes
//
// and is loaded the first time it is shown. Views keep themselves live with
// the API's streams (lib/api.js stream, subscribe), never with polling loops.
import * as api from './lib/api.js';
import { h, tick } from './lib/dom.js';

/** The views, in navigation order; admin views are hidden from tenants. */
const VIEWS = [
  { name: 'queues', title: 'Queues' },
  { name: 'todos', title: 'Todos' },
  { name: 'events', title: 'Events' },
  { name: 'endpoints', title: 'Endpoints' },
  { name: 'schedules', title: 'Schedules' },
  { name: 'realtime', title: 'Realtime' },
  { name: 'nodes', title: 'Nodes', admin: true },
  { name: 'settings', title: 'Settings', admin: true },
];
const DEFAULT_VIEW = 'queues';

const STATUS_TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  refused: 'refused',
  signedout: 'signed out',
};

const els = {
  nav: document.getElementById('nav'),
  view: document.getElementById('view'),
  status: document.getElementById('status'),
  signin: document.getElementById('signin'),
  token: document.getElementById('token'),
  signinMessage: document.getElementById('signin-message'),
  signout: document.getElementById('signout'),
  tenant: document.getElementById('tenant'),
  toasts: document.getElementById('toasts'),
};

/** Who the token is: admin is null until known (the probe failed). */
const me = { admin: null, tenants: [] };
/** The mounted view's controller; aborting it unmounts the view. */
let current = null;
/** Bumped on every mount, so a slow import cannot mount a stale route. */
let generation = 0;

// ---------------------------------------------------------------- routing

function parseRoute() {
  const raw = window.location.hash.replace(/^#\/?/, '');
  const [pathPart, query = ''] = raw.split('?');
  const segments = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  const name = segments.shift() || DEFAULT_VIEW;
  return { name, path: segments, params: new URLSearchParams(query) };
}

/** navigate goes to "#/view/…?…" (a string) or to the current view with new params (an object). */
function navigate(to, { replace = false } = {}) {
  let hash = to;
  if (typeof to === 'object') {
    const r = parseRoute();
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(to)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    hash = '#/' + [r.name, ...r.path].map(encodeURIComponent).join('/') + (q.toString() ? '?' + q : '');
  }
  if (replace) {
    window.history.replaceState(null, '', hash);
    mount();
  } else if (window.location.hash === hash) {
    mount();
  } else {
    window.location.hash = hash;
  }
}

function renderNav(active) {
  els.nav.replaceChildren(
    ...VIEWS.filter((v) => !v.admin || me.admin !== false).map((v) =>
      h('a', { href: '#/' + v.name, 'aria-current': v.name === active ? 'page' : false, dataset: { view: v.name } }, v.title),
    ),
  );
}

function setStatus(state, detail) {
  els.status.hidden = !state;
  if (!state) return;
  els.status.dataset.state = state;
  els.status.textContent = STATUS_TEXT[state] || state;
  els.status.title = detail ? String(detail) : '';
  document.body.classList.toggle('disconnected', state === 'reconnecting');
}

function toast(text, kind = 'ok') {
  const t = h('div.toast', { dataset: { kind }, role: kind === 'error' ? 'alert' : 'status' }, text);
  els.toasts.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

async function mount() {
  if (current) current.abort();
  current = null;
  if (!api.getToken()) {
    showSignIn(401);
    return;
  }
  hideSignIn();
  const route = parseRoute();
  const spec = VIEWS.find((v) => v.name === route.name);
  renderNav(spec ? spec.name : '');
  setStatus(null);
  const gen = ++generation;
  const controller = new AbortController();
  current = controller;
  els.view.replaceChildren();
  els.view.dataset.view = route.name;
  document.title = 'Switchboard · ' + (spec ? spec.title : 'Not found');
  if (!spec) {
    els.view.append(h('p.empty', 'No such view: ' + route.name));
    return;
  }
  let mod;
  try {
    mod = await import('./views/' + spec.name + '.js');
  } catch (err) {
    if (gen === generation) els.view.append(h('p.notice', { dataset: { kind: 'error' } }, 'Could not load this view: ' + err.message));
    return;
  }
  if (gen !== generation || controller.signal.aborted) return;
  const ctx = {
    signal: controller.signal,
    path: route.path,
    params: route.params,
    admin: me.admin === true,
    tenants: me.tenants,
    navigate,
    setStatus: (state, detail) => {
      if (!controller.signal.aborted) setStatus(state, detail);
    },
    toast,
  };
  try {
    await mod.mount(els.view, ctx);
  } catch (err) {
    if (controller.signal.aborted || err?.name === 'AbortError' || err?.status === 401) return;
    console.error(err);
    els.view.append(h('p.notice', { dataset: { kind: 'error' }, role: 'alert' }, err.message || String(err)));
  }
}

// ---------------------------------------------------------------- who am I

// probe learns whether the token is an administrator's (ListHumans is the
// administrator's alone) and, if so, the tenants it may act in. A token
// that ListHumans refuses with 401 signs the console out (lib/api.js), and
// probe returns false.
async function probe() {
  try {
    const body = await api.get('api/admin/humans', { page_size: 1000 });
    me.admin = true;
    me.tenants = Array.isArray(body.humans) ? body.humans : [];
  } catch (err) {
    if (err.status === 401) return false;
    // 403: a tenant's token. Anything else (no admin service behind this
    // gateway, a network fault) leaves it unknown: the admin views stay
    // listed and say so themselves if they are refused.
    me.admin = err.status === 403 ? false : null;
    me.tenants = [];
  }
  renderTenants();
  return true;
}

function renderTenants() {
  const chosen = api.getTenant();
  els.tenant.hidden = !me.admin || me.tenants.length < 2;
  els.tenant.replaceChildren(
    h('option', { value: '' }, 'my tenant'),
    ...me.tenants.map((t) => h('option', { value: t.id, selected: t.id === chosen }, t.email || t.name || t.id)),
  );
}

els.tenant.addEventListener('change', () => {
  api.setTenant(els.tenant.value || null);
  mount();
});

// ---------------------------------------------------------------- sign-in

const SIGNIN_TEXT = {
  401: ['Paste a token (', ['switchboard token create --admin'], ', or the token ', ['make run'], ' printed).'],
  checking: ['Checking the token…'],
};

function setSignInMessage(key) {
  els.signinMessage.dataset.kind = String(key);
  els.signinMessage.replaceChildren(...SIGNIN_TEXT[key].map((part) => (Array.isArray(part) ? h('code', part[0]) : part)));
}

// showSignIn unmounts the view (its credential is gone or refused) and asks
// for a token.
function showSignIn() {
  if (current) current.abort();
  current = null;
  generation++;
  els.view.replaceChildren();
  els.nav.replaceChildren();
  els.tenant.hidden = true;
  setStatus('signedout');
  setSignInMessage(401);
  els.token.value = '';
  els.token.setAttribute('aria-invalid', api.getToken() ? 'true' : 'false');
  const wasHidden = els.signin.hidden;
  els.signin.hidden = false;
  els.signout.hidden = !api.getToken();
  if (wasHidden || document.activeElement === document.body || els.signin.contains(document.activeElement)) els.token.focus();
}

function hideSignIn() {
  els.signout.hidden = !api.getToken();
  if (els.signin.hidden) return;
  els.signin.hidden = true;
  els.token.value = '';
  els.token.removeAttribute('aria-invalid');
}

api.onUnauthenticated(() => showSignIn());

els.signin.addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const token = els.token.value.trim();
  if (token === '') {
    els.token.focus();
    return;
  }
  api.setToken(token);
  api.setTenant(null);
  setSignInMessage('checking');
  els.token.removeAttribute('aria-invalid');
  await start();
});

els.signout.addEventListener('click', () => {
  api.setToken(null);
  api.setTenant(null);
  me.admin = null;
  showSignIn();
});

// Another tab signing in or out changes what this one sends.
window.addEventListener('storage', (ev) => {
  if (ev.key === api.TOKEN_STORAGE_KEY || ev.key === null) els.signout.hidden = !api.getToken();
});

window.addEventListener('hashchange', () => mount());

async function start() {
  if (!api.getToken()) {
    showSignIn();
    return;
  }
  if (await probe()) await mount();
}

setInterval(() => tick(els.view), 1000);
start();
