package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// MinRate and MaxRate bound every rate a queue, its keys or a key pattern
// may have (claims per second; 0 is none). MinRate is one claim a day: a
// GCRA row advances its tat by n / rate a claim and runs at most
// burst / rate ahead of now, which at MinRate and the largest burst
// (1,000,000) is 2,700 years, far inside PostgreSQL's timestamps and
// intervals; 1e-300 made every claim of the queue fail. The claim and its
// hint also read every stored rate clamped to these bounds, so a value
// stored before they were enforced cannot fail a claim.
const (
	MinRate = 1.0 / 86400
	MaxRate = 1_000_000
)

// Limits are a queue's concurrency limits and rates (claims per second,
// with their bursts, ≥ 1); 0 means none.
type Limits struct {
	MaxRunning    int32
	KeyMaxRunning int32
	Rate          float64
	RateBurst     int32
	KeyRate       float64
	KeyRateBurst  int32
	// KeyPatterns override the key limits for the keys they match (the
	// first match, in order).
	KeyPatterns []KeyPattern
}

// Limited reports whether the limits hold the queue's claims in any way
// (then they go through TodoClaimLimited; queue_controls.limited in SQL).
func (l Limits) Limited() bool {
	return l.MaxRunning > 0 || l.KeyMaxRunning > 0 || l.Rate > 0 || l.KeyRate > 0 || len(l.KeyPatterns) > 0
}

// SetLimits sets (replaces) a queue's limits and then repairs its counters
// (Repair), so they are right when it returns. Between the two
// transactions a claim may see the new limits with counters not yet
// recounted: limits hold from the moment SetLimits returns.
func (s *Store) SetLimits(ctx context.Context, c Caller, queue string, l Limits) (Control, error) {
	_, err := s.q.QueueSetLimits(ctx, s.pool, dbsqlc.QueueSetLimitsParams{
		HumanID: c.HumanID, Queue: queue, MaxRunning: positive(l.MaxRunning), KeyMaxRunning: positive(l.KeyMaxRunning),
		RatePerSecond: positive(l.Rate), RateBurst: max(1, l.RateBurst),
		KeyRatePerSecond: positive(l.KeyRate), KeyRateBurst: max(1, l.KeyRateBurst),
		KeyPatterns: encodePatterns(l.KeyPatterns),
	})
	if err != nil {
		return Control{}, mapErr(err, "set queue limits", "queue "+queue)
	}
	k := limitedKey{human: c.HumanID, queue: queue}
	if l.Limited() {
		s.limited.Store(k, time.Now())
	} else {
		s.limited.Delete(k)
	}
	if _, err := s.Repair(ctx, c.HumanID, queue, true); err != nil {
		return Control{}, err
	}
	return s.Control(ctx, c, queue)
}

// positive is n as a nullable column: NULL for 0.
func positive[N int32 | float64](n N) *N {
	if n <= 0 {
		return nil
	}
	return &n
}

// NextToken is how long until a rate of the queue (its own, or its keys')
// next lets a claim through; 0 when no rate holds its claims back (nothing
// due, limits reached, or a token is there). At most maxTokenWait: a
// waiting claim only uses a wait shorter than its poll interval, and a
// float beyond int64 nanoseconds would convert to garbage.
func (s *Store) NextToken(ctx context.Context, c Caller, queue string) (time.Duration, error) {
	r, err := s.q.QueueClaimHint(ctx, s.hot, dbsqlc.QueueClaimHintParams{HumanID: c.HumanID, Queue: queue, MinRatePerSecond: MinRate})
	if err != nil {
		return 0, mapErr(err, "claim hint", "queue "+queue)
	}
	wait := max(r.QueueWait, r.KeyWait)
	if !(wait > 0) { // NaN too
		return 0, nil
	}
	return time.Duration(min(wait, maxTokenWait.Seconds()) * float64(time.Second)), nil
}

// maxTokenWait caps NextToken.
const maxTokenWait = time.Hour

// keyIdleAfter is how long a key row that holds nothing (no running or
// pending todo, a full rate burst) stays before a repair deletes it.
const keyIdleAfter = time.Minute

