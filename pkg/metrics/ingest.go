package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxAdapters caps the adapter label values one node exports.
const maxAdapters = 100

// Ingest is the webhook edge's and the pull adapters' series.
type Ingest struct {
	deliveries *prometheus.CounterVec
	byKey      sync.Map // deliveryKey → prometheus.Counter
	lag        *capped[string, prometheus.Gauge]
}

type deliveryKey struct{ scheme, outcome string }

// The delivery outcomes besides an HTTP status code.
const (
	OutcomeAccepted  = "accepted"
	OutcomeDuplicate = "duplicate"
	// OutcomeHandshake: a provider's URL check answered (never stored).
	OutcomeHandshake = "handshake"
)

func newIngest(reg prometheus.Registerer) *Ingest {
	lag := gaugeVec(reg, "ingest", "adapter_lag_seconds",
		"Age of the newest message a pull adapter stored in its last batch (how far behind its source it runs), by adapter id (at most 100 per node, then other).", "adapter")
	return &Ingest{
		deliveries: counterVec(reg, "ingest", "deliveries_total",
			"Webhook deliveries answered, by the endpoint's signature scheme (unknown before the endpoint is found) and outcome: accepted, duplicate, handshake (a provider's URL check answered, not stored), or the HTTP status of a refusal (400, 401, 403, 404, 405, 408, 413, 429, 503).",
			"scheme", "outcome"),
		lag: newCapped(maxAdapters, func(id string) prometheus.Gauge { return lag.WithLabelValues(id) },
			func() prometheus.Gauge { return lag.WithLabelValues(OtherQueue) }),
	}
}

// Delivery counts one answered webhook. Schemes and outcomes are small fixed
// sets, so the series stay bounded.
func (i *Ingest) Delivery(scheme, outcome string) {
	if i == nil {
		return
	}
	k := deliveryKey{scheme, outcome}
	c, ok := i.byKey.Load(k)
	if !ok {
		c, _ = i.byKey.LoadOrStore(k, i.deliveries.WithLabelValues(scheme, outcome))
	}
	c.(prometheus.Counter).Inc()
}

// AdapterLag sets how far adapter runs behind its source, in seconds.
func (i *Ingest) AdapterLag(adapter string, seconds float64) {
	if i == nil {
		return
	}
	i.lag.get(adapter).Set(max(seconds, 0))
}

// GroupCommit is the batch sizes of the group-commit batchers (ingest's
// webhooks, the queue's merged acks, realtime's durable publishes), by
// batcher name.
type GroupCommit struct {
	size *prometheus.HistogramVec
}

func newGroupCommit(reg prometheus.Registerer) *GroupCommit {
	return &GroupCommit{size: histogramVec(reg, "groupcommit", "batch_size",
		"Items per group-commit statement, by batcher.", prometheus.ExponentialBuckets(1, 2, 11), "batcher")}
}

// Observer returns the batch-size histogram of the batcher named name, as a
// function for groupcommit.Options.OnFlush; nil when g is nil.
func (g *GroupCommit) Observer(name string) func(size int) {
	if g == nil {
		return nil
	}
	o := g.size.WithLabelValues(name)
	return func(size int) { o.Observe(float64(size)) }
}
