package config

import (
	"fmt"
	"strconv"
)

// The MCP edge's per-tenant limits (services/mcp, docs/access.md). Its
// other limits are constants there: a credential's own caps are sized for
// one MCP client, and a tenant that needs more mints a credential per
// agent; past a tenant's caps only the operator can help, so these two are
// settings.
const (
	// EnvMCPMaxCallsPerTenant caps the /mcp requests one tenant's
	// credentials have in progress on one node at once (more are answered
	// 429 before their body is read).
	EnvMCPMaxCallsPerTenant = "SWITCHBOARD_MCP_MAX_CALLS_PER_TENANT"
	// EnvMCPMaxWaitsPerTenant caps the MCP calls of one tenant that wait on
	// one node at once (claim_todo with wait_seconds, subscriptions/listen);
	// more are refused at once, never queued.
	EnvMCPMaxWaitsPerTenant = "SWITCHBOARD_MCP_MAX_WAITS_PER_TENANT"
)

// The defaults: 16 agents of one tenant claiming with a wait at the same
// moment on one node, with as many requests again beside them for their
// heartbeats and acks. A request in progress costs its node up to some
// tens of megabytes at worst (services/mcp bounds its body, the bytes of
// a tenant's bodies together, and its answer), so a tenant's share of a
// node stays in the hundreds of megabytes whatever it sends.
const (
	DefaultMCPMaxCallsPerTenant = 32
	DefaultMCPMaxWaitsPerTenant = 16
)

// maxMCPLimit keeps a typo (an extra zero or three) from lifting a cap in
// practice.
const maxMCPLimit = 100_000

// MCP configures the MCP edge's per-tenant limits, per node.
type MCP struct {
	MaxCallsPerTenant int
	MaxWaitsPerTenant int
}

func defaultMCP() MCP {
	return MCP{MaxCallsPerTenant: DefaultMCPMaxCallsPerTenant, MaxWaitsPerTenant: DefaultMCPMaxWaitsPerTenant}
}

func (p *parser) mcp(dst *MCP) {
	p.count(EnvMCPMaxCallsPerTenant, &dst.MaxCallsPerTenant)
	p.count(EnvMCPMaxWaitsPerTenant, &dst.MaxWaitsPerTenant)
}

// count parses a whole number.
func (p *parser) count(name string, dst *int) {
	if n, ok := parse(p, name, strconv.Atoi, func(v string, _ error) error {
		return fmt.Errorf("%s: %q is not a whole number", name, v)
	}); ok {
		*dst = n
	}
}

func (m MCP) validate() error {
	for _, l := range []struct {
		name string
		n    int
	}{{EnvMCPMaxCallsPerTenant, m.MaxCallsPerTenant}, {EnvMCPMaxWaitsPerTenant, m.MaxWaitsPerTenant}} {
		if l.n < 1 || l.n > maxMCPLimit {
			return fmt.Errorf("%s: must be from 1 to %d, got %d", l.name, maxMCPLimit, l.n)
		}
	}
	if m.MaxWaitsPerTenant > m.MaxCallsPerTenant {
		return fmt.Errorf("%s: must not exceed %s (%d): every waiting call is also a request in progress, got %d",
			EnvMCPMaxWaitsPerTenant, EnvMCPMaxCallsPerTenant, m.MaxCallsPerTenant, m.MaxWaitsPerTenant)
	}
	return nil
}
