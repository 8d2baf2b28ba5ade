package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// defaultAdapterInterval is how often a node reconciles its running
// adapters with the adapters table (created, changed, disabled, deleted).
const defaultAdapterInterval = 10 * time.Second

// adapterRunner runs this node's consumer of every enabled Redis Streams
// adapter. The consumer name is the node id, so the nodes of a cluster share
// each stream's consumer group: entries spread over them, and a dead node's
// pending entries are reclaimed by the others (XAUTOCLAIM).
type adapterRunner struct {
	s      *Server
	nodeID string
	loop   *lifecycle.Loop
	// statusGap is the least time between two writes of one adapter's
	// state (statusWriter).
	statusGap time.Duration
	// backoff paces each adapter's retries (the zero value: adapter's
	// defaults).
	backoff adapter.Backoff

	mu      sync.Mutex
	running map[uuid.UUID]*runningAdapter
}

type runningAdapter struct {
	config string // the row's config as stored: a change restarts the adapter
	cancel context.CancelFunc
	done   chan struct{}
	// server claims each new connection's server for the adapter.
	server *serverCheck
}

// reconcileGap is the least time between two reconciles: adapter changes
// wake the runner of every node (Server's OnAdapterChange), and one tenant
// updating its adapters in a loop must not keep every node re-reading the
// whole table back to back. Wakes within the gap fold into one reconcile.
const reconcileGap = 500 * time.Millisecond

func newAdapterRunner(s *Server, nodeID string, interval time.Duration) *adapterRunner {
	r := &adapterRunner{s: s, nodeID: nodeID, statusGap: defaultStatusGap, running: map[uuid.UUID]*runningAdapter{}}
	gap := min(interval, reconcileGap)
	r.loop = lifecycle.NewLoop(Name+"-adapters", interval, func(ctx context.Context) {
		r.reconcile(ctx)
		lifecycle.Sleep(ctx, gap)
	})
	return r
}

// Name implements lifecycle.Component.
func (r *adapterRunner) Name() string { return r.loop.Name() }

// Start implements lifecycle.Component.
func (r *adapterRunner) Start(ctx context.Context) error { return r.loop.Start(ctx) }

// Stop implements lifecycle.Component: no more reconciling, then every
// adapter stops (an entry being stored finishes or stays pending for the
// next consumer; nothing acknowledged is lost).
func (r *adapterRunner) Stop(ctx context.Context) error {
	err := r.loop.Stop(ctx)
	r.mu.Lock()
	running := r.running
	r.running = map[uuid.UUID]*runningAdapter{}
	r.mu.Unlock()
	for _, a := range running {
		a.cancel()
	}
	for _, a := range running {
		select {
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// reconcile starts the adapters that should run and are not, restarts the
// changed ones and stops the ones gone or disabled.
func (r *adapterRunner) reconcile(ctx context.Context) {
	started := time.Now()
	rows, err := r.s.sources.PullAdapters(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.s.log.Warn("adapters: cannot list; keeping the running ones", zap.Error(err))
		}
		return
	}
	want := make(map[uuid.UUID]sources.PullAdapter, len(rows))
	for _, row := range rows {
		want[row.ID] = row
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.running {
		row, ok := want[id]
		select {
		case <-a.done: // it failed and stopped: start it again below
			delete(r.running, id)
			continue
		default:
		}
		// An adapter whose server record was taken since its claim lost the
		// stream to an older adapter of another owner: restarted, its next
		// connection's claim is refused and it reads no more.
		lost := ok && row.ServerKey == nil && a.server.claimedBefore(started)
		if !ok || string(row.Config) != a.config || lost {
			a.cancel()
			<-a.done
			delete(r.running, id)
		}
	}
	for id, row := range want {
		if _, ok := r.running[id]; ok {
			continue
		}
		if a, err := r.start(ctx, row); err != nil {
			// Only a config written around the API gets here.
			r.s.log.Warn("adapters: cannot start", zap.String("adapter_id", id.String()), zap.Error(err))
			r.report(ctx, id, "cannot start: the stored config is not valid (the node's log has the details)")
		} else {
			r.running[id] = a
		}
	}
}

func (r *adapterRunner) start(ctx context.Context, row sources.PullAdapter) (*runningAdapter, error) {
	var c redisstream.StoredConfig
	if err := json.Unmarshal(row.Config, &c); err != nil {
		return nil, fmt.Errorf("config is not a redis_stream config: %w", err)
	}
	// The adapter lives until reconcile or Stop cancels it, not until this
	// tick's context ends.
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cfg := c.Config(row.ID.String(), r.nodeID, r.s.log.With(zap.String("adapter_id", row.ID.String())))
	// Every connection goes through the operator's allow list, checked on
	// the address dialed: an adapter stored before the list changed, or a
	// name that resolves elsewhere now, connects nowhere.
	cfg.Dialer = r.s.sources.Allowlist().DialContext
	cfg.Backoff = r.backoff
	cfg.OnStatus = newStatusWriter(func(reason string) { r.report(actx, row.ID, reason) }, r.statusGap).report
	// Each connection reads only once the server it reached is claimed
	// for this adapter: not another owner's stream, however addressed.
	check := &serverCheck{r: r, id: row.ID, cfg: c}
	cfg.OnServer = check.check
	src, err := redisstream.New(cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	sink := r.s.AdapterSink(AdapterTarget{ID: row.ID, HumanID: row.HumanID, Queue: row.Queue, AgentID: row.AgentID})
	a := &runningAdapter{config: string(row.Config), cancel: cancel, done: make(chan struct{}), server: check}
	go func() {
		defer close(a.done)
		if err := src.Run(actx, sink); err != nil && actx.Err() == nil {
			r.s.log.Warn("adapter stopped", zap.String("adapter_id", row.ID.String()), zap.Error(err))
			r.report(context.WithoutCancel(actx), row.ID, redisstream.Reason(err))
		} // the next reconcile sees done closed and starts it again
	}()
	return a, nil
}

func (r *adapterRunner) report(ctx context.Context, id uuid.UUID, lastError string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.s.sources.ReportAdapter(ctx, id, lastError); err != nil && ctx.Err() == nil {
		r.s.log.Warn("adapters: cannot record state", zap.String("adapter_id", id.String()), zap.Error(err))
	}
}
