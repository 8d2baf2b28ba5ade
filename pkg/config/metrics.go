package config

import (
	"fmt"
	"net"
	"strconv"
)

// The metrics' variables.
const (
	// EnvMetricsAddr, when set, serves GET /metrics on a listener of its
	// own (host:port), unauthenticated there by convention, and not on the
	// HTTP listener. Unset: /metrics is on the HTTP listener, where it needs
	// an administrator's credential (the HTTP edge is public).
	EnvMetricsAddr = "SWITCHBOARD_METRICS_ADDR"
	// EnvMetricsTenantLabel adds a tenant label (the human id) to the queue
	// metrics. Off by default: every tenant multiplies the series.
	EnvMetricsTenantLabel = "SWITCHBOARD_METRICS_TENANT_LABEL"
)

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	// Addr is the separate listener's host:port; empty: the HTTP listener.
	Addr        string
	TenantLabel bool
}

func (p *parser) metrics(dst *Metrics) {
	p.str(EnvMetricsAddr, &dst.Addr)
	if b, ok := parse(p, EnvMetricsTenantLabel, strconv.ParseBool, func(v string, _ error) error {
		return fmt.Errorf("%s: %q is not true or false", EnvMetricsTenantLabel, v)
	}); ok {
		dst.TenantLabel = b
	}
}

func (m Metrics) validate(httpAddr string) error {
	if m.Addr == "" {
		return nil
	}
	if err := hostPort(EnvMetricsAddr, m.Addr); err != nil {
		return err
	}
	if _, port, _ := net.SplitHostPort(m.Addr); m.Addr == httpAddr && port != "0" {
		return fmt.Errorf("%s: %s is %s's address too; leave %s unset to serve /metrics there",
			EnvMetricsAddr, m.Addr, EnvHTTPAddr, EnvMetricsAddr)
	}
	return nil
}
