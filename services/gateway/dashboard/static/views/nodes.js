// Nodes: one card per cluster node, kept live from the registry's
// WatchNodes stream (GET api/admin/cluster/watch), the administrator's view.
//
// The view knows the fields of a Node but no key of its stats object: it
// renders whatever keys a node publishes, so new stats need no change here.
import * as api from '../lib/api.js';
import { ago, h, notice, number, parseTime, time } from '../lib/dom.js';

const LIST_URL = 'api/admin/cluster';
const WATCH_URL = 'api/admin/cluster/watch';
// A heartbeat older than this marks the card as late: it is the registry's
// default stale threshold, so such a node is about to be swept by its peers.
const LATE_AFTER_MS = 30000;
// The gateway sends enum names; numbers are accepted too.
const EVENT_NUMBERS = { 1: 'JOINED', 2: 'UPDATED', 3: 'LEFT', 4: 'SYNCED' };

function eventType(t) {
  if (typeof t === 'number') return EVENT_NUMBERS[t] || '';
  return typeof t === 'string' ? t.replace(/^NODE_EVENT_TYPE_/, '') : '';
}

const isNode = (n) => n !== null && typeof n === 'object' && typeof n.node_id === 'string';

function bySeq(a, b) {
  const d = (Number(a.seq) || 0) - (Number(b.seq) || 0);
  if (d !== 0) return d;
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}

// statValue renders one stats value: numbers readably, strings as text,
// objects and arrays as compact JSON.
function statValue(v) {
  if (v === null || v === undefined) return h('dd.v-null', 'null');
  if (typeof v === 'number') return h('dd.v-number', { title: String(v) }, number(v));
  if (typeof v === 'boolean') return h('dd.v-bool', String(v));
  if (typeof v === 'string') return h('dd.v-string', v);
  return h('dd.v-json', h('code', JSON.stringify(v)));
}

function card(node) {
  const names = Array.isArray(node.services) ? node.services : [];
  const stats = node.stats !== null && typeof node.stats === 'object' && !Array.isArray(node.stats) ? node.stats : {};
  const keys = Object.keys(stats).sort();
  const heartbeatMs = parseTime(node.heartbeat);
  return h(
    'article.node-card',
    { dataset: { nodeId: node.node_id, heartbeatMs: String(heartbeatMs) } },
    h(
      'header.card-head',
      h('div.title-row', h('h2.node-id', { title: node.node_id }, node.node_id), h('span.seq', { title: 'registration sequence number' }, '#' + (node.seq ?? '?'))),
      h('code.endpoint', node.endpoint || '—'),
      h('ul.services', { 'aria-label': 'services' }, names.length ? names.map((n) => h('li.service', String(n))) : h('li.service.none', 'no services')),
      h(
        'dl.meta',
        h('dt', 'registered'),
        h('dd.registered', { title: node.registered_at || false }, time(node.registered_at)),
        h('dt', 'heartbeat'),
        h('dd.heartbeat-age', ago(heartbeatMs)),
      ),
    ),
    h(
      'div.card-body',
      keys.length ? h('dl.stats', keys.map((k) => [h('dt.stat-key', { title: k }, k), statValue(stats[k])])) : h('p.no-stats', 'no stats'),
    ),
  );
}

export async function mount(root, ctx) {
  const size = h('span', { id: 'cluster-size' }, '0');
  const sizeLabel = h('span', 'nodes');
  const empty = h('p.empty', { id: 'empty', hidden: true }, 'No live nodes.');
  const grid = h('section.grid', { id: 'nodes', 'aria-label': 'Cluster nodes' });
  const message = h('div');
  root.append(h('header.view-head', h('h1', 'Nodes'), h('span.size', size, ' ', sizeLabel)), message, empty, grid);

  let nodes = new Map();
  const cards = new Map(); // node_id → [node, element]
  let haveData = false;
  let synced = false;

  // render reconciles the cards with nodes, ordered by seq; only cards whose
  // node changed are rebuilt.
  function render() {
    const list = [...nodes.values()].sort(bySeq);
    const keep = new Set();
    list.forEach((node, i) => {
      keep.add(node.node_id);
      let entry = cards.get(node.node_id);
      if (!entry || entry[0] !== node) {
        const el = card(node);
        if (entry) entry[1].replaceWith(el);
        entry = [node, el];
        cards.set(node.node_id, entry);
      }
      if (grid.children[i] !== entry[1]) grid.insertBefore(entry[1], grid.children[i] || null);
    });
    for (const [id, [, el]] of cards) {
      if (!keep.has(id)) {
        el.remove();
        cards.delete(id);
      }
    }
    size.textContent = String(list.length);
    sizeLabel.textContent = list.length === 1 ? 'node' : 'nodes';
    empty.hidden = !haveData || list.length > 0;
    late();
  }

  function late() {
    const now = Date.now();
    for (const [, el] of cards.values()) {
      const hb = Number(el.dataset.heartbeatMs);
      el.classList.toggle('late', Number.isFinite(hb) && now - hb > LATE_AFTER_MS);
    }
  }
  const timer = setInterval(late, 1000);
  ctx.signal.addEventListener('abort', () => clearInterval(timer));

  // refused forgets the cards: the credential that fetched them may no
  // longer see them.
  function refused(err) {
    nodes = new Map();
    render();
    message.replaceChildren(
      notice(err.status === 403 ? 'This token may not view the cluster: it needs the admin scope of an administrator.' : err.message),
    );
  }

  // The one-off list shows the membership quickly; the watch snapshot
  // replaces it (and wins if it arrives first).
  api
    .get(LIST_URL, undefined, ctx.signal)
    .then((body) => {
      if (ctx.signal.aborted || synced || !Array.isArray(body.data)) return;
      nodes = new Map(body.data.filter(isNode).map((n) => [n.node_id, n]));
      haveData = true;
      render();
    })
    .catch(() => {}); // the watch stream reports failures

  // Until SYNCED, JOINED events build a pending snapshot that then replaces
  // the shown set at once; after it, each event changes the shown set.
  let pending = new Map();
  let streamSynced = false;
  await api.stream(WATCH_URL, {
    signal: ctx.signal,
    onOpen() {
      pending = new Map();
      streamSynced = false;
    },
    onState(state, detail) {
      if (state === 'refused') refused(detail);
      ctx.setStatus(state, detail && (detail.message || detail));
    },
    onResult(res, ready) {
      const type = eventType(res.type);
      if (type === 'SYNCED') {
        if (streamSynced) return;
        streamSynced = synced = haveData = true;
        ready();
        nodes = pending;
        message.replaceChildren();
        ctx.setStatus('live');
        render();
        return;
      }
      if (!isNode(res.node)) return;
      const target = streamSynced ? nodes : pending;
      if (type === 'JOINED' || type === 'UPDATED') target.set(res.node.node_id, res.node);
      else if (type === 'LEFT') target.delete(res.node.node_id);
      else return;
      if (streamSynced) render();
    },
  });
}
