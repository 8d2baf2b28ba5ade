// Endpoints: the tenant's vended webhook URLs (AdminService endpoints).
//
//   #/endpoints          the list, with a button to create one
//   #/endpoints/new      the create form; on success the endpoint's page
//                        opens with its secret shown once, its full URL and
//                        the provider's setup steps for the chosen scheme
//   #/endpoints/<id>     one endpoint: settings, enable/disable, rotate the
//                        secret (AddEndpointSecret, then RemoveEndpointSecret
//                        of the old one), delete, and its recent deliveries
//                        (ListDeliveries), refreshed when sys:ingest reports
//                        an event for it
import * as api from '../lib/api.js';
import { ago, badge, field, h, notice, number, table } from '../lib/dom.js';
import { enabledBadge, follow, refusedText } from './endpoint-common.js';
import { handOverOneTime, hookAddress, mountDetail } from './endpoint-detail.js';
import { PREFIX, SCHEMES, generateSecret, schemeOf } from './endpoint-schemes.js';

const LIST_URL = 'api/admin/endpoints';

// ------------------------------------------------------------------ list

async function mountList(root, ctx) {
  const body = h('div', h('p.empty', 'Loading endpoints…'));
  const more = h('button.btn', { type: 'button', hidden: true, dataset: { action: 'more' } }, 'Load more');
  root.append(
    h(
      'header.view-head',
      h('h1', 'Endpoints'),
      h('div.actions', h('button.btn.primary', { type: 'button', id: 'new-endpoint', dataset: { action: 'new-endpoint' }, onclick: () => ctx.navigate('#/endpoints/new') }, 'New endpoint')),
    ),
    body,
    h('div.toolbar', more),
  );
  let rows = [];
  let token = '';
  const columns = [
    { label: 'Name', cell: (ep) => h('a', { href: '#/endpoints/' + encodeURIComponent(ep.id) }, ep.name || '(unnamed)') },
    { label: 'Path', className: 'mono', cell: (ep) => ep.url_path || '' },
    { label: 'Verification', cell: (ep) => badge(schemeOf(ep.verification).label, 'info') },
    { label: 'Queue', cell: (ep) => ep.queue || '—' },
    { label: 'Routes', className: 'num', cell: (ep) => number((ep.routes || []).length) },
    { label: 'State', cell: (ep) => enabledBadge(ep) },
    { label: 'Created', cell: (ep) => ago(ep.created_at) },
  ];
  // An administrator's list spans every tenant (ListEndpoints without
  // human_id): say whose each endpoint is.
  const owners = new Map((ctx.tenants || []).map((t) => [t.id, t.email || t.name || t.id]));
  const ownerColumn = { label: 'Tenant', cell: (ep) => h('span', { title: ep.human_id }, owners.get(ep.human_id) || (ep.human_id || '').slice(0, 8) + '…') };
  function render() {
    if (ctx.admin && new Set(rows.map((r) => r.human_id)).size > 1 && !columns.includes(ownerColumn)) columns.splice(1, 0, ownerColumn);
    const t = table(columns, rows, {
      label: 'Endpoints',
      empty: 'No endpoints yet. Create one with "New endpoint" to get a webhook URL to give a provider.',
      onRow: (ep) => ctx.navigate('#/endpoints/' + encodeURIComponent(ep.id)),
    });
    t.querySelectorAll('tbody tr').forEach((tr, i) => {
      tr.setAttribute('data-testid', 'endpoint-row');
      tr.dataset.endpointId = rows[i].id;
    });
    body.replaceChildren(t);
    more.hidden = !token;
  }
  async function load() {
    try {
      const res = await api.get(LIST_URL, { page_size: 100, page_token: token || undefined }, ctx.signal);
      rows = rows.concat(res.endpoints || []);
      token = res.next_page_token || '';
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      body.replaceChildren(notice(refusedText(err, 'list endpoints')));
    }
  }
  more.addEventListener('click', load);
  await load();
}

// ---------------------------------------------------------------- create

