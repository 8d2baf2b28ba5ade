package realtime

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// readBatch is how many new durable rows the reader takes per statement.
const readBatch = 500

// reader turns new realtime_events rows into fan-out, once per node: the
// only connection that scans the table is this one, however many
// subscribers the node has (a notification says "there is something new",
// never what).
//
// Rows become visible in commit order, not id order: publish A may take id
// 10 and commit after publish B took 11. The reader therefore offers ids
// strictly in order and stops at a hole until it knows whether the hole can
// still fill. Every durable publish holds the publishers' advisory lock from
// before its id is allocated until it ends (queries.sql, EventInsert), so a
// hole can only be filled by a transaction that held that lock when the
// hole was seen. The reader records those (by virtual transaction id),
// waits until all of them have ended, reads once more, and only then
// declares a hole that is still there final (an aborted publish). Unrelated
// long transactions on the server never delay it.
type reader struct {
	log   *zap.Logger
	store *store.Store
	hub   *hub
	conv  func(store.Event) (keyed, error)
	recheck,
	poll,
	gap time.Duration

	kick   chan struct{}
	cursor int64
	hole   *hole
}

// hole is a gap in the ids at `at` that publishes in waitFor may still fill.
type hole struct {
	at       int64
	waitFor  map[string]struct{}
	resolved bool // every one of waitFor has ended since the hole was seen
}

func newReader(log *zap.Logger, st *store.Store, h *hub, conv func(store.Event) (keyed, error), o Options) *reader {
	return &reader{log: log, store: st, hub: h, conv: conv, recheck: o.HoleRecheck, poll: o.PollInterval, gap: o.ReadGap, kick: make(chan struct{}, 1)}
}

// poke asks the reader to look for new rows now.
func (r *reader) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// init sets the starting cursor: the newest id, once every publish that was
// in progress when it was read has ended (ids below it that were not yet
// visible belong to those; after they end, all ids ≤ cursor are final and
// replay can serve them).
func (r *reader) init(ctx context.Context) error {
	maxID, err := r.store.MaxID(ctx)
	if err != nil {
		return err
	}
	wait, err := r.store.PublishersInProgress(ctx)
	if err != nil {
		return err
	}
	for len(wait) > 0 {
		if !lifecycle.Sleep(ctx, r.recheck) {
			return ctx.Err()
		}
		now, err := r.store.PublishersInProgress(ctx)
		if err != nil {
			return err
		}
		keepOnly(wait, now)
	}
	r.cursor = maxID
	r.hub.start(maxID)
	return nil
}

// run drains new rows whenever poked, on every poll tick, and soon again
// while a hole is pending; but never sooner than gap after the previous
// drain began. Under load that turns a read per publish into a read per gap,
// whose events reach each subscriber as one batch; a poke after a quiet
// spell is served at once.
func (r *reader) run(ctx context.Context) {
	poll := time.NewTicker(r.poll)
	defer poll.Stop()
	var again <-chan time.Time
	var began time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-poll.C:
		case <-again:
		}
		again = nil
		if wait := r.gap - time.Since(began); wait > 0 && !lifecycle.Sleep(ctx, wait) {
			return
		}
		began = time.Now()
		// Pokes so far are answered by the read below (a poke follows its
		// commit); one that comes after this line drains again.
		select {
		case <-r.kick:
		default:
		}
		pending, err := r.drain(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.log.Warn("realtime reader failed; retrying", zap.Error(err))
			again = time.After(r.poll / 4)
		case pending:
			again = time.After(r.recheck)
		}
	}
}

// drain offers every new row it may, in id order. pending is true when it
// stopped at a hole that may still fill.
func (r *reader) drain(ctx context.Context) (pending bool, err error) {
	for {
		if r.hole != nil && !r.hole.resolved {
			// Before reading: a publish that ends after this check has its
			// row in the read below.
			now, err := r.store.PublishersInProgress(ctx)
			if err != nil {
				return false, err
			}
			keepOnly(r.hole.waitFor, now)
			r.hole.resolved = len(r.hole.waitFor) == 0
		}
		rows, err := r.store.After(ctx, r.cursor, readBatch)
		if err != nil {
			return false, err
		}
		out := make([]keyed, 0, len(rows))
		next, stopped := r.cursor+1, false
		for _, e := range rows {
			if e.ID > next {
				final, err := r.holeFinal(ctx, next)
				if err != nil {
					return false, err
				}
				if !final {
					stopped = true
					break
				}
				r.log.Debug("realtime ids never committed; skipped", zap.Int64("from", next), zap.Int64("to", e.ID-1))
			}
			next = e.ID + 1
			d, err := r.conv(e)
			if err != nil {
				// A row no subscriber could decode (JSON nested past what
				// structjson renders, written before Publish capped it or
				// around the API). The cursor moves past it: stopping here
				// would stop every subscriber of every tenant for good.
				undeliverable(r.log, e, err)
				continue
			}
			out = append(out, d)
		}
		if next-1 > r.cursor {
			r.hub.dispatchDurable(out, next-1)
			r.cursor = next - 1
			if r.hole != nil && r.hole.at <= r.cursor {
				r.hole = nil // filled, or skipped as final
			}
		}
		if stopped {
			return true, nil
		}
		if len(rows) < readBatch {
			return false, nil
		}
	}
}

// undeliverable logs a durable event that is skipped, for the live
// fan-out and for replays alike.
func undeliverable(log *zap.Logger, e store.Event, err error) {
	log.Warn("undeliverable realtime event; skipped", zap.Int64("event_id", e.ID),
		zap.String("human_id", e.HumanID.String()), zap.String("channel", e.Channel), zap.Error(err))
}

// holeFinal decides a hole at id `at`: final when every publish that might
// fill it has ended and the read after that still lacks it.
func (r *reader) holeFinal(ctx context.Context, at int64) (bool, error) {
	if r.hole != nil && r.hole.at == at {
		if r.hole.resolved {
			r.hole = nil
			return true, nil
		}
		return false, nil
	}
	wait, err := r.store.PublishersInProgress(ctx)
	if err != nil {
		return false, err
	}
	// Even with nobody in progress now, one may have committed between the
	// read and this check: look once more before calling it final.
	r.hole = &hole{at: at, waitFor: wait}
	return false, nil
}

// keepOnly removes from set the keys not in now.
func keepOnly(set, now map[string]struct{}) {
	for k := range set {
		if _, ok := now[k]; !ok {
			delete(set, k)
		}
	}
}
