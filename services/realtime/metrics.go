package realtime

import (
	"context"
)

// SampleMetrics sets the gauges that need a look around: how many durable
// ids this node's reader is behind the table's newest (one indexed max(id)),
// and the mesh's live links. Before the reader has its cursor there is
// nothing to compare, and it reports 0 ids.
func (s *Server) SampleMetrics(ctx context.Context) (int64, error) {
	m := s.opts.Metrics.RealtimeSeries()
	m.MeshLinks(len(s.MeshPeers()))
	select {
	case <-s.ready:
	default:
		return 0, nil
	}
	newest, err := s.store.MaxID(ctx)
	if err != nil {
		return 0, err
	}
	lag := newest - s.hub.position()
	m.ReaderLag(lag)
	return lag, nil
}
