//go:build integration

package ingest

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// OnBatchStatement sets a hook told each group-commit statement's size
// (one-by-one retries of a failed batch included).
func (s *Server) OnBatchStatement(f func(n int)) { s.batcher.OnStatement(f) }

// RunningAdapters is how many adapters this node's runner has running now.
func (s *Server) RunningAdapters() int {
	s.adapters.mu.Lock()
	defer s.adapters.mu.Unlock()
	n := 0
	for _, a := range s.adapters.running {
		select {
		case <-a.done:
		default:
			n++
		}
	}
	return n
}

// SetAdapterStatusGap sets the least time between two writes of one
// adapter's state; call it before Start.
func (s *Server) SetAdapterStatusGap(d time.Duration) { s.adapters.statusGap = d }

// SetAdapterBackoff sets how each adapter paces its retries; call it
// before Start.
func (s *Server) SetAdapterBackoff(lo, hi time.Duration) {
	s.adapters.backoff = adapter.Backoff{Min: lo, Max: hi}
}

// SetEndpointCacheTTL sets how long the webhook edge may serve an endpoint
// from its cache without hearing of a change; call it before any request.
func (s *Server) SetEndpointCacheTTL(d time.Duration) { s.endpoints.ttl = d }

// FlushDeliveries writes the delivery log's buffered entries now (what its
// loop does every 250 ms), and returns once they are written.
func (s *Server) FlushDeliveries() error { return s.deliveries.flush(context.Background()) }

// SetDeliveryClock sets the clock the delivery log's refusal limit reads.
func (s *Server) SetDeliveryClock(now func() time.Time) {
	s.deliveries.mu.Lock()
	defer s.deliveries.mu.Unlock()
	s.deliveries.now = now
}

// OnRouteFilters sets a hook told, for each routed delivery, what its
// route filters spent of their budget and where it ran out (nil: it did
// not); call it before any request.
func (s *Server) OnRouteFilters(f func(spent uint64, stop *sources.FilterStop)) { s.onRouteFilters = f }

// SetRouteFilterTimeLimit replaces the route filters' per-delivery time
// limit of the endpoints this server loads from now on.
func (s *Server) SetRouteFilterTimeLimit(d time.Duration) { s.endpoints.filterTimeLimit = d }
