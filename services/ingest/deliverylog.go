package ingest

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
)

// Delivery log bounds. Refusals come from senders nobody authenticated, so
// each endpoint's are recorded at most refusalRate a second per node (burst
// refusalBurst), the rest counted into the next recorded one; everything is
// buffered and written in one statement per flush, off the request's path.
const (
	refusalRate        = 5
	refusalBurst       = 10
	maxPendingLog      = 4096 // deliveries buffered between flushes; more are dropped and counted
	maxRefusalStates   = 10_000
	deliveryLogEvery   = 250 * time.Millisecond
	deliveryLogTimeout = 5 * time.Second
	maxDetail          = 200
	maxLogText         = 255 // a delivery id or topic, as the events table caps them
)

// deliveryLog records webhook deliveries in their endpoints' logs (the
// rings of store.RecordDeliveries). Recording never blocks a request and
// never fails it: a full buffer or a failed write loses log rows, counted
// and logged, never a delivery.
type deliveryLog struct {
	log  *zap.Logger
	st   *store.Store
	now  func() time.Time
	loop *lifecycle.Loop

	mu       sync.Mutex
	pending  []store.Delivery
	lost     int // dropped for a full buffer since the last flush
	refusals map[uuid.UUID]*refusals

	flushMu sync.Mutex // one flush at a time: a flush returns after every row taken before it is written
}

// refusals is one endpoint's refusal limiter on this node, and what it
// dropped since its last recorded refusal.
type refusals struct {
	lim     *rate.Limiter
	dropped int32
	last    store.Delivery // the latest dropped refusal, recorded later as the summary
}

func newDeliveryLog(log *zap.Logger, st *store.Store) *deliveryLog {
	l := &deliveryLog{log: log, st: st, now: time.Now, refusals: map[uuid.UUID]*refusals{}}
	l.loop = lifecycle.NewLoop(Name+"-delivery-log", deliveryLogEvery, func(ctx context.Context) { l.flushWarned(ctx) })
	return l
}

// Name, Start and Stop make the log a lifecycle component: its flush loop,
// and a last flush on Stop.
func (l *deliveryLog) Name() string                    { return l.loop.Name() }
func (l *deliveryLog) Start(ctx context.Context) error { return l.loop.Start(ctx) }
func (l *deliveryLog) Stop(ctx context.Context) error {
	err := l.loop.Stop(ctx)
	l.flushWarned(ctx)
	return err
}

// accepted records a delivery the edge verified (accepted, duplicate,
// handshake, or one the database could not take): these cost a database
// write of their own already, so they are not rate limited.
func (l *deliveryLog) accepted(d store.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.push(d)
}

// refused records a refusal, at most refusalRate a second per endpoint on
// this node; the others are counted and the latest kept, to be recorded
// with the count when the limit allows (the next refusal, or a flush).
func (l *deliveryLog) refused(d store.Delivery) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.refusals[d.EndpointID]
	if r == nil {
		if len(l.refusals) >= maxRefusalStates {
			clear(l.refusals) // crude but bounded, like the edge's limiters
		}
		r = &refusals{lim: rate.NewLimiter(refusalRate, refusalBurst)}
		l.refusals[d.EndpointID] = r
	}
	if !r.lim.AllowN(now, 1) {
		r.dropped++
		r.last = d
		return
	}
	d.DroppedBefore, r.dropped = r.dropped, 0
	l.push(d)
}

// push buffers d (l.mu held), or counts it lost when the buffer is full.
func (l *deliveryLog) push(d store.Delivery) {
	if len(l.pending) >= maxPendingLog {
		l.lost++
		return
	}
	// Text from the sender (a delivery id, a topic) may hold what text
	// columns refuse (the edge answers such a delivery 400): one entry must
	// not fail the whole batch's statement.
	d.Detail, d.DeliveryID, d.Topic = storable(d.Detail, maxDetail), storable(d.DeliveryID, maxLogText), storable(d.Topic, maxLogText)
	l.pending = append(l.pending, d)
}

// take returns what is due to be written: the buffer, and for each
// endpoint whose refusals were dropped, the latest of them with the count
// of the others, when its limit allows one more.
func (l *deliveryLog) take() ([]store.Delivery, int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.refusals {
		if r.dropped > 0 && len(l.pending) < maxPendingLog && r.lim.AllowN(now, 1) {
			d := r.last
			d.DroppedBefore = r.dropped - 1
			r.dropped = 0
			l.pending = append(l.pending, d)
		} else if r.dropped == 0 && r.lim.TokensAt(now) >= refusalBurst {
			delete(l.refusals, id) // idle and full again: forget it
		}
	}
	out, lost := l.pending, l.lost
	l.pending, l.lost = nil, 0
	return out, lost
}

// flush writes what is due in one statement.
func (l *deliveryLog) flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	ds, lost := l.take()
	if lost > 0 {
		l.log.Warn("delivery log buffer full; entries dropped", zap.Int("dropped", lost))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliveryLogTimeout)
	defer cancel()
	return l.st.RecordDeliveries(ctx, ds)
}

func (l *deliveryLog) flushWarned(ctx context.Context) {
	if err := l.flush(ctx); err != nil {
		l.log.Warn("delivery log not written; its entries are lost", zap.Error(err))
	}
}

// storable keeps text storable and short: valid UTF-8 without NUL, at
// most n bytes (cut on a rune boundary).
func storable(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "?"), "\x00", "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
