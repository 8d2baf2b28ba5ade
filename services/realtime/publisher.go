package realtime

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/groupcommit"
	"github.com/switchboard/switchboard/services/realtime/internal/store"
)

// Bounds of one group-commit statement of durable publishes. 256 events
// amortise the round trip and the commit's WAL flush almost fully; the byte
// bound keeps a statement of large payloads (64 KiB each at most) to about
// one MiB, so one flush never holds a connection for long.
const (
	publishMaxEvents = 256
	publishMaxBytes  = 1 << 20
	// publishTimeout bounds a sent statement and its one-by-one retries. It
	// is the flush's own deadline, tied to no caller: a caller that gives
	// up after its event was sent does not fail the others.
	publishTimeout = 10 * time.Second
)

// publisher is the group commit of durable publishes on this node:
// concurrent Publish calls share one EventInsert statement, so one round
// trip and one commit, and each gets its own id or error. The window is
// zero: a lone publish is sent at once, and those arriving while a
// statement runs share the next one, so batches grow with load and cost
// nothing when it is light. A caller whose context ends while its event is
// still queued gets its context's error and the event is never stored.
// There is one key (every tenant shares the statement: each row carries
// its own). Before Start and after Stop every call runs on its own. See
// pkg/groupcommit.
type publisher = groupcommit.Batcher[struct{}, store.Event, store.Stored]

func (s *Server) newPublisher() *publisher {
	return groupcommit.New(Name+"-group-commit", s.insertDurable, groupcommit.Options[store.Event]{
		MaxItems: publishMaxEvents, MaxSize: publishMaxBytes, Size: func(e store.Event) int { return len(e.Payload) },
		Timeout: publishTimeout, Retry: refusedByServer, OnFlush: s.opts.Metrics.GroupCommitObserver(Name + "-group-commit"),
	})
}

// publishDurable stores e, sharing a statement with this node's concurrent
// publishes.
func (s *Server) publishDurable(ctx context.Context, e store.Event) (int64, time.Time, error) {
	r, err := s.publisher.Do(ctx, struct{}{}, e)
	if err != nil {
		if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			// The statement's own deadline (publishTimeout) or the node's
			// shutdown ended it, not this caller: the database is slow or
			// away, which the client may retry.
			s.log.Warn("durable publish not stored in time", zap.Error(err))
			return 0, time.Time{}, apierr.Unavailable("the database is unavailable; retry shortly")
		}
		// A foreign-key refusal is the caller's tenant, deleted while its
		// publish was in flight: NOT_FOUND, not an internal error.
		return 0, time.Time{}, apierr.FromPostgres(err, "insert realtime event", "the publishing tenant", nil)
	}
	return r.ID, r.CreatedAt, nil
}

// insertDurable is the publisher's statement. After the commit it pokes
// this node's reader and marks the cluster-wide notification once for the
// whole statement (the newest id is the last: ids ascend in events' order).
func (s *Server) insertDurable(ctx context.Context, _ struct{}, events []store.Event) ([]store.Stored, error) {
	out, err := s.store.Insert(ctx, events)
	if err != nil {
		return nil, err
	}
	s.reader.poke()
	s.markDurable(out[len(out)-1].ID)
	return out, nil
}

// refusedByServer is when a failed batch is retried event by event: only
// when the server refused the statement for what it carried (a tenant
// deleted meanwhile, a constraint), which proves nothing was stored, so one
// bad event fails only its own caller. Not after a fault of the database or
// of the connection: a statement whose connection was lost may have
// committed, and events have no key that would stop a second copy; each
// caller gets the fault (UNAVAILABLE through apierr) and may retry.
func refusedByServer(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && !apierr.IsTransient(err)
}
