package node

import (
	"net"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/pkg/cluster"
	sblog "github.com/switchboard/switchboard/pkg/logging"
	"github.com/switchboard/switchboard/pkg/tlsconfig"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/ingest"
)

// How the gateway reaches each service (docs/routing.md): a pinned address
// (SWITCHBOARD_UPSTREAM_<SERVICE>, or SWITCHBOARD_GATEWAY_UPSTREAM for all),
// else this node's own gRPC listener when it runs the service, else the
// live nodes the registry lists, round robin. Webhooks reach an ingest node
// the same way when this node runs none.

const (
	// hookForwardMaxBody is the largest webhook body the gateway forwards:
	// the largest cap an endpoint may have (services/ingest/sources), whose
	// own cap the ingest node then applies.
	hookForwardMaxBody = 25 << 20
	// hookForwardTimeout bounds the ingest node's answer once the body is
	// sent: it answers after its commit, which its store timeout bounds.
	hookForwardTimeout = 30 * time.Second
)

// gatewayUpstreams is where each of the gateway's services goes.
func (a *assembly) gatewayUpstreams() map[string]gateway.Upstream {
	out := map[string]gateway.Upstream{}
	for _, s := range gateway.Services() {
		switch pinned := a.cfg.Gateway.UpstreamOf(s); {
		case pinned != "":
			out[s] = gateway.Upstream{Target: pinned, Dial: a.tls.dial("")}
		case slices.Contains(a.services, s):
			out[s] = gateway.Upstream{Target: a.grpc.Addr(), Dial: a.tls.dial(a.upstreamServerName())}
		default:
			out[s] = gateway.Upstream{Target: cluster.Target(s), Dial: append(a.tls.dial(""), a.directoryOnce().DialOptions(s)...)}
		}
	}
	return out
}

// directoryOnce is the node's one view of node_registry for routing,
// created (and added to what the node runs) on first need.
func (a *assembly) directoryOnce() *cluster.Directory {
	if a.directory == nil {
		a.directory = cluster.NewDirectory(a.log, a.pool, min(a.cfg.Cluster.HeartbeatInterval, time.Second))
		a.serve(a.directory)
	}
	return a.directory
}

// forwardHooks serves POST and GET /hooks/{slug} on a node that runs no ingest by
// passing each to a live ingest node, round robin.
func (a *assembly) forwardHooks() {
	dir := a.directoryOnce()
	scheme := "http"
	transport := gateway.DefaultHookTransport()
	if a.tls.pair != nil {
		scheme = "https"
		transport.TLSClientConfig = tlsconfig.Client(a.tls.roots, a.tls.pair, "")
		transport.ForceAttemptHTTP2 = true
	}
	var next atomic.Uint64
	pick := func() (*url.URL, bool) {
		var addrs []string
		for _, n := range dir.Running(ingest.Name) {
			if ep := n.HTTPEndpoint(); ep != "" {
				addrs = append(addrs, ep)
			}
		}
		if len(addrs) == 0 {
			return nil, false
		}
		return &url.URL{Scheme: scheme, Host: addrs[next.Add(1)%uint64(len(addrs))]}, true
	}
	forward := gateway.ForwardHooks(gateway.HookForwarding{
		Pick: pick, Transport: transport, MaxBodyBytes: hookForwardMaxBody,
		ResponseTimeout: hookForwardTimeout, Log: a.log.With(sblog.Component("hook-forward")),
	})
	a.mux.Handle(ingest.HookPattern, forward)
	a.mux.Handle(ingest.HookGetPattern, forward) // providers' handshakes, answered by the ingest node
}

// httpEndpoint is the HTTP address this node publishes in the registry:
// CLUSTER_HTTP_ENDPOINT, else CLUSTER_ENDPOINT's host (the name peers reach
// this node by) with the HTTP listener's bound port.
func (a *assembly) httpEndpoint() string {
	if a.cfg.Cluster.HTTPEndpoint != "" {
		return a.cfg.Cluster.HTTPEndpoint
	}
	if a.http == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.cfg.Cluster.Endpoint)
	if err != nil {
		return ""
	}
	_, port, err := net.SplitHostPort(a.http.Addr())
	if err != nil {
		return ""
	}
	return net.JoinHostPort(host, port)
}
