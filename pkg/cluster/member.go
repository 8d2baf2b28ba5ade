// Package cluster is self-assembling membership in Postgres: every process
// registers in the UNLOGGED node_registry table, heartbeats with its stats,
// sweeps peers whose heartbeat went stale, and leaves on shutdown. There is no
// seed list and no second consensus system: the table is the control plane.
//
// Beyond the registry design it tells a Postgres restart or failover (which
// empties the UNLOGGED table for everyone: re-register in place) from a peer's
// sweep (this node was presumed dead: exit so the restart re-registers), and
// it never sweeps while its own view is stale (unreachable or late).
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// ErrEvicted ends a node whose row a peer swept: its heartbeat stalled past
// the stale threshold while the database stayed up, so peers presumed it dead.
// Exiting (and being restarted) is the recovery the registry design chose.
var ErrEvicted = errors.New("evicted from node_registry by a peer sweep")

// Status is a node's health as GET /health reports it.
type Status string

// Statuses, from best to worst.
const (
	Healthy   Status = "healthy"
	Degraded  Status = "degraded"  // serving, but the database or our heartbeat is behind
	Unhealthy Status = "unhealthy" // not serving: starting, stopping or misconfigured
)

// Options configure a Member.
type Options struct {
	NodeID   string
	Endpoint string
	Services []string
	Version  string
	// Interval is the heartbeat tick; StaleThreshold is the heartbeat age
	// after which peers sweep a node (at least 2 × Interval).
	Interval       time.Duration
	StaleThreshold time.Duration
	// Stats, if set, adds keys to the runtime stats each tick (open streams…).
	Stats func() map[string]any
	// OnChange is called after anything that may change Status.
	OnChange func()
	// OnSweep, when set, is told of every sweep this node ran and how many
	// peers it evicted; OnReregister of every re-registration after the
	// table was reset (the metrics). Neither may block.
	OnSweep      func(evicted int)
	OnReregister func()
}

// Member is this process's membership: a lifecycle component.
type Member struct {
	log     *zap.Logger
	store   *Store
	opts    Options
	started time.Time

	mu          sync.Mutex
	registered  bool
	stopping    bool
	serverStart time.Time // Postgres start time when we (re)registered
	lastBeat    time.Time // local monotonic time of the last good heartbeat
	lastErr     error     // the last tick's database error, nil when it worked

	failed chan error
	loops  *lifecycle.Goroutines
}

// NewMember returns an unstarted member.
func NewMember(log *zap.Logger, pool *pgxpool.Pool, opts Options) *Member {
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	m := &Member{
		log:     log.With(sblog.Component("membership")),
		store:   NewStore(pool),
		opts:    opts,
		started: time.Now(),
		failed:  make(chan error, 1),
	}
	m.loops = lifecycle.NewGoroutines("membership", m.loop)
	return m
}

// Name implements lifecycle.Component.
func (m *Member) Name() string { return "membership" }

// Failed implements lifecycle.Failer: it delivers ErrEvicted.
func (m *Member) Failed() <-chan error { return m.failed }

// Start registers this node (so it is a member before it serves) and starts
// the heartbeat loop.
func (m *Member) Start(ctx context.Context) error {
	if err := m.register(ctx); err != nil {
		return err
	}
	return m.loops.Start(ctx)
}

// Stop ends the heartbeat loop and deregisters, so peers see this node leave
// at once instead of after the stale threshold. Safe before Start and twice.
func (m *Member) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	m.opts.OnChange()
	if err := m.loops.Stop(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	registered := m.registered
	m.registered = false
	m.mu.Unlock()
	if registered {
		if err := m.store.deregister(ctx, m.opts.NodeID); err != nil {
			m.log.Warn("could not deregister; peers will sweep this node", zap.Error(err))
		}
	}
	return nil
}

// Status is healthy while heartbeats land on time, degraded while the
// database is unreachable or the last heartbeat is late (the node keeps
// serving what it can), unhealthy before registration and once stopping.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.stopping || !m.registered:
		return Unhealthy
	case m.lastErr != nil || time.Since(m.lastBeat) > 2*m.opts.Interval:
		return Degraded
	default:
		return Healthy
	}
}

// SinceLastHeartbeat is the local time since the last successful heartbeat:
// the fallback for heartbeat age when the database cannot be asked.
func (m *Member) SinceLastHeartbeat() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastBeat.IsZero() {
		return 0
	}
	return time.Since(m.lastBeat)
}

