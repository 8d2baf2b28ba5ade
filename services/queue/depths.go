package queue

import (
	"context"

	"github.com/switchboard/switchboard/pkg/metrics"
)

// maxDepthRows bounds one depth query: the biggest (tenant, queue, state)
// groups; the rest are left out of the gauges until they grow.
const maxDepthRows = 5000

// SampleDepths refreshes the depth and oldest-pending-age gauges with one
// query over the live todos, and returns the number of groups it read.
// Every queue node runs it (Options.DepthInterval): the figures are the
// table's, the same on every node, so dashboards aggregate them with max.
// Agreeing on one node would save a query per node per interval and cost a
// lock and a hand-over whenever that node goes; the query reads only the
// partial indexes of pending and running todos and the dead ones.
func (s *Server) SampleDepths(ctx context.Context) (int, error) {
	rows, err := s.store.Depths(ctx, maxDepthRows)
	if err != nil {
		return 0, err
	}
	out := make([]metrics.Depth, len(rows))
	for i, r := range rows {
		out[i] = metrics.Depth{Tenant: r.HumanID, Queue: r.Queue, State: r.State, Count: r.Todos, OldestPendingSeconds: r.OldestPendingSeconds}
	}
	s.opts.Metrics.QueueSeries().SetDepths(out)
	return len(rows), nil
}
