package realtime

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchboard/switchboard/pkg/grpcserver"
)

// MaxBatch is the most events one stream message may carry
// (SubscribeRequest.max_batch).
const MaxBatch = 1000

// maxBatchBytes bounds one EventBatch message, well under gRPC's default
// 4 MiB receive limit (a durable payload alone may be 64 KiB).
const maxBatchBytes = 1 << 20

// eventsField is SubscribeResponse.events (an EventBatch). An EventBatch's
// repeated RealtimeEvent is field 1, as SubscribeResponse.event is: so a
// part's bytes (SubscribeResponse{event}) are, unchanged, one element of an
// EventBatch, and a batch is their concatenation behind one tag and length.
const eventsField = 3

// sender writes one subscriber's events to its stream and remembers the last
// durable id sent (a client may resume from an id the node has not reached
// yet, so live events at or below it are skipped). With maxBatch ≥ 2, what
// is queued when the stream is free to write goes out as few messages as
// the limits allow: batching never waits for more events, it only stops
// paying one write, one HTTP/2 frame and one client read per event.
type sender struct {
	stream   grpc.ServerStream
	sub      *subscriber
	maxBatch int
	last     int64

	pending []part // the next message's events
	size    int
}

func newSender(stream grpc.ServerStream, sub *subscriber, maxBatch uint32, last int64) *sender {
	return &sender{stream: stream, sub: sub, maxBatch: int(maxBatch), last: last}
}

// sendQueued sends first and whatever else is queued now (at most one
// buffer's worth, so a busy stream still gets back to its other duties).
func (w *sender) sendQueued(first *outbound) error {
	w.sub.taken(first)
	if w.maxBatch > 1 && first.open && len(first.parts) <= w.maxBatch && len(w.sub.out) == 0 && w.fresh(first) {
		// The common case under fan-out: one outbound, shared by every
		// subscriber of its channel, whose batch is encoded once for all.
		return w.sendShared(first)
	}
	if err := w.add(first); err != nil {
		return err
	}
	for range cap(w.sub.out) {
		ob := w.next()
		if ob == nil {
			break
		}
		w.sub.taken(ob)
		if err := w.add(ob); err != nil {
			return err
		}
	}
	return w.flush()
}

// next is the subscriber's next queued outbound, or nil when none waits.
func (w *sender) next() *outbound {
	select {
	case ob := <-w.sub.out:
		return ob
	default:
		return nil
	}
}

// fresh reports whether none of ob's durable events was already sent.
func (w *sender) fresh(ob *outbound) bool {
	return !ob.durable || ob.parts[0].id > w.last
}

func (w *sender) sendShared(ob *outbound) error {
	if ob.durable {
		w.last = ob.parts[len(ob.parts)-1].id
	}
	if len(ob.parts) == 1 {
		return w.write(ob.parts[0].msg, 1)
	}
	ob.batchOnce.Do(func() {
		size := 0
		for _, p := range ob.parts {
			size += len(p.msg)
		}
		if size <= maxBatchBytes {
			ob.batch = joinParts(ob.parts, size)
		}
	})
	if ob.batch == nil { // over the byte limit: split like any other queue
		if err := w.addParts(ob.parts...); err != nil {
			return err
		}
		return w.flush()
	}
	return w.write(ob.batch, len(ob.parts))
}

// add appends the events of ob this subscriber is still to be sent: durable
// ones above the last id sent, ephemeral ones meant for it.
func (w *sender) add(ob *outbound) error {
	parts := ob.parts
	if ob.durable {
		i := 0
		for i < len(parts) && parts[i].id <= w.last {
			i++
		}
		if parts = parts[i:]; len(parts) > 0 {
			w.last = parts[len(parts)-1].id
		}
	}
	if ob.open {
		return w.addParts(parts...)
	}
	for _, p := range parts {
		if w.sub.receives(p.audience) {
			if err := w.addParts(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// addParts appends parts to the next message, sending what is pending first
// when they would not fit (or at once, one message each, without batches).
func (w *sender) addParts(parts ...part) error {
	for _, p := range parts {
		if w.maxBatch <= 1 {
			if err := w.write(p.msg, 1); err != nil {
				return err
			}
			continue
		}
		if len(w.pending) > 0 && (len(w.pending) == w.maxBatch || w.size+len(p.msg) > maxBatchBytes) {
			if err := w.flush(); err != nil {
				return err
			}
		}
		w.pending = append(w.pending, p)
		w.size += len(p.msg)
	}
	return nil
}

// flush sends the pending events: one as SubscribeResponse.event, several
// as one SubscribeResponse.events.
func (w *sender) flush() error {
	n := len(w.pending)
	if n == 0 {
		return nil
	}
	msg := w.pending[0].msg
	if n > 1 {
		msg = joinParts(w.pending, w.size)
	}
	clear(w.pending)
	w.pending, w.size = w.pending[:0], 0
	return w.write(msg, n)
}

func (w *sender) write(msg []byte, events int) error {
	if err := w.stream.SendMsg(grpcserver.PreEncodedBytes(msg)); err != nil {
		return err
	}
	w.sub.metrics.Delivered(events)
	return nil
}

// joinParts encodes parts (size bytes in all) as SubscribeResponse{events}.
func joinParts(parts []part, size int) []byte {
	b := make([]byte, 0, size+protowire.SizeTag(eventsField)+protowire.SizeVarint(uint64(size)))
	b = protowire.AppendTag(b, eventsField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	for _, p := range parts {
		b = append(b, p.msg...)
	}
	return b
}
