// Schedules: the tenant's cron schedules (ListSchedules) with their next and
// last fire, and create / edit (timing, pause) / delete. Writes are the
// tenant admin's (a read token sees the list; a refused write says why).
//
// Live: one Subscribe to sys:queue:<queue> for the schedules' queues; a
// schedule.fired event re-reads the list (its last and next fire moved).
import * as api from '../lib/api.js';
import { ago, errorText, field, h, notice, table, time } from '../lib/dom.js';
import { btn, busy, debouncer, follow, loading, until } from './queue-common.js';

const enc = encodeURIComponent;
const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const MISFIRE = [
  ['MISFIRE_RUN_ONCE', 'run once for the missed ticks'],
  ['MISFIRE_SKIP', 'skip the missed ticks'],
];

async function listSchedules(signal) {
  const all = [];
  let token = '';
  for (let i = 0; i < 20; i++) {
    const body = await api.get('api/schedules', { page_size: 100, page_token: token }, signal);
    all.push(...(body.schedules || []));
    token = body.next_page_token || '';
    if (!token) break;
  }
  return all;
}

function refusal(err, what) {
  if (err.status === 403) return 'This token may not ' + what + ': creating, changing and deleting schedules takes the tenant\'s admin scope.';
  return errorText(err);
}

/** parseObject reads a JSON object from a textarea; throws with a readable message. */
function parseObject(text, label) {
  const s = text.trim();
  if (!s) return {};
  let v;
  try {
    v = JSON.parse(s);
  } catch (err) {
    throw new Error(label + ' is not valid JSON: ' + err.message);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(label + ' must be a JSON object ({…}).');
  return v;
}

function createForm(ctx, { onDone, onCancel }) {
  const name = h('input', { name: 'name', required: true, placeholder: 'nightly-report', pattern: NAME_RE.source, dataset: { testid: 'schedule-name' } });
  const cron = h('input', { name: 'cron', required: true, placeholder: '0 3 * * *', dataset: { testid: 'schedule-cron' } });
  const tz = h('input', { name: 'time_zone', placeholder: 'UTC', dataset: { testid: 'schedule-tz' } });
  const queue = h('input', { name: 'queue', required: true, placeholder: 'reports', pattern: NAME_RE.source, dataset: { testid: 'schedule-queue' } });
  const kind = h('input', { name: 'kind', placeholder: 'build_report', dataset: { testid: 'schedule-kind' } });
  const payload = h('textarea', { name: 'payload', rows: '4', spellcheck: 'false', placeholder: '{"report": "daily"}', dataset: { testid: 'schedule-payload' } });
  const priority = h('input', { name: 'priority', type: 'number', min: '0', max: '4', placeholder: '2' });
  const attempts = h('input', { name: 'max_attempts', type: 'number', min: '1', max: '1000', placeholder: 'default' });
  const misfire = h('select', { name: 'misfire' }, MISFIRE.map(([v, t]) => h('option', { value: v }, t)));
  const paused = h('input', { type: 'checkbox', name: 'paused' });
  const payloadMsg = h('small.hint.field-error', { role: 'alert' });
  const msg = h('div');
  const save = btn('Create schedule', { kind: 'primary', type: 'submit', action: 'create-schedule' });
  const form = h(
    'form.panel.schedule-form',
    { dataset: { testid: 'schedule-form' }, novalidate: true },
    h('h2', 'New schedule'),
    msg,
    h(
      'div.fields-grid',
      field('Name', name, 'a–z, 0–9, . _ -; unique'),
      field('Cron', cron, '5 fields (6 with seconds), @every 10m, or @hourly, @daily…'),
      field('Time zone', tz, 'IANA name, e.g. Europe/Berlin; empty = UTC'),
      field('Queue', queue, 'where each tick enqueues a todo'),
      field('Kind', kind, 'the todo\'s kind (optional)'),
      field('Priority', priority, '0 (most urgent) – 4; empty = 2'),
      field('Max attempts', attempts, 'empty = the queue default'),
      field('Misfire', misfire, 'after an outage'),
    ),
    field('Payload (JSON object)', payload, payloadMsg),
    h('label.checkline', paused, ' create paused'),
    h('div.form-actions', save, btn('Cancel', { onclick: onCancel })),
  );
  const checkPayload = () => {
    try {
      parseObject(payload.value, 'The payload');
      payloadMsg.textContent = '';
      payload.removeAttribute('aria-invalid');
      return true;
    } catch (err) {
      payloadMsg.textContent = err.message;
      payload.setAttribute('aria-invalid', 'true');
      return false;
    }
  };
  payload.addEventListener('input', checkPayload);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    msg.replaceChildren();
    const problems = [];
    if (!NAME_RE.test(name.value.trim())) problems.push('The name must match ' + NAME_RE.source + '.');
    if (!cron.value.trim()) problems.push('The cron expression is required.');
    if (!NAME_RE.test(queue.value.trim())) problems.push('The queue name must match ' + NAME_RE.source + '.');
    if (!checkPayload()) problems.push(payloadMsg.textContent);
    if (problems.length) {
      msg.replaceChildren(notice(problems.join(' ')));
      return;
    }
    const template = { queue: queue.value.trim(), kind: kind.value.trim(), payload: parseObject(payload.value, 'The payload') };
    if (priority.value !== '') template.priority = Number(priority.value);
    if (attempts.value !== '') template.max_attempts = Number(attempts.value);
    const body = { name: name.value.trim(), cron: cron.value.trim(), time_zone: tz.value.trim(), template, misfire: misfire.value, paused: paused.checked };
    try {
      const res = await busy(save, () => api.post('api/schedules', body, ctx.signal));
      ctx.toast('Schedule ' + res.schedule.name + ' created');
      onDone(res.schedule);
    } catch (err) {
      if (err.name !== 'AbortError') msg.replaceChildren(notice(refusal(err, 'create schedules')));
    }
  });
  return form;
}

