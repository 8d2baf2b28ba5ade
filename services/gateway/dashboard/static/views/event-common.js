// Helpers shared by the event list and the event page: the event's address
// and its source column (endpoint and adapter names by id). Not a view: the
// router never mounts it (no route is named after it).
import * as api from '../lib/api.js';
import { badge, h } from '../lib/dom.js';

export const eventUrl = (id) => 'api/events/' + encodeURIComponent(id);

// names: endpoint and adapter names by id, for the source column.
export async function loadNames(signal) {
  const names = { endpoints: [], adapters: [], endpoint: new Map(), adapter: new Map(), errors: [] };
  const [eps, ads] = await Promise.allSettled([
    api.get('api/admin/endpoints', { page_size: 1000 }, signal),
    api.get('api/admin/adapters', { page_size: 1000 }, signal),
  ]);
  if (eps.status === 'fulfilled') names.endpoints = eps.value.endpoints || [];
  else names.errors.push(eps.reason);
  if (ads.status === 'fulfilled') names.adapters = ads.value.adapters || [];
  else names.errors.push(ads.reason);
  for (const e of names.endpoints) names.endpoint.set(e.id, e.name || e.url_path || e.id);
  for (const a of names.adapters) names.adapter.set(a.id, a.name || a.id);
  return names;
}

export function sourceCell(ev, names) {
  const src = String(ev.source || '');
  const [kind, id = ''] = src.split(':');
  if (kind === 'endpoint') {
    const name = names.endpoint.get(id);
    return h('span.source', badge('endpoint', 'info'), ' ', id ? h('a', { href: '#/endpoints/' + encodeURIComponent(id), title: id }, name || id.slice(0, 8) + '…') : '(deleted)');
  }
  if (kind === 'adapter') return h('span.source', badge('adapter', 'warn'), ' ', h('span', { title: id }, names.adapter.get(id) || id.slice(0, 8) + '…'));
  if (kind === 'publish') return h('span.source', badge('publish', 'muted'));
  return src || '—';
}
