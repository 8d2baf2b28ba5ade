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
import { ago, badge, bytes, duration, errorText, field, h, notice, number, table, time } from '../lib/dom.js';

const LIST_URL = 'api/admin/endpoints';
const endpointUrl = (id) => 'api/admin/endpoints/' + encodeURIComponent(id);

// The schemes a person can pick, in the order the form lists them.
// secret: 'generate' (any strong random secret works: generated here when
// left empty), 'provider' (the provider issues it; required), 'later' (the
// provider issues it once it knows the URL: may be added afterwards),
// 'basic' (user:password), 'none'.
export const SCHEMES = [
  { name: 'GITHUB', label: 'GitHub', secret: 'generate', format: 'hex' },
  { name: 'STRIPE', label: 'Stripe', secret: 'later' },
  { name: 'SLACK', label: 'Slack', secret: 'provider' },
  { name: 'SHOPIFY', label: 'Shopify', secret: 'generate', format: 'hex' },
  { name: 'STANDARD_WEBHOOKS', label: 'Standard Webhooks (Svix, Clerk, Resend…)', secret: 'generate', format: 'whsec' },
  { name: 'ZOOM', label: 'Zoom', secret: 'provider' },
  { name: 'META', label: 'Meta (WhatsApp, Messenger, Instagram)', secret: 'provider' },
  { name: 'X', label: 'X (Account Activity API)', secret: 'provider' },
  { name: 'MS_GRAPH', label: 'Microsoft Graph', secret: 'generate', format: 'hex' },
  { name: 'TWILIO', label: 'Twilio', secret: 'provider' },
  { name: 'HMAC_SHA256', label: 'Generic HMAC (any sender)', secret: 'generate', format: 'hex' },
  { name: 'BEARER', label: 'Bearer token', secret: 'generate', format: 'bearer' },
  { name: 'BASIC', label: 'HTTP Basic (user:password)', secret: 'basic' },
  { name: 'NONE', label: 'None (the URL is the only protection)', secret: 'none' },
];
const PREFIX = 'VERIFICATION_SCHEME_';
const schemeName = (v) => (typeof v === 'string' ? v.replace(PREFIX, '') : String(v ?? ''));
const schemeOf = (v) => SCHEMES.find((s) => s.name === schemeName(v)) || { name: schemeName(v), label: schemeName(v), secret: 'generate', format: 'hex' };

