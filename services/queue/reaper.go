package queue

import (
	"context"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// ReapOnce runs one reaper pass now and returns how many leases it ended
// (after the limited queues' counter repair that is due, RepairOnce):
// batch by batch, until a batch comes back short or MaxBatchesPerTick is
// reached (the rest waits for the next pass).
// Every node runs the reaper; each UPDATE is bounded (Options.ReapBatch)
// and skips rows another node holds, so concurrent passes never collide or
// double-count an expiry.
func (s *Server) ReapOnce(ctx context.Context) (int, error) {
	if _, err := s.RepairOnce(ctx); err != nil {
		return 0, err
	}
	total := 0
	for range s.opts.MaxBatchesPerTick {
		rows, err := s.store.Reap(ctx, s.opts.ReapBatch, s.opts.MaxLeaseExpiries)
		if err != nil {
			return total, err
		}
		total += len(rows)
		s.reaped(rows)
		if len(rows) < int(s.opts.ReapBatch) {
			break
		}
	}
	return total, nil
}

// reaped reports reaped todos and wakes claimers of the queues that got
// work back.
func (s *Server) reaped(rows []store.Reaped) {
	back := map[queueKey]int{}
	for _, r := range rows {
		s.todos.emitEvent(TodoEvent{Kind: EventExpired, TodoID: r.ID, HumanID: r.HumanID, Queue: r.Queue, AgentID: r.AgentID, State: r.State})
		if r.State == "pending" {
			back[queueKey{human: r.HumanID, queue: r.Queue}]++
		}
	}
	for k, n := range back {
		s.todos.announce(k.human, k.queue, n)
	}
	if n := len(rows); n > 0 {
		s.log.Info("reaped expired leases", zap.Int("count", n))
	}
}