function editForm(s, ctx, { onDone, onCancel }) {
  const cron = h('input', { name: 'cron', value: s.cron, required: true, dataset: { testid: 'edit-cron' } });
  const tz = h('input', { name: 'time_zone', value: s.time_zone || '', placeholder: 'UTC' });
  const misfire = h('select', { name: 'misfire' }, MISFIRE.map(([v, t]) => h('option', { value: v, selected: v === s.misfire }, t)));
  const paused = h('input', { type: 'checkbox', name: 'paused', checked: !!s.paused });
  const payload = h('textarea', { name: 'payload', rows: '4', spellcheck: 'false' }, JSON.stringify(s.template?.payload || {}, null, 2));
  const msg = h('div');
  const save = btn('Save', { kind: 'primary', type: 'submit', action: 'save-schedule' });
  const form = h(
    'form.panel.schedule-form',
    { dataset: { testid: 'schedule-edit', id: s.id } },
    h('h2', 'Edit ', h('code', s.name)),
    msg,
    h('div.fields-grid', field('Cron', cron), field('Time zone', tz, 'empty = UTC'), field('Misfire', misfire)),
    field('Payload (JSON object; replaces the template\'s)', payload),
    h('label.checkline', paused, ' paused'),
    h('div.form-actions', save, btn('Cancel', { onclick: onCancel })),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    msg.replaceChildren();
    const body = {};
    if (cron.value.trim() !== s.cron) body.cron = cron.value.trim();
    if (tz.value.trim() !== (s.time_zone || '')) body.time_zone = tz.value.trim();
    if (misfire.value !== s.misfire) body.misfire = misfire.value;
    if (paused.checked !== !!s.paused) body.paused = paused.checked;
    let p;
    try {
      p = parseObject(payload.value, 'The payload');
    } catch (err) {
      msg.replaceChildren(notice(err.message));
      return;
    }
    if (JSON.stringify(p) !== JSON.stringify(s.template?.payload || {})) body.template = { ...s.template, payload: p };
    if (!Object.keys(body).length) {
      onCancel();
      return;
    }
    try {
      const res = await busy(save, () => api.patch('api/schedules/' + enc(s.id), body, ctx.signal));
      ctx.toast('Schedule ' + s.name + ' saved');
      onDone(res.schedule);
    } catch (err) {
      if (err.name !== 'AbortError') msg.replaceChildren(notice(refusal(err, 'change schedules')));
    }
  });
  return form;
}

