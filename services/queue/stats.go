package queue

import (
	"context"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

// QueueStats returns a queue's depth by state, the age of its oldest
// runnable todo, whether it is paused, and, for an administrator, the todos table's vacuum
// health. An unknown queue is all zeros, not an error.
func (s *Server) QueueStats(ctx context.Context, req *queuev1.QueueStatsRequest) (*queuev1.QueueStatsResponse, error) {
	c, err := callerIn(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	st, err := s.store.Stats(ctx, c, req.GetQueue())
	if err != nil {
		return nil, err
	}
	ctl, err := s.store.Control(ctx, c, req.GetQueue())
	if err != nil {
		return nil, err
	}
	out := &queuev1.QueueStatsResponse{
		Paused: ctl.Paused, PausedAt: timestamp(ctl.PausedAt), Limits: limitsProto(ctl.Limits, ctl.Running, ctl.LimitsAt),
		Queue: req.GetQueue(), PendingReady: st.PendingReady, PendingScheduled: st.PendingScheduled,
		Running: st.Running, Completed: st.Completed, Dead: st.Dead, Cancelled: st.Cancelled,
		OldestPendingAgeSeconds: st.OldestPendingAgeSeconds,
	}
	// The table is every tenant's: its live and dead tuples and vacuum
	// times tell a tenant how much work the others have. They are the
	// operator's, like the cluster view.
	if p, _ := auth.FromContext(ctx); p.Administrator {
		v, err := s.store.VacuumHealth(ctx)
		if err != nil {
			return nil, err
		}
		out.Vacuum = &queuev1.VacuumHealth{
			LiveTuples: v.LiveTuples, DeadTuples: v.DeadTuples, OldestTransactionAgeSeconds: v.OldestTransactionAgeSeconds,
			LastAutovacuum: timestamp(v.LastAutovacuum), LastVacuum: timestamp(v.LastVacuum),
		}
	}
	return out, nil
}