func (m *Member) register(ctx context.Context) error {
	row, err := m.store.register(ctx, m.opts.NodeID, m.opts.Endpoint, m.stats())
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.registered, m.serverStart, m.lastBeat, m.lastErr = true, row.ServerStartedAt, time.Now(), nil
	m.mu.Unlock()
	m.log.Info("registered in node_registry", zap.Int32("seq", row.Seq), zap.String("endpoint", m.opts.Endpoint),
		zap.Strings("services", m.opts.Services))
	m.opts.OnChange()
	return nil
}

func (m *Member) loop(ctx context.Context) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.tick(ctx)
		switch {
		case errors.Is(err, ErrEvicted):
			m.failed <- err
			return
		case err != nil && ctx.Err() == nil:
			failures++
			// Log the first failure and then every tenth, not every tick.
			if failures == 1 || failures%10 == 0 {
				m.log.Warn("heartbeat failed; serving degraded and retrying", zap.Int("failures", failures), zap.Error(err))
			}
		case err == nil && failures > 0:
			m.log.Info("heartbeat recovered", zap.Int("failures", failures))
			failures = 0
		}
	}
}

// tick is one heartbeat: update our row, tell a reset table from an eviction,
// then sweep stale peers unless our own view might be stale.
func (m *Member) tick(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Interval)
	defer cancel()
	defer m.opts.OnChange()

	present, err := m.store.heartbeat(ctx, m.opts.NodeID, m.stats())
	if err == nil && !present {
		err = m.recoverMissingRow(ctx)
		if err != nil {
			m.setErr(err)
			return err
		}
		return nil // re-registered; sweep next tick
	}
	if err != nil {
		m.setErr(err)
		return err
	}
	m.mu.Lock()
	gap := time.Since(m.lastBeat)
	m.lastBeat, m.lastErr = time.Now(), nil
	m.mu.Unlock()
	// A late heartbeat (this process was paused, or the database was away)
	// means peers may merely look stale because they could not beat either:
	// give them a tick to catch up before judging them.
	if gap > 2*m.opts.Interval {
		m.log.Info("heartbeat was late; not sweeping this tick", zap.Duration("gap", gap))
		return nil
	}
	swept, err := m.store.sweep(ctx, m.opts.NodeID, m.opts.StaleThreshold)
	if err != nil {
		return err
	}
	if m.opts.OnSweep != nil {
		m.opts.OnSweep(len(swept))
	}
	for _, id := range swept {
		m.log.Warn("swept stale node", zap.String("swept_node_id", id))
	}
	return nil
}

// recoverMissingRow handles a heartbeat that found no row. If Postgres
// restarted (or failed over) since we registered, the UNLOGGED table was
// emptied under everyone: re-register in place. Otherwise a peer swept us.
func (m *Member) recoverMissingRow(ctx context.Context) error {
	startedAt, err := m.store.serverStartedAt(ctx, m.opts.NodeID)
	if err != nil {
		return err
	}
	m.mu.Lock()
	known := m.serverStart
	m.mu.Unlock()
	if !startedAt.Equal(known) {
		m.log.Warn("node_registry was reset by a Postgres restart or failover; re-registering",
			zap.Time("server_started_at", startedAt))
		if m.opts.OnReregister != nil {
			m.opts.OnReregister()
		}
		return m.register(ctx)
	}
	m.mu.Lock()
	m.registered = false
	m.mu.Unlock()
	m.log.Error("this node's row is gone while Postgres stayed up: a peer swept it; exiting so a restart re-registers")
	return ErrEvicted
}

func (m *Member) setErr(err error) {
	m.mu.Lock()
	m.lastErr = err
	m.mu.Unlock()
}

// stats is this tick's stats object: runtime figures, identity and whatever
// the node's services add.
func (m *Member) stats() json.RawMessage {
	s := runtimeStats(m.started)
	if m.opts.Stats != nil {
		maps.Copy(s, m.opts.Stats())
	}
	services := append([]string(nil), m.opts.Services...)
	sort.Strings(services)
	s["services"] = services
	s["version"] = m.opts.Version
	b, err := json.Marshal(s)
	if err != nil { // only numbers and strings: cannot happen
		return json.RawMessage(`{}`)
	}
	return b
}
