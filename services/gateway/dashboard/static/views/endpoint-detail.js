// One endpoint's page (#/endpoints/<id>): settings, enable/disable, rotate
// the secret (AddEndpointSecret, then RemoveEndpointSecret of the old one),
// delete, and its recent deliveries (ListDeliveries), refreshed when
// sys:ingest reports an event for it. Not a view: endpoints.js mounts it.
import * as api from '../lib/api.js';
import { ago, badge, bytes, duration, errorText, field, h, notice, number, table, time } from '../lib/dom.js';
import { enabledBadge, follow, refusedText } from './endpoint-common.js';
import { generateSecret, schemeOf, setupSteps } from './endpoint-schemes.js';

const endpointUrl = (id) => 'api/admin/endpoints/' + encodeURIComponent(id);

// One-time material handed from the create form to the endpoint's page
// (both share this module instance): shown once, then forgotten.
let oneTime = null;

/** handOverOneTime keeps what creating an endpoint returned (its secret) for the endpoint's page to show once. */
export function handOverOneTime(material) {
  oneTime = material;
}

export const hookAddress = (ep) => window.location.origin + (ep.url_path || '/hooks/' + (ep.slug || ''));

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

export async function mountDetail(root, ctx, id) {
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
