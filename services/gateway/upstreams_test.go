package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/services/gateway"
)

// TestEachServiceOnItsOwnUpstream: a service given its own upstream is
// served there, while the rest go to New's upstream; the registry's routes
// reach the fake registry although the default upstream serves nothing.
func TestEachServiceOnItsOwnUpstream(t *testing.T) {
	t.Parallel()
	addr := fakeRegistryAddr(t)
	gw, err := gateway.New(t.Context(), "127.0.0.1:1", gateway.Options{
		Upstreams: map[string]gateway.Upstream{"registry": {Target: addr}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)

	resp := get(t, hs.URL+"/health")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the registry's route went to the registry's upstream")

	todo := get(t, hs.URL+"/api/todos/1")
	defer todo.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, todo.StatusCode, "the queue's route went to the default upstream, where nothing listens")
}

// TestNoUpstreamForAServiceIsRefused: New names the service it has no
// upstream for instead of dialing "".
func TestNoUpstreamForAServiceIsRefused(t *testing.T) {
	t.Parallel()
	_, err := gateway.New(t.Context(), "", gateway.Options{
		Upstreams: map[string]gateway.Upstream{"registry": {Target: "127.0.0.1:1"}},
	})
	require.ErrorContains(t, err, "no upstream for queue")
	require.ElementsMatch(t, []string{"registry", "queue", "ingest", "realtime", "admin"}, gateway.Services())
}

// TestNoLiveNodeIsNamed: when registry routing finds no node for a service
// (cluster.NoLiveNode, raised on the client side), the REST client gets
// 503 with Retry-After and which service is missing, not our generic text.
func TestNoLiveNodeIsNamed(t *testing.T) {
	t.Parallel()
	noNode := grpc.WithChainUnaryInterceptor(func(context.Context, string, any, any, *grpc.ClientConn, grpc.UnaryInvoker, ...grpc.CallOption) error {
		return status.Error(codes.Unavailable, "no live node runs queue")
	})
	gw, err := gateway.New(t.Context(), "127.0.0.1:1", gateway.Options{
		Upstreams: map[string]gateway.Upstream{"queue": {Target: "127.0.0.1:1", Dial: []grpc.DialOption{noNode}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)

	resp := get(t, hs.URL+"/api/todos/1")
	defer resp.Body.Close()
	requireRetryLater(t, resp, "no live node runs queue; retry shortly")
}

// fakeRegistryAddr serves the fake registry over gRPC and returns where.
func fakeRegistryAddr(t *testing.T) string {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	srv.Register(&registryv1.RegistryService_ServiceDesc, fakeRegistry{})
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv.Addr()
}