export async function mount(root, ctx) {
  const message = h('div', { id: 'schedules-message' });
  const editor = h('div', { id: 'schedule-editor' });
  const list = h('div', { id: 'schedules' }, loading('Loading schedules…'));
  const countEl = h('span.size');
  const closeEditor = () => editor.replaceChildren();
  const newBtn = btn('New schedule', {
    kind: 'primary',
    action: 'new-schedule',
    onclick: () => {
      editor.replaceChildren(createForm(ctx, { onDone: () => (closeEditor(), reload()), onCancel: closeEditor }));
      editor.querySelector('input')?.focus();
    },
  });
  root.append(h('header.view-head', h('h1', 'Schedules ', countEl), h('div.actions', newBtn)), message, editor, list);

  let schedules = [];
  let subscribed = '';
  let sub = null;

  async function act(button, fn) {
    message.replaceChildren();
    try {
      await busy(button, fn);
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(refusal(err, 'change schedules')));
    }
  }

  const columns = [
    { label: 'Name', cell: (s) => h('strong.schedule-name', s.name) },
    { label: 'When', className: 'mono', cell: (s) => [s.cron, s.time_zone && s.time_zone !== 'UTC' ? h('small.hint', ' ' + s.time_zone) : h('small.hint', ' UTC')] },
    { label: 'Queue', cell: (s) => (s.template?.queue ? h('a', { href: '#/queues/' + enc(s.template.queue) }, s.template.queue) : '—') },
    { label: 'Kind', className: 'mono', cell: (s) => s.template?.kind || '—' },
    {
      label: 'Next fire',
      cell: (s) => (s.paused ? h('span.hint', 'paused') : s.next_runs && s.next_runs.length ? h('span', { title: s.next_runs.map((r) => time(r)).join('\n') }, time(s.next_runs[0]), ' ', h('small.hint', until(s.next_runs[0]))) : '—'),
    },
    {
      label: 'Last fire',
      cell: (s) => (s.last_run_at ? [ago(s.last_run_at), Number(s.last_todo_id) ? [' ', h('a', { href: '#/todos/' + enc(s.last_todo_id) }, '#' + s.last_todo_id)] : null] : 'never'),
    },
    { label: 'State', cell: (s) => h('span.badge', { dataset: { kind: s.paused ? 'warn' : 'ok', testid: 'schedule-state', paused: String(!!s.paused) } }, s.paused ? 'paused' : 'enabled') },
    {
      label: 'Actions',
      className: 'actions-cell',
      cell: (s) =>
        h(
          'div.row-actions',
          btn(s.paused ? 'Resume' : 'Pause', {
            action: s.paused ? 'resume' : 'pause',
            onclick: (ev) =>
              act(ev.currentTarget, async () => {
                const res = await api.patch('api/schedules/' + enc(s.id), { paused: !s.paused }, ctx.signal);
                ctx.toast('Schedule ' + s.name + (res.schedule.paused ? ' paused' : ' resumed'));
                replace(res.schedule);
              }),
          }),
          btn('Edit', {
            action: 'edit',
            onclick: () => {
              editor.replaceChildren(editForm(s, ctx, { onDone: (n) => (closeEditor(), replace(n)), onCancel: closeEditor }));
              editor.querySelector('input')?.focus();
            },
          }),
          btn('Delete', {
            action: 'delete',
            kind: 'danger',
            onclick: (ev) => {
              if (!window.confirm('Delete schedule "' + s.name + '"? The todos it already made stay.')) return;
              act(ev.currentTarget, async () => {
                await api.del('api/schedules/' + enc(s.id), ctx.signal);
                ctx.toast('Schedule ' + s.name + ' deleted');
                schedules = schedules.filter((x) => x.id !== s.id);
                render();
              });
            },
          }),
        ),
    },
  ];

  function replace(s) {
    schedules = schedules.map((x) => (x.id === s.id ? s : x));
    render();
  }

  function render() {
    countEl.textContent = schedules.length ? '(' + schedules.length + ')' : '';
    const t = table(columns, schedules, {
      label: 'Schedules',
      empty: 'No schedules yet. "New schedule" enqueues a todo on a cron clock (every tick, exactly once across the cluster).',
    });
    for (const [i, tr] of [...t.querySelectorAll('tbody tr')].entries()) {
      tr.dataset.testid = 'schedule-row';
      tr.dataset.name = schedules[i].name;
      tr.dataset.id = schedules[i].id;
      tr.dataset.paused = String(!!schedules[i].paused);
    }
    list.replaceChildren(t);
    resubscribe();
  }

  const refresh = debouncer(() => reload(), 500, ctx.signal);

  function resubscribe() {
    const queues = [...new Set(schedules.map((s) => s.template?.queue).filter(Boolean))].sort().slice(0, 100);
    const key = queues.join(',');
    if (key === subscribed) return;
    subscribed = key;
    if (sub) sub.abort();
    sub = null;
    if (!queues.length) return;
    sub = new AbortController();
    ctx.signal.addEventListener('abort', () => sub && sub.abort(), { once: true });
    follow(
      queues.map((q) => 'sys:queue:' + q),
      {
        ctx,
        signal: sub.signal,
        marker: list,
        onEvent(ev) {
          if (ev.kind === 'schedule.fired') refresh('fired');
        },
      },
    );
  }

  async function reload() {
    try {
      schedules = await listSchedules(ctx.signal);
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      list.replaceChildren(notice(err.status === 403 ? 'This token may not read schedules: it needs the read, agent or admin scope.' : errorText(err)));
    }
  }

  await reload();
}
