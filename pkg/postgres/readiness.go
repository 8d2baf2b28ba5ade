package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// Readiness periodically checks that Postgres answers and the schema is
// current, and reports each change through onChange. The node turns it into
// health: a schema mismatch is unhealthy, an unreachable database degraded.
type Readiness struct {
	log      *zap.Logger
	pool     *pgxpool.Pool
	interval time.Duration
	onChange func()

	checked   atomic.Bool // at least one check finished
	reachable atomic.Bool
	current   atomic.Bool

	loops *lifecycle.Goroutines
	once  sync.Once
	last  *bool // the last check's result; Start's first check, then the loop's
}

// NewReadiness returns a checker that runs every interval once started and
// calls onChange whenever its result changes.
func NewReadiness(log *zap.Logger, pool *pgxpool.Pool, interval time.Duration, onChange func()) *Readiness {
	r := &Readiness{log: log.With(sblog.Component("readiness")), pool: pool, interval: interval, onChange: onChange}
	r.loops = lifecycle.NewGoroutines("readiness", r.loop)
	return r
}

// Name implements lifecycle.Component.
func (r *Readiness) Name() string { return "readiness" }

// Start checks once synchronously (so a node reports SERVING as soon as it is
// started), then keeps checking in the background until Stop.
func (r *Readiness) Start(ctx context.Context) error {
	r.once.Do(func() { r.last = r.check(ctx, nil) })
	return r.loops.Start(ctx)
}

func (r *Readiness) loop(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.last = r.check(ctx, r.last)
		}
	}
}

func (r *Readiness) check(ctx context.Context, last *bool) *bool {
	cctx, cancel := context.WithTimeout(ctx, max(r.interval, 2*time.Second))
	defer cancel()
	err := SchemaCurrent(cctx, r.pool)
	if ctx.Err() != nil {
		return last
	}
	ready := err == nil
	r.reachable.Store(err == nil || errors.Is(err, ErrSchemaMismatch))
	r.current.Store(ready)
	r.checked.Store(true)
	if last == nil || *last != ready {
		if ready {
			r.log.Info("ready: postgres reachable, schema current")
		} else {
			r.log.Warn("not ready", zap.Error(err))
		}
		r.onChange()
	}
	return &ready
}

// Ready reports whether the last check found the database reachable with the
// current schema (false before the first check).
func (r *Readiness) Ready() bool { return r.current.Load() }

// State reports the last check: whether one has finished, whether Postgres
// answered, and whether its schema is current.
func (r *Readiness) State() (checked, reachable, current bool) {
	return r.checked.Load(), r.reachable.Load(), r.current.Load()
}

// Stop ends the background checks. Safe before Start and twice.
func (r *Readiness) Stop(ctx context.Context) error { return r.loops.Stop(ctx) }
