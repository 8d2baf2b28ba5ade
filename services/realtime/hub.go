package realtime

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/metrics"
)

// channelKey is a channel of one tenant: channel names are scoped to their
// human, so two tenants' "chat" never meet.
type channelKey struct {
	human   uuid.UUID
	channel string
}

// subscriber is one Subscribe stream as the hub sees it. The hub only ever
// offers it events without blocking: when more than its buffer's worth of
// events wait, it is cut off (RESOURCE_EXHAUSTED; it resumes with after_id),
// so one slow client never delays the fan-out to the others.
type subscriber struct {
	id        uuid.UUID
	human     uuid.UUID
	member    string
	channels  []string
	ephemeral bool

	// out holds at most cap(out) outbounds (each carries ≥ 1 event), and
	// queued counts the events in them: the cut-off is at cap(out) events,
	// however they were grouped.
	out     chan *outbound
	queued  atomic.Int64
	cut     chan struct{}
	cutOnce sync.Once
	metrics *metrics.Realtime // the hub's, set by add
}

func newSubscriber(human uuid.UUID, member string, channels []string, ephemeral bool, buffer int) *subscriber {
	return &subscriber{
		id: uuid.New(), human: human, member: member, channels: channels, ephemeral: ephemeral,
		out: make(chan *outbound, buffer), cut: make(chan struct{}),
	}
}

// offer queues ev, or cuts the subscriber off when it is too far behind.
func (s *subscriber) offer(ev *outbound) {
	n := int64(len(ev.parts))
	select {
	case <-s.cut:
		s.metrics.Dropped(false)
		return
	default:
	}
	// An empty queue takes any one outbound (a read of the table may hold
	// more events than a small buffer): only a subscriber that has not
	// taken what it was offered before is behind.
	if q := s.queued.Add(n); q > n && q > int64(cap(s.out)) {
		s.queued.Add(-n)
		s.cutOff()
		return
	}
	select {
	case s.out <- ev:
	default: // unreachable while queued ≤ cap(out); cut rather than block
		s.queued.Add(-n)
		s.cutOff()
	}
}

func (s *subscriber) cutOff() {
	s.cutOnce.Do(func() { close(s.cut) })
	s.metrics.Dropped(true)
}

// taken is the receiving side's half of queued.
func (s *subscriber) taken(ev *outbound) { s.queued.Add(-int64(len(ev.parts))) }

// receives reports whether s may be sent an event for audience
// (wire.Ephemeral.Audience): "" is everyone's; a lifecycle event about one
// agent's work goes to that agent and to the tenant's own credentials, not
// to its other agents (as GetEvent and ListEvents read).
func (s *subscriber) receives(audience string) bool {
	return audience == "" || s.member == audience || !strings.HasPrefix(s.member, memberAgentPrefix)
}

// follows reports whether s subscribed to channel.
func (s *subscriber) follows(channel string) bool {
	for _, c := range s.channels {
		if c == channel {
			return true
		}
	}
	return false
}

// hub is this node's broadcast-and-discard fan-out: events reach the local
// subscribers whose channels match and are then forgotten.
//
// cursor is the durable high-water mark: every durable event with id ≤
// cursor has been offered to every subscriber registered at that time, and
// none above it has. add reads it under the same lock dispatchDurable holds,
// so a new subscriber replays (from the table) exactly the ids ≤ cursor and
// receives live exactly the ids above: no gap and no duplicate.
type hub struct {
	mu     sync.RWMutex
	subs   map[channelKey]map[*subscriber]struct{}
	cursor int64
	n      atomic.Int64
	m      *metrics.Realtime
}

func newHub(m *metrics.Realtime) *hub {
	return &hub{subs: map[channelKey]map[*subscriber]struct{}{}, m: m}
}

// add registers s and returns the cursor it replays up to.
func (h *hub) add(s *subscriber) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range s.channels {
		k := channelKey{s.human, c}
		if h.subs[k] == nil {
			h.subs[k] = map[*subscriber]struct{}{}
		}
		h.subs[k][s] = struct{}{}
	}
	s.metrics = h.m
	h.n.Add(1)
	h.m.Subscribed(1)
	return h.cursor
}

// remove unregisters s.
func (h *hub) remove(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range s.channels {
		k := channelKey{s.human, c}
		delete(h.subs[k], s)
		if len(h.subs[k]) == 0 {
			delete(h.subs, k)
		}
	}
	h.n.Add(-1)
	h.m.Subscribed(-1)
}

// position is the durable cursor (the reader's lag metric).
func (h *hub) position() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cursor
}

// start sets the cursor before any event is dispatched.
func (h *hub) start(cursor int64) {
	h.mu.Lock()
	h.cursor = cursor
	h.mu.Unlock()
}

// listening reports whether k has a local subscriber.
func (h *hub) listening(k channelKey) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[k]) > 0
}

// count is the number of local subscribers.
func (h *hub) count() int64 { return h.n.Load() }
