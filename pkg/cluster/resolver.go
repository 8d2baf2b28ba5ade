package cluster

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// ResolverScheme names targets the registry resolves: a client dialing
// "switchboard-registry:///queue" (Target("queue")) reaches the live nodes
// that run the queue, as node_registry lists them.
const ResolverScheme = "switchboard-registry"

// Target is the dial target of service through the registry.
func Target(service string) string { return ResolverScheme + ":///" + service }

// RoundRobin is the service config that spreads a registry target's calls
// over every live node (gRPC's default would pin one).
const RoundRobin = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// DialOptions are what a client of Target(service) dials with: this
// directory's resolver, round robin over the live nodes, and a guard that
// fails a call at once with UNAVAILABLE "no live node runs <service>" when
// there is none, instead of waiting for one (a channel with no address
// would block a call until its deadline, and a REST call may have none).
func (d *Directory) DialOptions(service string) []grpc.DialOption {
	guard := func(ctx context.Context) error {
		if len(d.Running(service)) == 0 {
			return status.Error(codes.Unavailable, NoLiveNode(service).Error())
		}
		return ctx.Err()
	}
	return []grpc.DialOption{
		grpc.WithResolvers(d.Resolver()),
		grpc.WithDefaultServiceConfig(RoundRobin),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
			invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
		) error {
			if err := guard(ctx); err != nil {
				return err
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
			streamer grpc.Streamer, opts ...grpc.CallOption,
		) (grpc.ClientStream, error) {
			if err := guard(ctx); err != nil {
				return nil, err
			}
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// Resolver is the gRPC resolver of ResolverScheme over this directory:
// pass it with grpc.WithResolvers (it is not registered globally, so each
// process's directory is the only one its clients use). Every address
// carries its host as the TLS server name, which is the name a node's
// certificate covers (CLUSTER_ENDPOINT's host), whatever the target says.
// With no live node it hands the channel no address (so it stops trying a
// swept one, and fails calls rather than queueing them).
func (d *Directory) Resolver() resolver.Builder { return directoryBuilder{d} }

type directoryBuilder struct{ d *Directory }

func (b directoryBuilder) Scheme() string { return ResolverScheme }

func (b directoryBuilder) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	r := &registryResolver{d: b.d, service: t.Endpoint(), cc: cc}
	r.cancel = b.d.OnChange(r.update)
	r.update()
	return r, nil
}

// registryResolver follows one service's nodes.
type registryResolver struct {
	d       *Directory
	service string
	cc      resolver.ClientConn
	cancel  func()

	mu sync.Mutex // serializes updates to cc
}

func (r *registryResolver) update() {
	nodes := r.d.Running(r.service)
	r.mu.Lock()
	defer r.mu.Unlock()
	addrs := make([]resolver.Address, 0, len(nodes))
	for _, n := range nodes {
		host, _, err := net.SplitHostPort(n.Endpoint)
		if err != nil {
			continue // registered by a node whose config validated it; cannot happen
		}
		addrs = append(addrs, resolver.Address{Addr: n.Endpoint, ServerName: host})
	}
	_ = r.cc.UpdateState(resolver.State{Addresses: addrs})
}

// ResolveNow implements resolver.Resolver: the directory already pushes
// every change, and re-reading the table on a connection failure would
// only repeat what the watch saw.
func (r *registryResolver) ResolveNow(resolver.ResolveNowOptions) {}

// Close implements resolver.Resolver.
func (r *registryResolver) Close() { r.cancel() }