// The provider's setup steps per scheme, condensed from docs/providers/*.md.
// "URL" and "secret" are the ones this page shows.
const SETUP = {
  GITHUB: [
    'In GitHub open the repository (or organisation, or GitHub App) → Settings → Webhooks → Add webhook.',
    'Payload URL: the webhook URL above.',
    'Content type: application/json.',
    'Secret: the secret above.',
    'Choose the events to send, keep SSL verification on, then Add webhook. GitHub sends a "ping" event at once: it shows up in Events with topic ping.',
  ],
  STRIPE: [
    'In the Stripe Dashboard: Developers → Webhooks → Add destination (older dashboards: Add endpoint).',
    'Choose the events (or all events), destination type Webhook endpoint, and paste the webhook URL above as the Endpoint URL.',
    'On the destination\'s page, Signing secret → Reveal, and add it here with "Rotate secret" (the endpoint refuses every delivery until it has one).',
    'Send a test event and look for it in Events (topic invoice.paid, for example).',
  ],
  SLACK: [
    'The secret is your app\'s Signing Secret (Your Apps → the app → Basic Information → App Credentials).',
    'Event Subscriptions → Enable Events; Request URL: the webhook URL above. Slack sends a signed url_verification that Switchboard answers, and shows Verified.',
    'Subscribe to bot events (app_mention, for example), Save Changes, and reinstall the app if asked.',
  ],
  SHOPIFY: [
    'A store\'s own webhooks: Shopify admin → Settings → Notifications → Webhooks. The key the page says webhooks are signed with is the secret: rotate this endpoint\'s secret to it.',
    'An app\'s webhooks: the app\'s Client secret (Partners or Dev Dashboard → the app → Settings) is the secret.',
    'Create webhook: the event, format JSON, the webhook URL above, and the API version.',
  ],
  STANDARD_WEBHOOKS: [
    'In the provider\'s dashboard add a webhook endpoint (Svix, Clerk: Webhooks → Add Endpoint; Resend: Webhooks → Add Webhook) with the webhook URL above.',
    'If the provider issues the signing secret (whsec_…), rotate this endpoint\'s secret to it; if it lets you set one, paste the secret above.',
    'Send a test event from the provider\'s dashboard.',
  ],
  ZOOM: [
    'The secret is the app\'s Secret Token (Zoom App Marketplace → Develop → the app → Features → Access).',
    'Features → Access → Event Subscription → Add Event Subscription: the Event notification endpoint URL is the webhook URL above; Validate (Switchboard answers Zoom\'s check).',
    'Add Events (Meeting → Start Meeting, for example) and Save.',
  ],
  META: [
    'The secret is the App Secret (Meta for Developers → My Apps → the app → App settings → Basic).',
    'WhatsApp → Configuration → Webhook → Edit (other products: Webhooks → Subscribe to this object). Callback URL: the webhook URL above; Verify token: the verify token you chose here; Verify and save.',
    'Subscribe to the fields you want (WhatsApp: messages).',
  ],
  X: [
    'The secret is the app\'s API Key Secret (developer portal → Projects & Apps → the app → Keys and tokens).',
    'Register the webhook URL above with the Account Activity API\'s webhook registration call; X sends a CRC check that Switchboard answers.',
    'Subscribe the accounts whose activity you want.',
  ],
  MS_GRAPH: [
    'The secret is the subscription\'s clientState.',
    'Create the subscription with Graph\'s subscriptions call: notificationUrl and lifecycleNotificationUrl are the webhook URL above, clientState the secret. Graph validates the URL and Switchboard answers it.',
    'Renew the subscription before its expirationDateTime.',
  ],
  TWILIO: [
    'The secret is the account\'s Auth Token (Twilio Console → Account Info).',
    'Set the endpoint\'s public URL to the webhook URL as Twilio will call it (PATCH public_url): Twilio signs the URL.',
    'Phone Numbers → Manage → Active numbers → the number → Configure: "A message comes in": Webhook, the webhook URL above, HTTP POST; Save.',
  ],
  HMAC_SHA256: [
    'Give the sender the webhook URL above and the secret.',
    'The sender signs the raw body with HMAC (the digest and encoding chosen here) and sends it in the signature header, after the prefix if one is set.',
    'Any content type works; name a topic header or pointer on the endpoint to give events a topic.',
  ],
  BEARER: ['Give the sender the webhook URL above.', 'The sender sends the header "Authorization: Bearer <secret>" with every request.'],
  BASIC: ['Give the sender the webhook URL above.', 'The sender authenticates with HTTP Basic authentication, the user and password of the secret.'],
  NONE: ['Give the sender the webhook URL above: anyone who knows it can post, so keep it private.'],
};

// One-time material handed from the create form to the endpoint's page
// (the same module instance): shown once, then forgotten.
let oneTime = null;

function randomBytes(n) {
  const b = new Uint8Array(n);
  crypto.getRandomValues(b);
  return b;
}
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const b64 = (b) => btoa(String.fromCharCode(...b));
const toBase64Url = (b) => b64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** generateSecret makes a strong secret in the form the scheme reads; '' when it takes none or the provider issues it. */
export function generateSecret(scheme) {
  switch (scheme.secret) {
    case 'generate':
      if (scheme.format === 'whsec') return 'whsec_' + b64(randomBytes(32));
      if (scheme.format === 'bearer') return 'sbw_' + toBase64Url(randomBytes(32));
      return hex(randomBytes(32));
    case 'basic':
      return 'webhook:' + toBase64Url(randomBytes(24));
    default:
      return '';
  }
}

const hookAddress = (ep) => window.location.origin + (ep.url_path || '/hooks/' + (ep.slug || ''));

async function copy(text, ctx) {
  try {
    await navigator.clipboard.writeText(text);
    ctx.toast('Copied.');
  } catch (_) {
    ctx.toast('Could not copy: select the text and copy it by hand.', 'error');
  }
}

