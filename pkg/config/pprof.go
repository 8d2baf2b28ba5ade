package config

import (
	"fmt"
	"net"
)

// EnvPprofAddr names the profiler's listener: when set (host:port), Go's
// profiler (net/http/pprof under /debug/pprof/) is served there,
// unauthenticated, for measuring a node (deploy/local/bench-ingest.sh),
// never on a public address. Unset (the default): no profiler anywhere.
const EnvPprofAddr = "SWITCHBOARD_PPROF_ADDR"

// Pprof configures the opt-in profiler listener.
type Pprof struct {
	// Addr is its host:port; empty: off.
	Addr string
}

func (p Pprof) validate(httpAddr, metricsAddr string) error {
	if p.Addr == "" {
		return nil
	}
	if err := hostPort(EnvPprofAddr, p.Addr); err != nil {
		return err
	}
	if _, port, _ := net.SplitHostPort(p.Addr); port != "0" && (p.Addr == httpAddr || p.Addr == metricsAddr) {
		return fmt.Errorf("%s: %s is another listener's address; give the profiler a port of its own", EnvPprofAddr, p.Addr)
	}
	return nil
}
