package metrics

import "github.com/prometheus/client_golang/prometheus"

// Cluster is membership's series, as this node sees the cluster.
type Cluster struct {
	size              prometheus.Gauge
	sweeps, evictions prometheus.Counter
	reregistrations   prometheus.Counter
}

func newCluster(reg prometheus.Registerer) *Cluster {
	const s = "cluster"
	return &Cluster{
		size:            gauge(reg, s, "nodes", "Nodes registered in node_registry, as this node last read it (every 15 s)."),
		sweeps:          counter(reg, s, "sweeps_total", "Sweeps of stale peers this node ran (one per heartbeat that was on time)."),
		evictions:       counter(reg, s, "evictions_total", "Peers this node swept from node_registry because their heartbeat went stale."),
		reregistrations: counter(reg, s, "reregistrations_total", "Times this node re-registered after node_registry was emptied (a Postgres restart or failover)."),
	}
}

// Size sets the number of registered nodes.
func (c *Cluster) Size(n int) {
	if c != nil {
		c.size.Set(float64(n))
	}
}

// Swept counts one sweep that evicted n peers.
func (c *Cluster) Swept(n int) {
	if c == nil {
		return
	}
	c.sweeps.Inc()
	c.evictions.Add(float64(n))
}

// Reregistered counts one re-registration.
func (c *Cluster) Reregistered() {
	if c != nil {
		c.reregistrations.Inc()
	}
}
