package realtime

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/metrics"
)

// channelKey is a channel of one tenant: channel names are scoped to their
// human, so two tenants' "chat" never meet.
type channelKey struct {
	human   uuid.UUID
	channel string
}

// subscriber is one Subscribe stream as the hub sees it. The hub only ever
// offers it events without blocking: a full buffer cuts the subscriber off
// (RESOURCE_EXHAUSTED; it resumes with after_id), so one slow client never
// delays the fan-out to the others.
type subscriber struct {
	id        uuid.UUID
	human     uuid.UUID
	member    string
	channels  []string
	ephemeral bool

	out     chan *outbound
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
	select {
	case <-s.cut:
		s.metrics.Dropped(false)
	case s.out <- ev:
	default:
		s.cutOnce.Do(func() { close(s.cut) })
		s.metrics.Dropped(true)
	}
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

// outbound is an event as every subscriber stream sends it: serialized once
// (a SubscribeResponse), whatever the fan-out.
type outbound struct {
	id      int64
	durable bool
	msg     *grpcserver.PreEncoded
	// audience is wire.Ephemeral.Audience: "" for every subscriber, else
	// the one agent (member "agent:<uuid>") that may see it besides the
	// tenant's own credentials.
	audience string
}

// receives reports whether s may be sent ev: a lifecycle event about one
// agent's work goes to that agent and to the tenant's own credentials, not
// to its other agents (as GetEvent and ListEvents read).
func (s *subscriber) receives(ev *outbound) bool {
	return ev.audience == "" || s.member == ev.audience || !strings.HasPrefix(s.member, memberAgentPrefix)
}

func newOutbound(ev *realtimev1.RealtimeEvent) (*outbound, error) {
	msg, err := grpcserver.PreEncode(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: ev}})
	if err != nil {
		return nil, err
	}
	return &outbound{id: ev.GetId(), durable: ev.GetDurable(), msg: msg}, nil
}

// durable is a durable event ready to fan out.
type durable struct {
	key channelKey
	out *outbound
}

// dispatchDurable offers evs (ascending ids) and moves the cursor to upto.
func (h *hub) dispatchDurable(evs []durable, upto int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range evs {
		for s := range h.subs[d.key] {
			s.offer(d.out)
		}
	}
	h.cursor = max(h.cursor, upto)
}

// dispatchEphemeral offers ev to the subscribers of k that take ephemeral
// events.
func (h *hub) dispatchEphemeral(k channelKey, ev *outbound) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[k] {
		if s.ephemeral && s.receives(ev) {
			s.offer(ev)
		}
	}
}

// listening reports whether k has a local subscriber.
func (h *hub) listening(k channelKey) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[k]) > 0
}

// count is the number of local subscribers.
func (h *hub) count() int64 { return h.n.Load() }
