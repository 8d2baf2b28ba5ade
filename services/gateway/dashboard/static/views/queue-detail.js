// One queue's page (#/queues/<name>): its QueueStats in full, with the
// vacuum health an administrator sees, the operator's actions and a live
// tail of its lifecycle events. Not a view: queues.js mounts it.
import * as api from '../lib/api.js';
import { ago, duration, errorText, h, notice, number, table, time } from '../lib/dom.js';
import { limitsForm, limitsText, pause, pausedBadge, redriveForm, resume } from './queue-actions.js';
import { REFRESH_MS, Rates, btn, busy, debouncer, follow, loading, rate } from './queue-common.js';

const enc = encodeURIComponent;

export async function mountDetail(root, ctx, name) {
  const message = h('div');
  const editor = h('div');
  const head = h('div.actions');
  const content = h('div', { id: 'queue-detail', dataset: { queue: name } }, loading());
  const tail = h('ol.event-tail', { id: 'queue-events', 'aria-label': 'Lifecycle events' });
  root.append(
    h('header.view-head', h('h1', h('a.crumb', { href: '#/queues' }, 'Queues'), ' / ', h('code', name)), head),
    message,
    editor,
    content,
    h('section.panel', h('h2', 'Live lifecycle events'), h('p.hint', { id: 'queue-events-empty' }, 'Waiting for events on sys:queue:' + name + '…'), tail),
  );
  const rates = new Rates();
  let stats = null;

  const closeEditor = () => editor.replaceChildren();

  async function act(button, fn) {
    message.replaceChildren();
    try {
      await busy(button, fn);
    } catch (err) {
      if (err.name !== 'AbortError') message.replaceChildren(notice(errorText(err)));
    }
  }

  function renderHead() {
    head.replaceChildren(
      ...[
      stats && stats.paused
        ? btn('Resume', { action: 'resume', onclick: (ev) => act(ev.currentTarget, async () => (await resume(name, ctx)) && refresh()) })
        : btn('Pause', { action: 'pause', onclick: (ev) => act(ev.currentTarget, async () => (await pause(name, ctx)) && refresh()) }),
      btn('Limits', {
        action: 'limits',
        onclick: () => editor.replaceChildren(limitsForm(name, stats && stats.limits, ctx, { onDone: () => (closeEditor(), refresh()), onCancel: closeEditor })),
      }),
      stats &&
        Number(stats.dead) > 0 &&
        btn('Redrive', {
          action: 'redrive',
          kind: 'danger',
          onclick: () => editor.replaceChildren(redriveForm(name, stats.dead, ctx, { onDone: () => (closeEditor(), refresh()), onCancel: closeEditor })),
        }),
      h('a.more-link', { href: '#/todos?queue=' + enc(name) }, 'Todos →'),
      ].filter(Boolean),
    );
  }

  function stateLink(label, key, state) {
    return [h('dt', label), h('dd', { dataset: { count: key } }, h('a', { href: '#/todos?queue=' + enc(name) + (state ? '&state=' + state : '') }, number(stats[key])))];
  }

  function render() {
    const s = stats;
    const r = rates.of(name);
    const l = s.limits;
    const v = s.vacuum;
    content.replaceChildren(
      h(
        'div.grid.detail-grid',
        h(
          'section.panel',
          h('h2', 'Depth ', pausedBadge(s.paused)),
          h(
            'dl.stat-list',
            stateLink('Pending, ready', 'pending_ready', 'TODO_STATE_PENDING'),
            stateLink('Pending, scheduled', 'pending_scheduled', 'TODO_STATE_PENDING'),
            stateLink('Running', 'running', 'TODO_STATE_RUNNING'),
            stateLink('Completed', 'completed', 'TODO_STATE_COMPLETED'),
            stateLink('Dead', 'dead', 'TODO_STATE_DEAD'),
            stateLink('Cancelled', 'cancelled', 'TODO_STATE_CANCELLED'),
            h('dt', 'Oldest pending'),
            h('dd', s.oldest_pending_age_seconds ? duration(s.oldest_pending_age_seconds) : '—'),
            s.paused && [h('dt', 'Paused since'), h('dd', ago(s.paused_at))],
          ),
        ),
        h(
          'section.panel',
          h('h2', 'Rates (last minute)'),
          h(
            'dl.stat-list',
            { dataset: { testid: 'queue-rates' } },
            h('dt', 'Enqueued'),
            h('dd', rate(r.enqueued) + '/s'),
            h('dt', 'Completed'),
            h('dd', rate(r.completed) + '/s'),
            h('dt', 'Failed'),
            h('dd', rate(r.failed) + '/s'),
          ),
          h('p.hint', 'Counted from the lifecycle events since this page opened.'),
        ),
        h(
          'section.panel',
          h('h2', 'Limits'),
          l
            ? h(
                'dl.stat-list',
                h('dt', 'Max running'),
                h('dd', l.max_running ? number(l.max_running) + ' (now ' + number(l.running) + ')' : 'no limit'),
                h('dt', 'Max running per key'),
                h('dd', l.key_max_running ? number(l.key_max_running) : 'no limit'),
                h('dt', 'Claims per second'),
                h('dd', l.rate_per_second ? number(l.rate_per_second) + ' (burst ' + number(l.rate_burst) + ')' : 'no limit'),
                h('dt', 'Per key'),
                h('dd', l.key_rate_per_second ? number(l.key_rate_per_second) + ' (burst ' + number(l.key_rate_burst) + ')' : 'no limit'),
                h('dt', 'Key patterns'),
                h(
                  'dd',
                  Array.isArray(l.key_patterns) && l.key_patterns.length
                    ? h('ul.setting-kv', l.key_patterns.map((kp) => h('li', h('code', kp.pattern), ' ', h('span.k', limitsText({ max_running: kp.max_running, rate_per_second: kp.rate_per_second, rate_burst: kp.rate_burst })))))
                    : 'none',
                ),
                h('dt', 'Set'),
                h('dd', time(l.updated_at)),
              )
            : h('p.hint', 'No limits: claims are not throttled.'),
        ),
        v
          ? h(
              'section.panel',
              { dataset: { testid: 'vacuum' } },
              h('h2', 'Vacuum health (todos table, every tenant)'),
              h(
                'dl.stat-list',
                h('dt', 'Live tuples'),
                h('dd', number(v.live_tuples)),
                h('dt', 'Dead tuples'),
                h('dd', { className: Number(v.dead_tuples) > Number(v.live_tuples) ? 'count-bad' : '' }, number(v.dead_tuples)),
                h('dt', 'Oldest transaction'),
                h('dd', { className: v.oldest_transaction_age_seconds > 300 ? 'count-bad' : '' }, v.oldest_transaction_age_seconds ? duration(v.oldest_transaction_age_seconds) : 'none open'),
                h('dt', 'Last autovacuum'),
                h('dd', v.last_autovacuum ? ago(v.last_autovacuum) : 'never'),
                h('dt', 'Last vacuum'),
                h('dd', v.last_vacuum ? ago(v.last_vacuum) : 'never'),
              ),
              h('p.hint', 'A dead-tuple count that keeps growing, or a transaction open for minutes, means vacuum is blocked and claims slow down.'),
            )
          : null,
      ),
    );
    renderHead();
  }

  async function refresh() {
    try {
      stats = await api.get('api/queues/' + enc(name) + '/stats', undefined, ctx.signal);
      render();
    } catch (err) {
      if (err.name === 'AbortError') return;
      (stats ? message : content).replaceChildren(notice(err.status === 403 ? 'This token may not read queue stats.' : errorText(err)));
    }
  }
  const stale = debouncer(refresh, REFRESH_MS, ctx.signal);

  const timer = setInterval(() => stats && !editor.childElementCount && render(), 5000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));

  await refresh();
  follow(['sys:queue:' + name], {
    ctx,
    marker: content,
    onEvent(ev) {
      rates.add(name, ev.kind);
      document.getElementById('queue-events-empty')?.remove();
      const p = ev.payload || {};
      tail.prepend(
        h(
          'li',
          h('code.kind', ev.kind),
          p.todo_id ? [' ', h('a', { href: '#/todos/' + enc(String(p.todo_id)) }, 'todo ' + p.todo_id)] : null,
          p.state ? [' → ', h('span', String(p.state))] : null,
          ' ',
          h('small.hint', time(ev.created_at)),
        ),
      );
      while (tail.childElementCount > 50) tail.lastElementChild.remove();
      stale(name);
    },
  });
}
