// Helpers shared by the endpoint pages and by the views that follow realtime
// channels (events, realtime). Not a view: the router never mounts it.
import * as api from '../lib/api.js';
import { badge, errorText } from '../lib/dom.js';

export const enabledBadge = (ep) => (ep.enabled === false ? badge('disabled', 'warn') : badge('enabled', 'ok'));

export function refusedText(err, what) {
  if (err && err.status === 403) return 'This token may not ' + what + ': it needs the admin scope (' + err.message + ').';
  return errorText(err);
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
