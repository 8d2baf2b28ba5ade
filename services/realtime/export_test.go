//go:build integration

package realtime

import "context"

// OnPublishStatement sets a hook told the number of events of every durable
// insert statement s sends: merged batches, one-by-one retries and direct
// calls. It runs on the goroutine about to send the statement, so a hook
// that blocks holds that flush, and everything queued behind it waits.
func OnPublishStatement(s *Server, f func(events int)) { s.publisher.OnStatement(f) }

// PublishesQueued is how many durable publishes wait for the next flush.
func PublishesQueued(s *Server) int { return s.publisher.Queued() }

// PublishLimits is the realtime.limits s applies now (durable, ephemeral
// per second per tenant), for tests that wait for a change to be read.
func PublishLimits(s *Server) (durable, ephemeral int) {
	l := s.limiter.current()
	return l.DurablePerSecond, l.EphemeralPerSecond
}

// RefreshLimits reads realtime.limits now, as s's loop does.
func RefreshLimits(ctx context.Context, s *Server) { s.refreshLimits(ctx) }
