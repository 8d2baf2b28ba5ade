package node

import (
	"sync"

	"github.com/switchboard/switchboard/pkg/cluster"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// health combines membership, readiness and shutdown into the one status the
// node reports on GET /health and, as SERVING / NOT_SERVING, on grpc.health.v1:
//
//	unhealthy  starting, draining, not registered, or the schema is not the
//	           version this binary needs        → NOT_SERVING, HTTP 503
//	degraded   Postgres unreachable or our heartbeat late; the node keeps
//	           serving what it can               → SERVING, HTTP 200
//	healthy    everything current               → SERVING, HTTP 200
type health struct {
	grpc      *grpcserver.Server
	member    *cluster.Member
	readiness *postgres.Readiness

	mu       sync.Mutex
	draining bool

	// served is closed the first time the node reports SERVING with every
	// component started (the HTTP edge included).
	served     chan struct{}
	servedOnce sync.Once
	started    bool
}

// Status implements the registry's view of this node.
func (h *health) Status() cluster.Status {
	h.mu.Lock()
	draining := h.draining
	h.mu.Unlock()
	if draining || h.member == nil || h.readiness == nil {
		return cluster.Unhealthy
	}
	st := h.member.Status()
	checked, reachable, current := h.readiness.State()
	switch {
	case st == cluster.Unhealthy:
		return st
	case checked && reachable && !current:
		return cluster.Unhealthy
	case checked && !reachable:
		return cluster.Degraded
	}
	return st
}

// update pushes the status to gRPC health. Both membership and readiness call
// it on every change.
func (h *health) update() {
	serving := h.Status() != cluster.Unhealthy
	h.grpc.SetServing(serving)
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if serving && started {
		h.servedOnce.Do(func() { close(h.served) })
	}
}

// startedAll records that every component has started; the last one calls it.
func (h *health) startedAll() {
	h.mu.Lock()
	h.started = true
	h.mu.Unlock()
	h.update()
}

// drain marks the node as going away before anything stops.
func (h *health) drain() {
	h.mu.Lock()
	h.draining = true
	h.mu.Unlock()
}