function copyable(text, attrs, ctx, label) {
  return h(
    'div.copy-row',
    h('code.secret', attrs, text),
    h('button.btn', { type: 'button', dataset: { action: 'copy-' + label }, onclick: () => copy(text, ctx) }, 'Copy'),
  );
}

function setupSteps(ep) {
  const steps = SETUP[schemeName(ep.verification)] || [];
  return h('ol.setup-steps', { 'data-testid': 'setup-steps' }, steps.map((s) => h('li', s)));
}

const enabledBadge = (ep) => (ep.enabled === false ? badge('disabled', 'warn') : badge('enabled', 'ok'));

function refusedText(err, what) {
  if (err && err.status === 403) return 'This token may not ' + what + ': it needs the admin scope (' + err.message + ').';
  return errorText(err);
}

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
      oneTime = { id: ep.id, secret: res.secret || '', created: true };
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

// ---------------------------------------------------------------- detail

const OUTCOME_KIND = { accepted: 'ok', duplicate: 'info', handshake: 'info', unavailable: 'warn' };
const outcomeName = (v) => (typeof v === 'string' ? v.replace(/^DELIVERY_OUTCOME_/, '').toLowerCase() : String(v ?? ''));
const outcomeKind = (name) => OUTCOME_KIND[name] || (name.startsWith('rejected') ? 'bad' : 'muted');

function secretPanel(ctx, ep, secret, { created, rotated, oldIds = [], onRemoveOld } = {}) {
  const panel = h(
    'section.panel.once',
    { id: 'secret-once', 'data-testid': 'secret-once' },
    h('h2', created ? 'Endpoint created' : 'New secret'),
    secret
      ? [
          h('p.notice', { dataset: { kind: 'info' }, role: 'status' }, h('strong', 'Copy the secret now: you will not see it again. '), 'Switchboard stores it encrypted (or only its digest) and never shows it again.'),
          h('div.field', h('span.field-label', 'Secret'), copyable(secret, { id: 'endpoint-secret-value', 'data-testid': 'endpoint-secret' }, ctx, 'secret')),
        ]
      : schemeOf(ep.verification).secret === 'none'
        ? h('p.hint', 'This endpoint takes no secret.')
        : h('p.notice', { dataset: { kind: 'info' } }, 'No secret yet: add the one the provider issues with "Rotate secret". Until then every delivery is refused.'),
    h('div.field', h('span.field-label', 'Webhook URL'), copyable(hookAddress(ep), { id: 'endpoint-url-value', 'data-testid': 'endpoint-url' }, ctx, 'url')),
    created && h('h3', 'Set up ' + schemeOf(ep.verification).label),
    created && setupSteps(ep),
  );
  if (rotated && oldIds.length) {
    const btn = h('button.btn.danger', { type: 'button', dataset: { action: 'remove-old-secrets' } }, 'Remove the old secret' + (oldIds.length > 1 ? 's' : ''));
    btn.addEventListener('click', async () => {
      if (!window.confirm('Remove the old secret now? Deliveries signed with it are refused from then on: do it once the sender uses the new one.')) return;
      btn.disabled = true;
      try {
        for (const sid of oldIds) await api.del(endpointUrl(ep.id) + '/secrets/' + encodeURIComponent(sid), ctx.signal);
        ctx.toast('Old secret removed.');
        onRemoveOld?.();
      } catch (err) {
        btn.disabled = false;
        ctx.toast(refusedText(err, 'remove secrets'), 'error');
      }
    });
    panel.append(h('p.hint', 'The old secret keeps verifying until you remove it, so the sender can switch over first.'), h('div.toolbar', btn));
  }
  panel.append(h('div.toolbar', h('button.btn', { type: 'button', dataset: { action: 'dismiss-secret' }, onclick: () => panel.remove() }, "I've stored it")));
  return panel;
}

