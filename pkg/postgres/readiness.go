package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

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

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewReadiness returns a checker that runs every interval once started and
// calls onChange whenever its result changes.
func NewReadiness(log *zap.Logger, pool *pgxpool.Pool, interval time.Duration, onChange func()) *Readiness {
	return &Readiness{log: log.With(sblog.Component("readiness")), pool: pool, interval: interval, onChange: onChange}
}

// Name implements lifecycle.Component.
func (r *Readiness) Name() string { return "readiness" }

// Start checks once synchronously (so a node reports SERVING as soon as it is
// started), then keeps checking in the background.
func (r *Readiness) Start(ctx context.Context) error {
	r.once.Do(func() {
		// Checks continue until Stop, not until the run context ends.
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		r.cancel = cancel
		r.done = make(chan struct{})
		last := r.check(ctx, nil)
		go r.loop(ctx, last)
	})
	return nil
}

func (r *Readiness) loop(ctx context.Context, last *bool) {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			last = r.check(ctx, last)
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
func (r *Readiness) Stop(context.Context) error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	return nil
}
