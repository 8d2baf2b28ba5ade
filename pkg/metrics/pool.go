package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector reads pgxpool.Stat() of each named pool at scrape time (a
// few atomic loads under the pool's lock, no query).
type poolCollector struct {
	pools map[string]*pgxpool.Pool

	acquired, idle, total, max *prometheus.Desc
	acquires, waits, waitTime  *prometheus.Desc
	canceled, constructing     *prometheus.Desc
}

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, "pgxpool", name), help, []string{"pool"}, nil)
}

// RegisterPools exports the stats of pools (by name: main, hot, …).
func (r *Registry) RegisterPools(pools map[string]*pgxpool.Pool) {
	if r == nil {
		return
	}
	r.reg.MustRegister(&poolCollector{
		pools:        pools,
		acquired:     poolDesc("acquired_connections", "Connections currently checked out of the pool."),
		idle:         poolDesc("idle_connections", "Idle connections in the pool."),
		total:        poolDesc("connections", "Connections open in the pool (acquired, idle and being opened)."),
		max:          poolDesc("max_connections", "The pool's connection cap."),
		acquires:     poolDesc("acquires_total", "Connections acquired from the pool."),
		waits:        poolDesc("empty_acquires_total", "Acquires that had to wait because no connection was idle."),
		waitTime:     poolDesc("acquire_wait_seconds_total", "Total time acquires waited for a connection."),
		canceled:     poolDesc("canceled_acquires_total", "Acquires canceled by their context while waiting."),
		constructing: poolDesc("constructing_connections", "Connections being opened."),
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.waits, c.waitTime, c.canceled, c.constructing} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, p := range c.pools {
		s := p.Stat()
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
		n := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
		}
		g(c.acquired, float64(s.AcquiredConns()))
		g(c.idle, float64(s.IdleConns()))
		g(c.total, float64(s.TotalConns()))
		g(c.max, float64(s.MaxConns()))
		g(c.constructing, float64(s.ConstructingConns()))
		n(c.acquires, float64(s.AcquireCount()))
		n(c.waits, float64(s.EmptyAcquireCount()))
		n(c.waitTime, s.AcquireDuration().Seconds())
		n(c.canceled, float64(s.CanceledAcquireCount()))
	}
}