async function mountDetail(root, ctx, id) {
  const head = h('header.view-head', h('h1', 'Endpoint'), h('a', { href: '#/endpoints' }, '← Endpoints'));
  const message = h('div');
  const once = h('div');
  const settings = h('section.panel', { id: 'endpoint-settings' }, h('p.empty', 'Loading…'));
  const secrets = h('section.panel', { id: 'endpoint-secrets' });
  const setup = h('section.panel', { id: 'endpoint-setup' });
  const edit = h('section.panel', { id: 'endpoint-edit' });
  const deliveriesBody = h('div', h('p.empty', 'Loading deliveries…'));
  const deliveries = h(
    'section.panel',
    { id: 'endpoint-deliveries' },
    h('div.panel-head', h('h2', 'Recent deliveries'), h('button.btn', { type: 'button', dataset: { action: 'refresh-deliveries' }, onclick: () => loadDeliveries() }, 'Refresh')),
    deliveriesBody,
  );
  root.append(head, message, once, settings, deliveries, secrets, edit, setup);

  let ep;
  try {
    ep = (await api.get(endpointUrl(id), undefined, ctx.signal)).endpoint;
  } catch (err) {
    if (err.name === 'AbortError') return;
    settings.replaceChildren(notice(err.status === 404 ? 'No such endpoint: it may have been deleted.' : refusedText(err, 'read endpoints')));
    deliveries.remove();
    return;
  }

  if (oneTime && oneTime.id === ep.id) {
    once.replaceChildren(secretPanel(ctx, ep, oneTime.secret, { created: oneTime.created }));
    oneTime = null;
  }

  function renderHead() {
    const toggle = h(
      'button.btn',
      { type: 'button', id: 'toggle-enabled', dataset: { action: ep.enabled === false ? 'enable' : 'disable' } },
      ep.enabled === false ? 'Enable' : 'Disable',
    );
    toggle.addEventListener('click', () => setEnabled(ep.enabled === false));
    const rotate = h('button.btn', { type: 'button', id: 'rotate-secret', dataset: { action: 'rotate' }, hidden: schemeOf(ep.verification).secret === 'none' }, 'Rotate secret');
    rotate.addEventListener('click', rotateSecret);
    const del = h('button.btn.danger', { type: 'button', id: 'delete-endpoint', dataset: { action: 'delete' } }, 'Delete');
    del.addEventListener('click', remove);
    head.replaceChildren(
      h('h1', { id: 'endpoint-title' }, ep.name || 'Endpoint', ' ', enabledBadge(ep)),
      h('div.actions', h('a.btn-link', { href: '#/events?endpoint_id=' + encodeURIComponent(ep.id) }, 'Events'), toggle, rotate, del, h('a', { href: '#/endpoints' }, '← Endpoints')),
    );
  }

  function renderSettings() {
    const s = schemeOf(ep.verification);
    const rows = [
      ['Webhook URL', h('code', { 'data-testid': 'endpoint-url-static' }, hookAddress(ep))],
      ['Id', h('code', ep.id)],
      ['Verification', badge(s.label, 'info')],
      ['Queue', ep.queue ? h('a', { href: '#/queues/' + encodeURIComponent(ep.queue) }, ep.queue) : '—'],
      ['Agent', ep.agent_id ? h('code', ep.agent_id) : 'none'],
      ['Routes', (ep.routes || []).length ? (ep.routes || []).map((r) => h('div', h('code', JSON.stringify(r)))) : 'none: every event goes to the queue'],
      ep.signature_header && ['Signature header', h('code', ep.signature_header)],
      s.name === 'HMAC_SHA256' && ['HMAC', [ep.hmac_algorithm || 'sha256', ' · ', ep.hmac_encoding || 'hex', ep.signature_prefix ? ' · prefix ' + ep.signature_prefix : '']],
      ep.delivery_id_header && ['Delivery id header', h('code', ep.delivery_id_header)],
      ep.topic_header && ['Topic header', h('code', ep.topic_header)],
      ep.topic_pointer && ['Topic pointer', h('code', ep.topic_pointer)],
      ['Max body', bytes(ep.max_body_bytes || 1048576)],
      ep.tolerance_seconds && ['Timestamp tolerance', duration(ep.tolerance_seconds)],
      ['Rate limit', ep.rate_limit_per_second ? number(ep.rate_limit_per_second) + '/s' : "the tenant's"],
      ['Body dedup window', ep.body_dedup_window_seconds ? duration(ep.body_dedup_window_seconds) : 'off'],
      ep.public_url && ['Public URL', h('code', ep.public_url)],
      ['Created', time(ep.created_at)],
      ['Updated', time(ep.updated_at)],
    ].filter(Boolean);
    settings.replaceChildren(h('h2', 'Settings'), h('dl.kv', rows.map(([k, v]) => [h('dt', k), h('dd', v)])));
  }

  function renderSecrets() {
    const list = ep.secrets || [];
    secrets.replaceChildren(
      h('h2', 'Secrets'),
      schemeOf(ep.verification).secret === 'none'
        ? h('p.hint', 'This scheme uses no secret.')
        : table(
            [
              { label: 'Secret', className: 'mono', cell: (s) => s.hint || s.id },
              { label: 'Added', cell: (s) => ago(s.created_at) },
              { label: 'Expires', cell: (s) => (s.expires_at ? time(s.expires_at) : 'when removed') },
              {
                label: '',
                cell: (s) =>
                  h('button.btn.danger', { type: 'button', dataset: { action: 'remove-secret', secretId: s.id }, onclick: () => removeSecret(s) }, 'Remove'),
              },
            ],
            list,
            { label: 'Secrets', empty: 'No secret: every delivery is refused until one is added with "Rotate secret".' },
          ),
    );
  }

  function renderSetup() {
    setup.replaceChildren(h('details', h('summary', h('strong', 'Setting up ' + schemeOf(ep.verification).label)), setupSteps(ep)));
  }

  function renderAll() {
    renderHead();
    renderSettings();
    renderSecrets();
    renderSetup();
    renderEdit();
  }

  // Edit: the plain settings (UpdateEndpoint; over REST the field mask is
  // the PATCH body's keys, so only changed fields are sent).
  function renderEdit() {
    const inputs = {
      name: h('input', { name: 'name', value: ep.name || '', maxlength: 200 }),
      queue: h('input', { name: 'queue', value: ep.queue || '', required: true, pattern: '[a-z0-9][a-z0-9._\\-]{0,62}' }),
      agent_id: h('input', { name: 'agent_id', value: ep.agent_id || '', placeholder: 'none' }),
      max_body_bytes: h('input', { name: 'max_body_bytes', type: 'number', min: 1, max: 26214400, value: String(ep.max_body_bytes || '') }),
      rate_limit_per_second: h('input', { name: 'rate_limit_per_second', type: 'number', min: 0, max: 1000000, value: String(ep.rate_limit_per_second || 0) }),
      delivery_id_header: h('input', { name: 'delivery_id_header', value: ep.delivery_id_header || '', placeholder: "the scheme's own", maxlength: 128 }),
      topic_header: h('input', { name: 'topic_header', value: ep.topic_header || '', maxlength: 128 }),
      topic_pointer: h('input', { name: 'topic_pointer', value: ep.topic_pointer || '', placeholder: '/event/type', maxlength: 255 }),
    };
    const numeric = new Set(['max_body_bytes', 'rate_limit_per_second']);
    const msg = h('div');
    const save = h('button.btn.primary', { type: 'submit', dataset: { action: 'save-endpoint' } }, 'Save');
    const form = h(
      'form',
      { id: 'endpoint-edit-form', 'aria-label': 'Edit endpoint' },
      h(
        'div.form-grid',
        field('Name', inputs.name),
        field('Queue', inputs.queue),
        field('Agent', inputs.agent_id, 'agent uuid; empty for none'),
        field('Max body (bytes)', inputs.max_body_bytes),
        field('Rate limit (per second)', inputs.rate_limit_per_second, "0: only the tenant's limit"),
        field('Delivery id header', inputs.delivery_id_header),
        field('Topic header', inputs.topic_header),
        field('Topic JSON pointer', inputs.topic_pointer, 'at most one of the two'),
      ),
      msg,
      h('div.toolbar', save),
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      msg.replaceChildren();
      const body = {};
      for (const [k, input] of Object.entries(inputs)) {
        const v = numeric.has(k) ? Number(input.value || 0) : input.value.trim();
        const was = numeric.has(k) ? Number(ep[k] || 0) : ep[k] || '';
        if (v !== was) body[k] = v;
      }
      if (!Object.keys(body).length) {
        msg.replaceChildren(notice('Nothing changed.', 'info'));
        return;
      }
      save.disabled = true;
      try {
        ep = (await api.patch(endpointUrl(ep.id), body, ctx.signal)).endpoint || ep;
        ctx.toast('Endpoint saved.');
        renderAll();
      } catch (err) {
        if (err.name === 'AbortError') return;
        msg.replaceChildren(notice(refusedText(err, 'change endpoints')));
        save.disabled = false;
      }
    });
    const open = edit.querySelector('details')?.open;
    edit.replaceChildren(h('details', { open: !!open }, h('summary', h('strong', 'Edit settings')), form));
  }
  renderAll();

  async function setEnabled(on) {
    if (!on && !window.confirm('Disable this endpoint? It answers 404 to every delivery until it is enabled again.')) return;
    try {
      ep = (await api.patch(endpointUrl(ep.id), { enabled: on }, ctx.signal)).endpoint || { ...ep, enabled: on };
      ctx.toast(on ? 'Endpoint enabled.' : 'Endpoint disabled.');
      renderAll();
    } catch (err) {
      if (err.name !== 'AbortError') ctx.toast(refusedText(err, 'change endpoints'), 'error');
    }
  }

  async function rotateSecret() {
    const s = schemeOf(ep.verification);
    let secret = '';
    if (s.secret === 'provider' || s.secret === 'later') {
      secret = (window.prompt('Paste the new secret the provider issued (' + s.label + '):') || '').trim();
      if (!secret) return;
    } else {
      if (!window.confirm('Rotate the secret? A new secret is generated and shown once; the old one keeps verifying until you remove it.')) return;
      secret = generateSecret(s);
    }
    const oldIds = (ep.secrets || []).map((x) => x.id);
    try {
      const res = await api.post(endpointUrl(ep.id) + '/secrets', { secret }, ctx.signal);
      ep = res.endpoint || ep;
      ctx.toast('New secret added.');
      renderAll();
      once.replaceChildren(
        secretPanel(ctx, ep, res.secret || secret, {
          rotated: true,
          oldIds: oldIds.filter((x) => x !== res.secret_id),
          onRemoveOld: reload,
        }),
      );
    } catch (err) {
      if (err.name !== 'AbortError') ctx.toast(refusedText(err, 'add secrets'), 'error');
    }
  }

  async function removeSecret(s) {
    if (!window.confirm('Remove secret ' + (s.hint || s.id) + '? Deliveries signed with it are refused from then on.')) return;
    try {
      ep = (await api.del(endpointUrl(ep.id) + '/secrets/' + encodeURIComponent(s.id), ctx.signal)).endpoint || ep;
      ctx.toast('Secret removed.');
      await reload();
    } catch (err) {
      if (err.name !== 'AbortError') ctx.toast(err.status === 412 || err.code === 9 ? 'That is the last secret: add the replacement first (Rotate secret).' : refusedText(err, 'remove secrets'), 'error');
    }
  }

  async function remove() {
    if (!window.confirm('Delete endpoint "' + (ep.name || ep.id) + '"? Its URL answers 404 from then on; stored events are kept.')) return;
    try {
      await api.del(endpointUrl(ep.id), ctx.signal);
      ctx.toast('Endpoint deleted.');
      ctx.navigate('#/endpoints');
    } catch (err) {
      if (err.name !== 'AbortError') ctx.toast(refusedText(err, 'delete endpoints'), 'error');
    }
  }

  async function reload() {
    try {
      ep = (await api.get(endpointUrl(id), undefined, ctx.signal)).endpoint || ep;
      renderAll();
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
    }
  }

  // Recent deliveries (ListDeliveries): every request the endpoint
  // answered, accepted or not.
  let loading = false;
  let again = false;
  async function loadDeliveries() {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const res = await api.get('api/endpoints/' + encodeURIComponent(ep.id) + '/deliveries', { page_size: 50 }, ctx.signal);
      const list = res.deliveries || [];
      const t = table(
        [
          { label: 'Received', cell: (d) => ago(d.received_at) },
          {
            label: 'Outcome',
            cell: (d) => {
              const n = outcomeName(d.outcome);
              return badge(n.replace(/_/g, ' '), outcomeKind(n));
            },
          },
          { label: 'HTTP', className: 'num', cell: (d) => (d.http_status ? String(d.http_status) : '—') },
          { label: 'Event', cell: (d) => (d.event_id && d.event_id !== '0' ? h('a', { href: '#/events/' + encodeURIComponent(d.event_id) }, '#' + d.event_id) : '—') },
          { label: 'Topic', cell: (d) => d.topic || '—' },
          { label: 'Delivery id', className: 'mono', cell: (d) => d.delivery_id || '—' },
          { label: 'Size', className: 'num', cell: (d) => (d.size_bytes !== undefined ? bytes(d.size_bytes) : '—') },
          {
            label: 'Detail',
            cell: (d) => [
              d.detail || '',
              Number(d.dropped_before) > 0 ? h('small.hint', { title: 'refusals are recorded at most a few a second per endpoint and node' }, (d.detail ? ' · ' : '') + '+' + number(d.dropped_before) + ' earlier refusals not recorded') : null,
            ],
          },
        ],
        list,
        { label: 'Recent deliveries', empty: 'No deliveries yet. Give the provider the webhook URL, or send a test event from its webhook settings page.' },
      );
      t.querySelectorAll?.('tbody tr').forEach((tr, i) => {
        tr.setAttribute('data-testid', 'delivery-row');
        tr.dataset.outcome = outcomeName(list[i].outcome);
      });
      deliveriesBody.replaceChildren(t);
    } catch (err) {
      if (err.name === 'AbortError') return;
      deliveriesBody.replaceChildren(
        err.status === 404 || err.status === 501
          ? notice('This server does not keep a delivery history yet (ListDeliveries is not available). The events this endpoint stored are under Events.', 'info')
          : notice(refusedText(err, 'read deliveries')),
      );
    } finally {
      loading = false;
      if (again) {
        again = false;
        setTimeout(loadDeliveries, 300);
      }
    }
  }
  loadDeliveries();

  // sys:ingest says when this endpoint stored an event: refresh the
  // deliveries then. The delivery log is written in batches off the
  // request's path (within about a second), so read it shortly after and
  // once more a little later; a burst of events coalesces into these two.
  let timer = 0;
  let later = 0;
  const source = 'endpoint:' + ep.id;
  follow(['sys:ingest'], ctx, (ev) => {
    if (ev.kind !== 'event.received' || !ev.payload || ev.payload.source !== source) return;
    clearTimeout(timer);
    clearTimeout(later);
    timer = setTimeout(loadDeliveries, 400);
    later = setTimeout(loadDeliveries, 1600);
  });
  ctx.signal.addEventListener('abort', () => {
    clearTimeout(timer);
    clearTimeout(later);
  });
}

/**
 * follow subscribes to channels (ephemeral included), reporting the stream
 * state in the top bar: live once the server answers (the subscription's
 * own presence.join or a keep-alive), refused with the reason.
 */
export function follow(channels, ctx, onEvent, onRefused) {
  let last = 0;
  return api.stream('api/realtime/subscribe', {
    signal: ctx.signal,
    query: () => ({ channels, include_ephemeral: true, after_id: last || undefined }),
    onState(state, detail) {
      if (state === 'refused') onRefused?.(detail);
      ctx.setStatus(state, detail && (detail.message || detail));
    },
    onResult(result, ready) {
      ready();
      ctx.setStatus('live');
      const ev = result.event;
      if (!ev) return;
      const id = Number(ev.id) || 0;
      if (id) {
        if (id <= last) return;
        last = id;
      }
      onEvent(ev);
    },
  });
}

export async function mount(root, ctx) {
  const [first] = ctx.path;
  if (!first) return mountList(root, ctx);
  if (first === 'new') return mountCreate(root, ctx);
  return mountDetail(root, ctx, first);
}

export { hookAddress, schemeOf };