async function mountCreate(root, ctx) {
  const message = h('div');
  const name = h('input', { name: 'name', id: 'endpoint-name', maxlength: 200, placeholder: 'github-main', autocomplete: 'off' });
  const queue = h('input', { name: 'queue', id: 'endpoint-queue', required: true, pattern: '[a-z0-9][a-z0-9._\\-]{0,62}', placeholder: 'github', autocomplete: 'off' });
  const scheme = h(
    'select',
    { name: 'verification', id: 'endpoint-scheme' },
    SCHEMES.map((s) => h('option', { value: s.name, selected: s.name === 'GITHUB' }, s.label)),
  );
  const secret = h('input', { name: 'secret', id: 'endpoint-secret', autocomplete: 'off', spellcheck: 'false', maxlength: 1024 });
  const secretHint = h('small.hint');
  const sigHeader = h('input', { name: 'signature_header', id: 'endpoint-signature-header', placeholder: 'X-Signature' });
  const algorithm = h('select', { name: 'hmac_algorithm' }, h('option', { value: 'sha256' }, 'sha256'), h('option', { value: 'sha512' }, 'sha512'));
  const encoding = h('select', { name: 'hmac_encoding' }, h('option', { value: 'hex' }, 'hex'), h('option', { value: 'base64' }, 'base64'));
  const prefix = h('input', { name: 'signature_prefix', placeholder: 'sha256=', maxlength: 32 });
  const metaToken = h('input', { name: 'meta_verify_token', id: 'endpoint-meta-token', minlength: 8, maxlength: 256, autocomplete: 'off' });
  const deliveryHeader = h('input', { name: 'delivery_id_header', placeholder: "the scheme's own", maxlength: 128 });
  const topicHeader = h('input', { name: 'topic_header', placeholder: 'X-Event-Type', maxlength: 128 });
  const topicPointer = h('input', { name: 'topic_pointer', placeholder: '/event/type', maxlength: 255 });
  const agent = h('input', { name: 'agent_id', placeholder: 'agent uuid (optional)', autocomplete: 'off' });

  const hmacFields = h('div.form-grid', field('Signature header', sigHeader, 'required for generic HMAC'), field('Digest', algorithm), field('Encoding', encoding), field('Signature prefix', prefix));
  const metaFields = h('div.form-grid', field('Meta verify token', metaToken, 'a string of 8–256 characters you choose and also give Meta'));
  const submit = h('button.btn.primary', { type: 'submit', id: 'create-endpoint', dataset: { action: 'create' } }, 'Create endpoint');

  function sync() {
    const s = schemeOf(scheme.value);
    hmacFields.hidden = s.name !== 'HMAC_SHA256';
    sigHeader.required = s.name === 'HMAC_SHA256';
    metaFields.hidden = s.name !== 'META';
    metaToken.required = s.name === 'META';
    secret.disabled = s.secret === 'none';
    secret.required = s.secret === 'provider';
    secret.placeholder = {
      generate: 'leave empty to generate a strong one',
      basic: 'user:password (leave empty to generate)',
      provider: 'paste the secret the provider issued',
      later: 'optional: add it once the provider issues it',
      none: 'no secret',
    }[s.secret];
    secretHint.textContent = {
      generate: 'Empty: this page generates 32 random bytes. Shown once after creation.',
      basic: 'Empty: this page generates a user and password. Shown once after creation.',
      provider: 'The provider issues this secret; it cannot be generated.',
      later: 'The provider issues the secret once it knows the URL: leave it empty, then add it with "Rotate secret". Until then every delivery is refused.',
      none: 'Anyone who knows the URL can post.',
    }[s.secret];
  }
  scheme.addEventListener('change', sync);
  sync();

  const form = h(
    'form.panel',
    { id: 'endpoint-form', 'aria-label': 'New endpoint' },
    h('h2', 'New endpoint'),
    h(
      'div.form-grid',
      field('Name', name, 'a label for people'),
      field('Queue', queue, 'the queue its todos go to (lower case, digits, . _ -)'),
      field('Verification', scheme, 'how deliveries prove they come from the provider'),
      h('label.field', h('span.field-label', 'Secret'), secret, secretHint),
    ),
    hmacFields,
    metaFields,
    h(
      'details.advanced',
      h('summary', 'More options'),
      h('div.form-grid', field('Delivery id header', deliveryHeader), field('Topic header', topicHeader), field('Topic JSON pointer', topicPointer, 'at most one of the two'), field('Agent', agent)),
    ),
    h('div.toolbar', submit, h('a', { href: '#/endpoints' }, 'Cancel')),
  );
  root.append(h('header.view-head', h('h1', 'New endpoint'), h('a', { href: '#/endpoints' }, '← Endpoints')), message, form);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    message.replaceChildren();
    const s = schemeOf(scheme.value);
    let sec = secret.value.trim();
    if (!sec && !secret.disabled) sec = generateSecret(s);
    const body = { name: name.value.trim(), queue: queue.value.trim(), verification: PREFIX + s.name };
    if (sec) body.secret = sec;
    if (s.name === 'HMAC_SHA256') {
      body.signature_header = sigHeader.value.trim();
      body.hmac_algorithm = algorithm.value;
      body.hmac_encoding = encoding.value;
      if (prefix.value) body.signature_prefix = prefix.value;
    }
    if (s.name === 'META') body.meta_verify_token = metaToken.value;
    for (const [k, input] of [['delivery_id_header', deliveryHeader], ['topic_header', topicHeader], ['topic_pointer', topicPointer], ['agent_id', agent]]) {
      if (input.value.trim()) body[k] = input.value.trim();
    }
    submit.disabled = true;
    try {
      const res = await api.post(LIST_URL, body, ctx.signal);
      const ep = res.endpoint || {};
      handOverOneTime({ id: ep.id, secret: res.secret || '', created: true });
      ctx.toast('Endpoint created.');
      ctx.navigate('#/endpoints/' + encodeURIComponent(ep.id));
    } catch (err) {
      if (err.name === 'AbortError') return;
      message.replaceChildren(notice(refusedText(err, 'create endpoints')));
      submit.disabled = false;
    }
  });
  name.focus();
}

export async function mount(root, ctx) {
  const [first] = ctx.path;
  if (!first) return mountList(root, ctx);
  if (first === 'new') return mountCreate(root, ctx);
  return mountDetail(root, ctx, first);
}

// Other views import these from here; they live in the endpoint-* modules.
export { SCHEMES, follow, generateSecret, hookAddress, schemeOf };