// Repair recounts a queue's running counters from its todos, creates the
// key rows its live todos miss and deletes those idle for keyIdleAfter, in
// one transaction that first locks every key row in key order and then the
// queue row (the lock order of every completion), each before the recount's
// statement takes its snapshot, so the recount cannot race them. wait false
// skips a queue another node is repairing. r says how many counters were
// wrong and whether a stored rate is out of bounds.
func (s *Store) Repair(ctx context.Context, human uuid.UUID, queue string, wait bool) (r Repaired, err error) {
	err = postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if !wait {
				locked, err := s.q.QueueRepairTryLock(ctx, tx, dbsqlc.QueueRepairTryLockParams{HumanID: human, Queue: queue})
				if err != nil || !locked {
					return err
				}
			}
			if err := s.q.QueueKeysLock(ctx, tx, dbsqlc.QueueKeysLockParams{HumanID: human, Queue: queue}); err != nil {
				return err
			}
			if err := s.q.QueueRowLock(ctx, tx, dbsqlc.QueueRowLockParams{HumanID: human, Queue: queue}); err != nil {
				return err
			}
			if err := s.q.QueueKeysInsertMissing(ctx, tx, dbsqlc.QueueKeysInsertMissingParams{HumanID: human, Queue: queue}); err != nil {
				return err
			}
			if err := s.q.QueueKeysResolve(ctx, tx, dbsqlc.QueueKeysResolveParams{HumanID: human, Queue: queue}); err != nil {
				return err
			}
			rc, err := s.q.QueueRecount(ctx, tx, dbsqlc.QueueRecountParams{HumanID: human, Queue: queue, MinRatePerSecond: MinRate})
			if err != nil {
				return err
			}
			r = Repaired{Counters: rc.Repaired, RateOutOfBounds: rc.OutOfRange}
			_, err = s.q.QueueKeysPruneIdle(ctx, tx, dbsqlc.QueueKeysPruneIdleParams{
				HumanID: human, Queue: queue, IdleSeconds: keyIdleAfter.Seconds(),
			})
			return err
		})
	})
	if err != nil {
		return Repaired{}, mapErr(err, "repair queue counters", "queue "+queue)
	}
	if err := s.q.QueueRepaired(ctx, s.pool, dbsqlc.QueueRepairedParams{HumanID: human, Queue: queue}); err != nil {
		return r, mapErr(err, "repair queue counters", "queue "+queue)
	}
	return r, nil
}

// Repaired is what one queue's repair found.
type Repaired struct {
	// Counters is how many running counters were wrong.
	Counters int64
	// RateOutOfBounds: a stored rate of the queue (its own, its keys'
	// default or a key pattern's) is outside [MinRate, MaxRate], stored
	// before SetQueueLimits refused it; claims read it clamped.
	RateOutOfBounds bool
}

// QueueRef names one tenant's queue.
type QueueRef struct {
	HumanID uuid.UUID
	Queue   string
}

// RepairDue repairs up to limit limited queues that are due (QueueRepairDue:
// not repaired since 2 s after their limits changed, or not for every) and
// returns how many counters were wrong in total, and the queues it found
// with a rate out of bounds.
func (s *Store) RepairDue(ctx context.Context, every time.Duration, limit int32) (int64, []QueueRef, error) {
	due, err := s.q.QueueRepairDue(ctx, s.pool, dbsqlc.QueueRepairDueParams{RepairEverySeconds: every.Seconds(), RowLimit: limit})
	if err != nil {
		return 0, nil, mapErr(err, "list queues to repair", "queues")
	}
	var total int64
	var outOfBounds []QueueRef
	for _, q := range due {
		r, err := s.Repair(ctx, q.HumanID, q.Queue, false)
		if err != nil {
			return total, outOfBounds, err
		}
		total += r.Counters
		if r.RateOutOfBounds {
			outOfBounds = append(outOfBounds, QueueRef{HumanID: q.HumanID, Queue: q.Queue})
		}
	}
	return total, outOfBounds, nil
}
