package queue

import (
	"context"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// QueueStats returns a queue's depth by state, the age of its oldest
// runnable todo, and the todos table's vacuum health. An unknown queue is
// all zeros, not an error.
func (s *Server) QueueStats(ctx context.Context, req *queuev1.QueueStatsRequest) (*queuev1.QueueStatsResponse, error) {
	c, err := callerIn(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	st, err := s.store.Stats(ctx, c, req.GetQueue())
	if err != nil {
		return nil, err
	}
	return &queuev1.QueueStatsResponse{
		Queue: req.GetQueue(), PendingReady: st.PendingReady, PendingScheduled: st.PendingScheduled,
		Running: st.Running, Completed: st.Completed, Dead: st.Dead, Cancelled: st.Cancelled,
		OldestPendingAgeSeconds: st.OldestPendingAgeSeconds,
		Vacuum: &queuev1.VacuumHealth{
			LiveTuples: st.LiveTuples, DeadTuples: st.DeadTuples,
			OldestTransactionAgeSeconds: st.OldestTransactionAgeSeconds,
			LastAutovacuum:              timestamp(st.LastAutovacuum), LastVacuum: timestamp(st.LastVacuum),
		},
	}, nil
}
