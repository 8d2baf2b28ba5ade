//go:build integration

package realtime

// OnPublishStatement sets a hook told the number of events of every durable
// insert statement s sends: merged batches, one-by-one retries and direct
// calls. It runs on the goroutine about to send the statement, so a hook
// that blocks holds that flush, and everything queued behind it waits.
func OnPublishStatement(s *Server, f func(events int)) { s.publisher.OnStatement(f) }

// PublishesQueued is how many durable publishes wait for the next flush.
func PublishesQueued(s *Server) int { return s.publisher.Queued() }
