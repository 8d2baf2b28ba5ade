package metrics

import "github.com/prometheus/client_golang/prometheus"

// Realtime is the fan-out's series.
type Realtime struct {
	subscribers            prometheus.Gauge
	delivered, dropped     prometheus.Counter
	cutoffs, replayed      prometheus.Counter
	readerLag, meshLinksUp prometheus.Gauge
}

func newRealtime(reg prometheus.Registerer) *Realtime {
	const s = "realtime"
	return &Realtime{
		subscribers: gauge(reg, s, "subscribers", "Subscribe streams open on this node."),
		delivered:   counter(reg, s, "events_delivered_total", "Events sent to subscribers (live and replayed; one per subscriber)."),
		dropped:     counter(reg, s, "events_dropped_total", "Events not delivered live because the subscriber's buffer was full (it was cut off and resumes from the table)."),
		cutoffs:     counter(reg, s, "slow_subscriber_cutoffs_total", "Subscribers ended because they fell behind their buffer (RESOURCE_EXHAUSTED; they resume with after_id)."),
		replayed:    counter(reg, s, "replay_rows_total", "Durable events read from the table to replay to a (re)subscribing client."),
		readerLag:   gauge(reg, s, "reader_lag_events", "Durable events (ids) this node's reader is behind the table's newest id, sampled every 15 s."),
		meshLinksUp: gauge(reg, s, "mesh_links_up", "Mesh links to peer nodes currently connected (0 without the mesh transport)."),
	}
}

// Subscribed counts a stream opening (+1) or ending (-1).
func (r *Realtime) Subscribed(delta int) {
	if r != nil {
		r.subscribers.Add(float64(delta))
	}
}

// Delivered counts n events sent to one subscriber.
func (r *Realtime) Delivered(n int) {
	if r != nil && n > 0 {
		r.delivered.Add(float64(n))
	}
}

// Dropped counts one event not offered to a subscriber; cutoff is true for
// the one that ended it.
func (r *Realtime) Dropped(cutoff bool) {
	if r == nil {
		return
	}
	r.dropped.Inc()
	if cutoff {
		r.cutoffs.Inc()
	}
}

// Replayed counts n rows read for a replay.
func (r *Realtime) Replayed(n int) {
	if r != nil && n > 0 {
		r.replayed.Add(float64(n))
	}
}

// ReaderLag sets how many ids the reader is behind the newest.
func (r *Realtime) ReaderLag(ids int64) {
	if r != nil {
		r.readerLag.Set(float64(max(ids, 0)))
	}
}

// MeshLinks sets the number of connected mesh links.
func (r *Realtime) MeshLinks(n int) {
	if r != nil {
		r.meshLinksUp.Set(float64(n))
	}
}
