// Package metrics is a node's Prometheus instrumentation: one registry per
// node (never the global default, so several in-process nodes in a test do
// not collide), the Go and process collectors, the /metrics handler, and the
// typed, pre-resolved series the services record into (queue.go, ingest.go,
// realtime.go, cluster.go, retention.go). Names follow switchboard_<subsystem>_<name>_<unit>;
// labels are bounded (queue names are capped per node, tenants are a label
// only when the operator turns it on). docs/observability.md lists them all.
//
// Every recording method is safe on a nil receiver and then does nothing,
// so a service built without metrics (unit tests) needs no stand-in.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every Switchboard metric.
const namespace = "switchboard"

// DefaultMaxQueues is how many distinct queue label values (tenant and
// queue, when tenants are a label) one node exports before the rest are
// counted under OtherQueue.
const DefaultMaxQueues = 200

// OtherQueue is the queue label of every queue past the cap.
const OtherQueue = "other"

// Scrapes are cheap but not free: at most maxInFlight run at once (more are
// answered 503) and each gathers for at most scrapeTimeout.
const (
	maxInFlight   = 4
	scrapeTimeout = 10 * time.Second
)

// Options shape a Registry.
type Options struct {
	// TenantLabel adds a tenant label (the human id) to the queue series.
	// Off by default: the number of tenants is unbounded.
	TenantLabel bool
	// MaxQueues caps the distinct queue label values; default
	// DefaultMaxQueues.
	MaxQueues int
}

// Registry is one node's metrics.
type Registry struct {
	reg *prometheus.Registry

	Queue       *Queue
	Ingest      *Ingest
	Realtime    *Realtime
	Cluster     *Cluster
	GroupCommit *GroupCommit
	HTTP        *HTTP
	Retention   *Retention
}

// New returns a node's registry with the Go and process collectors and every
// Switchboard series registered.
func New(o Options) *Registry {
	if o.MaxQueues <= 0 {
		o.MaxQueues = DefaultMaxQueues
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Registry{
		reg:         reg,
		Queue:       newQueue(reg, o),
		Ingest:      newIngest(reg),
		Realtime:    newRealtime(reg),
		Cluster:     newCluster(reg),
		GroupCommit: newGroupCommit(reg),
		HTTP:        newHTTP(reg),
		Retention:   newRetention(reg),
	}
}

// Registerer is where other collectors (gRPC server metrics, pool stats,
// gauges read at scrape time) register.
func (r *Registry) Registerer() prometheus.Registerer {
	if r == nil {
		return nil
	}
	return r.reg
}

// Gatherer reads the registry (tests).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the exposition format of this registry, with bounded
// concurrency and time.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: maxInFlight,
		Timeout:             scrapeTimeout,
		// A collector that fails leaves its series out instead of failing
		// the whole scrape.
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// GaugeFunc registers a gauge read at scrape time (f must be cheap and must
// not block: no database query).
func (r *Registry) GaugeFunc(subsystem, name, help string, f func() float64) {
	if r == nil {
		return
	}
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
	}, f))
}

// QueueSeries is r.Queue, nil when r is nil.
func (r *Registry) QueueSeries() *Queue {
	if r == nil {
		return nil
	}
	return r.Queue
}

// GroupCommitObserver is r.GroupCommit.Observer(name), nil when r is nil.
func (r *Registry) GroupCommitObserver(name string) func(int) {
	if r == nil {
		return nil
	}
	return r.GroupCommit.Observer(name)
}

// IngestSeries is r.Ingest, nil when r is nil.
func (r *Registry) IngestSeries() *Ingest {
	if r == nil {
		return nil
	}
	return r.Ingest
}

// RealtimeSeries is r.Realtime, nil when r is nil.
func (r *Registry) RealtimeSeries() *Realtime {
	if r == nil {
		return nil
	}
	return r.Realtime
}

// RetentionSeries is r.Retention, nil when r is nil.
func (r *Registry) RetentionSeries() *Retention {
	if r == nil {
		return nil
	}
	return r.Retention
}

// ClusterSeries is r.Cluster, nil when r is nil.
func (r *Registry) ClusterSeries() *Cluster {
	if r == nil {
		return nil
	}
	return r.Cluster
}
