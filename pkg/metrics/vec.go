package metrics

import "github.com/prometheus/client_golang/prometheus"

// Constructors that register as they build, so no series is forgotten.

// opts names a series the same way for every kind: the namespace, then the
// service's subsystem.
func opts(subsystem, name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}
}

// register registers c and returns it, for the constructors below.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	reg.MustRegister(c)
	return c
}

func counterVec(reg prometheus.Registerer, subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts(opts(subsystem, name, help)), labels))
}

func counter(reg prometheus.Registerer, subsystem, name, help string) prometheus.Counter {
	return register(reg, prometheus.NewCounter(prometheus.CounterOpts(opts(subsystem, name, help))))
}

func gaugeVec(reg prometheus.Registerer, subsystem, name, help string, labels ...string) *prometheus.GaugeVec {
	return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts(subsystem, name, help)), labels))
}

func gauge(reg prometheus.Registerer, subsystem, name, help string) prometheus.Gauge {
	return register(reg, prometheus.NewGauge(prometheus.GaugeOpts(opts(subsystem, name, help))))
}

func histogramVec(reg prometheus.Registerer, subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets,
	}, labels))
}
