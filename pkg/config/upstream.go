package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Where a node's gateway finds the services it fronts. By default it asks
// the registry (node_registry) for the live nodes running each service and
// uses its own gRPC listener for the services it runs itself; these
// variables pin a service to a fixed address instead (docs/routing.md).
const (
	// EnvUpstreamPrefix + a service's name in capitals
	// (SWITCHBOARD_UPSTREAM_QUEUE=host:port) pins that service's upstream.
	EnvUpstreamPrefix = "SWITCHBOARD_UPSTREAM_"
	// EnvHTTPEndpoint is the HTTP address peers reach this node by, which it
	// publishes in the registry (a gateway forwards webhooks there when its
	// own node runs no ingest). Default: CLUSTER_ENDPOINT's host with the
	// HTTP listener's port.
	EnvHTTPEndpoint = "CLUSTER_HTTP_ENDPOINT"
)

// UpstreamServices are the services the gateway fronts, each of which may
// be pinned with SWITCHBOARD_UPSTREAM_<NAME>.
var UpstreamServices = []string{"admin", "ingest", "queue", "realtime", "registry"}

// EnvUpstream is the variable that pins service's upstream.
func EnvUpstream(service string) string { return EnvUpstreamPrefix + strings.ToUpper(service) }

// upstreams reads SWITCHBOARD_UPSTREAM_<SERVICE> for every service.
func (p *parser) upstreams(dst *Gateway) {
	for _, s := range UpstreamServices {
		if v, ok := p.get(EnvUpstream(s)); ok {
			if dst.Upstreams == nil {
				dst.Upstreams = map[string]string{}
			}
			dst.Upstreams[s] = v
		}
	}
}

// UpstreamOf is where the gateway sends service's calls when it is pinned:
// SWITCHBOARD_UPSTREAM_<SERVICE>, else SWITCHBOARD_GATEWAY_UPSTREAM (every
// service at one address, the older setting); "" means route by the
// registry (or the node's own listener when it runs the service).
func (g Gateway) UpstreamOf(service string) string {
	if v := g.Upstreams[service]; v != "" {
		return v
	}
	return g.Upstream
}

func (g Gateway) validate() error {
	if g.Upstream != "" {
		if err := hostPort(EnvGatewayUpstream, g.Upstream); err != nil {
			return err
		}
	}
	for _, s := range UpstreamServices {
		if v, ok := g.Upstreams[s]; ok {
			if err := dialAddr(EnvUpstream(s), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialAddr is a host:port to dial: unlike a listen address, the host must
// be named and the port must not be 0.
func dialAddr(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("%s: %q is not host:port", name, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s: %q has an invalid port", name, addr)
	}
	return nil
}

// validateHTTPEndpoint checks CLUSTER_HTTP_ENDPOINT when set.
func (c Cluster) validateHTTPEndpoint() error {
	if c.HTTPEndpoint == "" {
		return nil
	}
	return dialAddr(EnvHTTPEndpoint, c.HTTPEndpoint)
}
