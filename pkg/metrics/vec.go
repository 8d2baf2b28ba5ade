package metrics

import "github.com/prometheus/client_golang/prometheus"

// Constructors that register as they build, so no series is forgotten.

func counterVec(reg prometheus.Registerer, subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	reg.MustRegister(v)
	return v
}

func counter(reg prometheus.Registerer, subsystem, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help})
	reg.MustRegister(c)
	return c
}

func gaugeVec(reg prometheus.Registerer, subsystem, name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	reg.MustRegister(v)
	return v
}

func gauge(reg prometheus.Registerer, subsystem, name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help})
	reg.MustRegister(g)
	return g
}

func histogramVec(reg prometheus.Registerer, subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets,
	}, labels)
	reg.MustRegister(v)
	return v
}
