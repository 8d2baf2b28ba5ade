package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// Readiness periodically checks that Postgres answers and the schema is
// current, and reports each change through set (wired to gRPC health). It is
// what makes a node NOT_SERVING while its database is away.
type Readiness struct {
	log      *zap.Logger
	pool     *pgxpool.Pool
	interval time.Duration
	set      func(ready bool)

	ready atomic.Bool

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewReadiness returns a checker that runs every interval once started.
func NewReadiness(log *zap.Logger, pool *pgxpool.Pool, interval time.Duration, set func(bool)) *Readiness {
	return &Readiness{log: log.With(sblog.Component("readiness")), pool: pool, interval: interval, set: set}
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
	r.ready.Store(ready)
	if last == nil || *last != ready {
		if ready {
			r.log.Info("ready: postgres reachable, schema current")
		} else {
			r.log.Warn("not ready", zap.Error(err))
		}
		r.set(ready)
	}
	return &ready
}

// Ready reports the last check's result (false before the first check).
func (r *Readiness) Ready() bool { return r.ready.Load() }

// Stop ends the background checks. Safe before Start and twice.
func (r *Readiness) Stop(context.Context) error {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	return nil
}
