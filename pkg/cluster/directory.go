package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	sblog "github.com/switchboard/switchboard/pkg/logging"
)

// StatHTTPEndpoint is the stats key under which a node publishes the HTTP
// address peers reach it by (its webhook edge, for a gateway that forwards
// hooks to an ingest node).
const StatHTTPEndpoint = "http_endpoint"

// Directory is this process's live view of node_registry for routing: which
// nodes run which service. One Store.Watch feeds it (joins, heartbeats,
// leaves and sweeps show within one watch interval), and everything that
// routes by the registry reads it: the gRPC resolver (resolver.go) and the
// gateway's webhook forwarding. It is a lifecycle component; Start returns
// once the first snapshot is in, so nothing routes on an empty view.
type Directory struct {
	log      *zap.Logger
	store    *Store
	interval time.Duration

	mu       sync.Mutex
	nodes    map[string]Node
	replay   map[string]bool // the nodes a (re)started watch's snapshot named so far
	watchers map[int]func()
	next     int
	synced   chan struct{}
	loops    *lifecycle.Goroutines
}

// NewDirectory returns an unstarted directory reading pool every interval.
func NewDirectory(log *zap.Logger, pool *pgxpool.Pool, interval time.Duration) *Directory {
	d := &Directory{
		log: log.With(sblog.Component("directory")), store: NewStore(pool), interval: interval,
		nodes: map[string]Node{}, watchers: map[int]func(){}, synced: make(chan struct{}),
	}
	d.loops = lifecycle.NewGoroutines("directory", d.watch)
	return d
}

// Name implements lifecycle.Component.
func (d *Directory) Name() string { return "directory" }

// Start begins watching and waits for the first snapshot (or ctx).
func (d *Directory) Start(ctx context.Context) error {
	if err := d.loops.Start(ctx); err != nil {
		return err
	}
	select {
	case <-d.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("directory: first read of node_registry: %w", ctx.Err())
	}
}

// Stop ends the watch.
func (d *Directory) Stop(ctx context.Context) error { return d.loops.Stop(ctx) }

// watch runs Store.Watch, restarting it after a database error (the view
// keeps its last state meanwhile: a database outage is not a cluster of
// nobody).
func (d *Directory) watch(ctx context.Context) {
	failures := 0
	for {
		d.mu.Lock()
		d.replay = map[string]bool{} // the snapshot this watch starts with
		d.mu.Unlock()
		err := d.store.Watch(ctx, d.interval, d.apply)
		if ctx.Err() != nil {
			return
		}
		failures++
		if failures == 1 || failures%10 == 0 {
			d.log.Warn("watching node_registry failed; routing on the last view and retrying",
				zap.Int("failures", failures), zap.Error(err))
		}
		if !lifecycle.Sleep(ctx, d.interval) {
			return
		}
	}
}

// apply folds one watch event into the view. A restarted watch replays a
// full snapshot (Joined… then Synced): nodes it did not mention left while
// the watch was down, so Synced drops them.
func (d *Directory) apply(e Event) error {
	d.mu.Lock()
	changed := false
	switch e.Type {
	case Joined:
		if d.replay != nil { // still in the snapshot
			d.replay[e.Node.NodeID] = true
		}
		changed = d.put(e.Node)
	case Updated:
		changed = d.put(e.Node)
	case Left:
		_, changed = d.nodes[e.Node.NodeID]
		delete(d.nodes, e.Node.NodeID)
	case Synced:
		for id := range d.nodes {
			if !d.replay[id] {
				delete(d.nodes, id)
				changed = true
			}
		}
		d.replay = nil
		select {
		case <-d.synced:
		default:
			close(d.synced)
		}
	}
	var notify []func()
	if changed {
		for _, f := range d.watchers {
			notify = append(notify, f)
		}
	}
	d.mu.Unlock()
	for _, f := range notify {
		f()
	}
	return nil
}

// put stores n and reports whether anything routing reads changed (its
// endpoint, services or HTTP endpoint): heartbeats alone wake no one.
func (d *Directory) put(n Node) bool {
	old, ok := d.nodes[n.NodeID]
	d.nodes[n.NodeID] = n
	return !ok || old.Endpoint != n.Endpoint || !slices.Equal(old.Services(), n.Services()) ||
		old.HTTPEndpoint() != n.HTTPEndpoint()
}

// Running lists the live nodes that run service, ordered by node id.
func (d *Directory) Running(service string) []Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Node
	for _, n := range d.nodes {
		if slices.Contains(n.Services(), service) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}

// OnChange calls f (on the watch's goroutine; it must not block) after
// every change of what Running returns, until the returned cancel.
func (d *Directory) OnChange(f func()) (cancel func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.next
	d.next++
	d.watchers[id] = f
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.watchers, id)
	}
}

// ErrNoLiveNode is what routing to a service no live node runs fails with.
var ErrNoLiveNode = errors.New("no live node runs")

// NoLiveNode is the error for service: "no live node runs queue".
func NoLiveNode(service string) error { return fmt.Errorf("%w %s", ErrNoLiveNode, service) }

// HTTPEndpoint is the HTTP address the node published ("" if none).
func (n Node) HTTPEndpoint() string {
	s, _ := n.Stats[StatHTTPEndpoint].(string)
	return s
}
