package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// ClaimArgs selects and leases todos.
type ClaimArgs struct {
	Queue  string
	Worker string
	// Max is the batch size, 1–1000.
	Max int32
	// LeaseSeconds 0 means the setting queue.defaults.lease_seconds.
	LeaseSeconds int32
}

// limitedRecheck is how often a node re-asks whether a queue it takes for
// limited still is, while its claims come back empty.
const limitedRecheck = time.Second

// limitedKey names a queue in Store.limited.
type limitedKey struct {
	human uuid.UUID
	queue string
}

// Claim leases up to a.Max due todos of a queue to a worker in one
// statement; an empty result means nothing is runnable now. A queue without
// limits takes the fast statement (TodoClaim); a limited one
// TodoClaimLimited. Which one is a per-node hint, checked after an empty
// answer: the fast statement hands out nothing from a limited queue, so a
// stale hint can only cost an extra statement, never a limit.
func (s *Store) Claim(ctx context.Context, c Caller, a ClaimArgs) ([]Todo, error) {
	k := limitedKey{human: c.HumanID, queue: a.Queue}
	v, limited := s.limited.Load(k)
	checked, _ := v.(time.Time)
	rows, err := s.claim(ctx, c, a, limited)
	// A limited queue's empty answer is usual (limits reached): its hint is
	// re-checked at most once per limitedRecheck, not after each one.
	if err == nil && len(rows) == 0 && (!limited || time.Since(checked) > limitedRecheck) {
		var now bool
		if now, err = s.q.QueueLimitedGet(ctx, s.hot, dbsqlc.QueueLimitedGetParams{HumanID: c.HumanID, Queue: a.Queue}); err == nil {
			if now {
				s.limited.Store(k, time.Now())
			} else {
				s.limited.Delete(k)
			}
			if now != limited {
				limited = now
				rows, err = s.claim(ctx, c, a, limited)
			}
		}
	}
	if err != nil {
		return nil, mapErr(err, "claim", "queue "+a.Queue)
	}
	// UPDATE … RETURNING does not promise the CTE's order; the contract
	// returns todos in claim order (for a limited queue: round-robin over
	// the keys, which the statement chose; any order is a claim order).
	if !limited {
		rows = claimOrder(rows)
	}
	return rows, nil
}

func (s *Store) claim(ctx context.Context, c Caller, a ClaimArgs, limited bool) ([]Todo, error) {
	if limited {
		return s.q.TodoClaimLimited(ctx, s.hot, dbsqlc.TodoClaimLimitedParams{
			DefaultLeaseSeconds: settings.DefaultQueue.LeaseSeconds,
			Worker:              a.Worker, LeaseSeconds: a.LeaseSeconds, HumanID: c.HumanID, Queue: a.Queue,
			CallerAgentID: c.AgentID, BatchSize: a.Max, MinRatePerSecond: MinRate,
		})
	}
	return s.q.TodoClaim(ctx, s.hot, dbsqlc.TodoClaimParams{
		DefaultLeaseSeconds: settings.DefaultQueue.LeaseSeconds,
		Worker:              a.Worker, LeaseSeconds: a.LeaseSeconds, HumanID: c.HumanID, Queue: a.Queue,
		CallerAgentID: c.AgentID, BatchSize: a.Max,
	})
}

// Limited reports whether this node takes the queue for limited (its
// claims go through TodoClaimLimited): a hint, as in Claim.
func (s *Store) Limited(c Caller, queue string) bool {
	_, ok := s.limited.Load(limitedKey{human: c.HumanID, queue: queue})
	return ok
}
