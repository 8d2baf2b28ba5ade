package redisstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// process stores a batch and acks what was stored. It returns an error when
// some entries are neither stored nor dead-lettered; they stay pending and are
// retried after a backoff.
func (r *runner) process(ctx context.Context, entries []redis.XMessage) error {
	if len(entries) == 0 {
		return nil
	}
	var gone []string
	live := make([]redis.XMessage, 0, len(entries))
	msgs := make([]adapter.Message, 0, len(entries))
	for _, e := range entries {
		// A pending entry that was trimmed or XDELed comes back without
		// fields. There is nothing left to store; ack it so it leaves the PEL.
		if e.Values == nil {
			gone = append(gone, e.ID)
			continue
		}
		m, err := r.toMessage(e)
		if err != nil {
			if err := r.deadLetter(ctx, e, err.Error(), 0); err != nil {
				return err
			}
			continue
		}
		live = append(live, e)
		msgs = append(msgs, m)
	}
	if len(gone) > 0 {
		r.log.Warn("acking pending entries deleted from the stream", zap.Strings("ids", gone))
		if err := r.ack(ctx, gone); err != nil {
			return err
		}
	}
	if len(msgs) == 0 {
		return nil
	}

	storeErr := r.sink.Store(ctx, r.cfg.ID, msgs)
	if storeErr == nil {
		return r.ack(ctx, ids(live))
	}
	if ctx.Err() != nil {
		return stepFailed("store events", storeErr)
	}
	r.log.Warn("sink store failed", zap.Int("entries", len(msgs)), zap.Error(storeErr))
	if errors.Is(storeErr, adapter.ErrSinkUnavailable) || len(msgs) == 1 {
		return r.handleFailures(ctx, live, []error{storeErr})
	}

	// Retry one by one so one bad entry neither blocks nor dead-letters its
	// neighbours. The sink dedups, so entries of a batch that was partly
	// written before failing are harmless to store again.
	errs := make([]error, len(msgs))
	var stored []string
	for i := range msgs {
		if errs[i] = r.sink.Store(ctx, r.cfg.ID, msgs[i:i+1]); errs[i] == nil {
			stored = append(stored, live[i].ID)
		} else if ctx.Err() != nil {
			return stepFailed("store events", fmt.Errorf("entry %s: %w", live[i].ID, errs[i]))
		}
	}
	if len(stored) > 0 {
		if err := r.ack(ctx, stored); err != nil {
			return err
		}
	}
	return r.handleFailures(ctx, live, errs)
}

// handleFailures dead-letters failed entries that reached MaxDeliveries and
// reports the rest as an error. errs is parallel to entries (nil = stored), or
// has a single error that applies to all of them.
func (r *runner) handleFailures(ctx context.Context, entries []redis.XMessage, errs []error) error {
	errAt := func(i int) error {
		if len(errs) == 1 {
			return errs[0]
		}
		return errs[i]
	}
	var failed []redis.XMessage
	var failedErrs []error
	for i, e := range entries {
		if err := errAt(i); err != nil {
			failed = append(failed, e)
			failedErrs = append(failedErrs, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// Delivery counts only matter for failures that may be the entry's fault.
	var counts map[string]int64
	for _, err := range failedErrs {
		if !errors.Is(err, adapter.ErrSinkUnavailable) {
			var lookupErr error
			if counts, lookupErr = r.deliveries(ctx, ids(failed)); lookupErr != nil {
				return lookupErr
			}
			break
		}
	}
	left := 0
	var firstErr error
	for i, e := range failed {
		err := failedErrs[i]
		n := counts[e.ID]
		// An outage of the sink is not the entry's fault: never dead-letter
		// for it, however often the entry was delivered.
		if !errors.Is(err, adapter.ErrSinkUnavailable) && n >= r.cfg.MaxDeliveries {
			if err := r.deadLetter(ctx, e, err.Error(), n); err != nil {
				return err
			}
			continue
		}
		left++
		if firstErr == nil {
			firstErr = err
		}
	}
	if left > 0 {
		return stepFailed("store events", fmt.Errorf("%d of %d entries: %w", left, len(entries), firstErr))
	}
	return nil
}

// deliveries returns the delivery count of each pending entry in ids, from
// XPENDING. The count includes the current delivery.
func (r *runner) deliveries(ctx context.Context, ids []string) (map[string]int64, error) {
	cmds := make([]*redis.XPendingExtCmd, len(ids))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.XPendingExt(ctx, &redis.XPendingExtArgs{
				Stream: r.cfg.Stream, Group: r.cfg.Group, Start: id, End: id, Count: 1,
			})
		}
		return nil
	})
	if err != nil {
		return nil, stepFailed("count deliveries (XPENDING)", err)
	}
	counts := make(map[string]int64, len(ids))
	for _, c := range cmds {
		for _, p := range c.Val() {
			counts[p.ID] = p.RetryCount
		}
	}
	return counts, nil
}

// deadLetter copies e to the dead-letter stream with its original id and the
// reason, and acks it, in one MULTI so the entry is never both lost and acked.
func (r *runner) deadLetter(ctx context.Context, e redis.XMessage, reason string, deliveries int64) error {
	values := make(map[string]any, len(e.Values)+5)
	for k, v := range e.Values {
		values[k] = v
	}
	values[DeadFieldOriginalID] = e.ID
	values[DeadFieldStream] = r.cfg.Stream
	values[DeadFieldGroup] = r.cfg.Group
	values[DeadFieldReason] = reason
	values[DeadFieldDeliveries] = strconv.FormatInt(deliveries, 10)
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: r.cfg.DeadLetterStream, Values: values})
		p.XAck(ctx, r.cfg.Stream, r.cfg.Group, e.ID)
		return nil
	})
	if err != nil {
		return stepFailed("dead-letter", fmt.Errorf("entry %s: %w", e.ID, err))
	}
	r.log.Error("entry dead-lettered", zap.String("id", e.ID), zap.String("reason", reason),
		zap.Int64("deliveries", deliveries), zap.String("dead_letter_stream", r.cfg.DeadLetterStream))
	return nil
}

func (r *runner) ack(ctx context.Context, ids []string) error {
	if err := r.rdb.XAck(ctx, r.cfg.Stream, r.cfg.Group, ids...).Err(); err != nil {
		return stepFailed("acknowledge (XACK)", fmt.Errorf("%d entries: %w", len(ids), err))
	}
	return nil
}

func ids(entries []redis.XMessage) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}
