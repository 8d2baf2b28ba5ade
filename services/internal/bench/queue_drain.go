package bench

// Waiting for `bench queue`'s two phases: the drain and the trickle.

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
)

// drain waits until every enqueued todo was completed and returns the time
// since started.
func (b *bench) drain(ctx context.Context, started time.Time, werr <-chan error) (time.Duration, error) {
	stopProgress := b.progress(func() string {
		s := b.stats()
		el := time.Since(started).Seconds()
		return fmt.Sprintf("bench: drained %d/%d (%.0f/s) claimed=%d complete_batches=%d claim_errors=%d ack_errors=%d lease_lost=%d",
			s.Completed, b.cfg.todos, float64(s.Completed)/el, s.Claimed, s.CompleteBatches, s.ClaimErrors, s.AcksAbandoned, s.LeaseLost)
	})
	defer stopProgress()
	poll := time.NewTicker(500 * time.Microsecond)
	defer poll.Stop()
	last, lastChange := int64(-1), time.Now()
	for {
		s := b.stats()
		if s.Completed >= int64(b.cfg.todos)+b.foreign.Load() {
			return time.Since(started), nil
		}
		if s.Completed != last {
			last, lastChange = s.Completed, time.Now()
		} else if time.Since(lastChange) > stallTimeout {
			return 0, fmt.Errorf("no todo completed for %s (%d/%d done)", stallTimeout, s.Completed, b.cfg.todos)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case err := <-werr:
			return 0, fmt.Errorf("worker stopped: %w", err)
		case <-poll.C:
		}
	}
}

// trickle enqueues cfg.trickle todos one at a time, each after the previous
// one reached a handler. It returns the enqueue→claim latencies the way the
// peers measure them (RESULTS.md: from the enqueue call returning, i.e. its
// commit acknowledged, to the handler starting; negative when the handler
// won the race with the acknowledgement) and, for the log, from the
// enqueue being sent.
func (b *bench) trickle(ctx context.Context, werr <-chan error) (fromAck, fromSend []time.Duration, err error) {
	// Let every worker get back into its long-poll Claim.
	if !lifecycle.Sleep(ctx, 200*time.Millisecond) {
		return nil, nil, ctx.Err()
	}
	fromAck = make([]time.Duration, 0, b.cfg.trickle)
	fromSend = make([]time.Duration, 0, b.cfg.trickle)
	var got atomic.Int64
	stopProgress := b.progress(func() string {
		return fmt.Sprintf("bench: trickle %d/%d claimed", got.Load(), b.cfg.trickle)
	})
	defer stopProgress()
	for i := range b.cfg.trickle {
		sent := time.Now()
		p, err := b.payload(map[string]any{benchPayloadEnqueued: strconv.FormatInt(sent.UnixNano(), 10)})
		if err != nil {
			return nil, nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = b.client.Enqueue(rctx, &queuev1.EnqueueRequest{Queue: b.cfg.queue, Payload: p, RemoveOnComplete: b.cfg.removeOnComplete})
		acked := time.Now()
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("Enqueue (trickle %d): %w", i+1, err)
		}
		h, err := b.awaitTrickle(ctx, werr, sent.UnixNano())
		if err != nil {
			return nil, nil, fmt.Errorf("trickle todo %d: %w", i+1, err)
		}
		fromAck = append(fromAck, h.at.Sub(acked))
		fromSend = append(fromSend, h.at.Sub(sent))
		got.Add(1)
	}
	return fromAck, fromSend, nil
}

// awaitTrickle waits for the trickle todo stamped seq to reach a handler.
// Another stamp is a redelivery of an earlier trickle todo and is skipped.
func (b *bench) awaitTrickle(ctx context.Context, werr <-chan error, seq int64) (handled, error) {
	timeout := time.NewTimer(stallTimeout)
	defer timeout.Stop()
	for {
		select {
		case h := <-b.latency:
			switch {
			case !h.ok:
				return h, fmt.Errorf("came back without a readable %s", benchPayloadEnqueued)
			case h.seq == seq:
				return h, nil
			}
		case <-timeout.C:
			return handled{}, fmt.Errorf("not claimed within %s", stallTimeout)
		case err := <-werr:
			return handled{}, fmt.Errorf("worker stopped: %w", err)
		case <-ctx.Done():
			return handled{}, ctx.Err()
		}
	}
}
