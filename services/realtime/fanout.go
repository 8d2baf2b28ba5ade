package realtime

import (
	"sync"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
)

// part is one event serialized once, as SubscribeResponse{event}, whatever
// its fan-out.
type part struct {
	id       int64 // the durable id; 0 for an ephemeral event
	msg      []byte
	audience string // wire.Ephemeral.Audience ("" for every subscriber)
}

func encodeEvent(ev *realtimev1.RealtimeEvent, audience string) (part, error) {
	msg, err := grpcserver.PreEncode(&realtimev1.SubscribeResponse{Message: &realtimev1.SubscribeResponse_Event{Event: ev}})
	if err != nil {
		return part{}, err
	}
	return part{id: ev.GetId(), msg: msg.Bytes(), audience: audience}, nil
}

// keyed is an event ready to fan out, with its channel.
type keyed struct {
	key  channelKey
	part part
}

// outbound is what the hub hands a subscriber: the events of one dispatch
// that it follows, in order (durable ones by id). Its sender joins queued
// outbounds into messages (sender.go).
type outbound struct {
	parts   []part
	durable bool
	// open is true when no part has an audience: every subscriber it is
	// offered to may be sent all of it.
	open bool
	// batch is parts as one EventBatch message, built on first use and
	// shared by every subscriber that sends exactly this outbound.
	batchOnce sync.Once
	batch     []byte
}

// dispatchDurable offers evs (ascending ids) and moves the cursor to upto.
func (h *hub) dispatchDurable(evs []keyed, upto int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fanOut(evs, true)
	h.cursor = max(h.cursor, upto)
}

// dispatchEphemeral offers evs, in order, to the subscribers that take
// ephemeral events. Only the node's one pump calls it.
func (h *hub) dispatchEphemeral(evs []keyed) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.fanOut(evs, false)
}

// fanOut gives each subscriber one outbound per dispatch: the events of its
// channel (one outbound per channel, shared by all its subscribers), or,
// when it follows several channels, its own merge of theirs in dispatch
// order, so durable ids never arrive out of order. The caller holds h.mu.
func (h *hub) fanOut(evs []keyed, durable bool) {
	byKey := make(map[channelKey]*outbound, 1)
	for _, e := range evs {
		ob := byKey[e.key]
		if ob == nil {
			ob = &outbound{durable: durable, open: true}
			byKey[e.key] = ob
		}
		ob.add(e.part)
	}
	var several map[*subscriber]struct{}
	for k, ob := range byKey {
		for s := range h.subs[k] {
			switch {
			case !durable && !s.ephemeral:
			case len(s.channels) == 1:
				s.offer(ob)
			default:
				if several == nil {
					several = map[*subscriber]struct{}{}
				}
				several[s] = struct{}{}
			}
		}
	}
	for s := range several {
		ob := &outbound{durable: durable, open: true}
		for _, e := range evs {
			if e.key.human == s.human && s.follows(e.key.channel) {
				ob.add(e.part)
			}
		}
		s.offer(ob)
	}
}

func (ob *outbound) add(p part) {
	ob.parts = append(ob.parts, p)
	ob.open = ob.open && p.audience == ""
}
