package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/services/gateway"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeRegistry answers with fixed data so the tests see exactly what the
// gateway does to it: JSON shape, streaming and status mapping.
type fakeRegistry struct {
	registryv1.UnimplementedRegistryServiceServer
}

func (fakeRegistry) GetHealth(context.Context, *registryv1.GetHealthRequest) (*registryv1.GetHealthResponse, error) {
	return &registryv1.GetHealthResponse{
		Status: "healthy", NodeId: "n1",
		Cluster: &registryv1.ClusterHealth{Size: 1, HeartbeatAgeMs: 0},
	}, nil
}

func (fakeRegistry) ListNodes(context.Context, *registryv1.ListNodesRequest) (*registryv1.ListNodesResponse, error) {
	return nil, apierr.NotFound("no cluster here")
}

func (fakeRegistry) WatchNodes(_ *registryv1.WatchNodesRequest, stream grpc.ServerStreamingServer[registryv1.WatchNodesResponse]) error {
	for _, id := range []string{"a", "b", "c"} {
		if err := stream.Send(&registryv1.WatchNodesResponse{
			Type: registryv1.NodeEventType_NODE_EVENT_TYPE_JOINED,
			Node: &registryv1.Node{NodeId: id, Seq: 7},
		}); err != nil {
			return err
		}
	}
	return nil
}

func setup(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	srv.Register(&registryv1.RegistryService_ServiceDesc, fakeRegistry{})
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	gw, err := gateway.New(t.Context(), srv.Addr(), gateway.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	return hs
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func TestUnaryUsesProtoNamesAndEmitsEveryField(t *testing.T) {
	t.Parallel()
	resp := get(t, setup(t).URL+"/health")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "n1", body["node_id"], "snake_case proto names")
	cluster, ok := body["cluster"].(map[string]any)
	require.True(t, ok)
	require.InDelta(t, 0, cluster["heartbeat_age_ms"], 0, "zero values are present, as numbers")
	require.Equal(t, []any{}, cluster["peers"], "empty lists are present")
}

// Server streams must cross the gateway as newline-delimited JSON: this only
// works because the gateway dials the gRPC endpoint instead of calling the
// service in-process.
func TestServerStreamArrivesAsNDJSON(t *testing.T) {
	t.Parallel()
	resp := get(t, setup(t).URL+"/api/admin/cluster/watch")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ids []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Result struct {
				Type string `json:"type"`
				Node struct {
					NodeID string `json:"node_id"`
					Seq    int    `json:"seq"`
				} `json:"node"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		require.Equal(t, "NODE_EVENT_TYPE_JOINED", line.Result.Type)
		require.Equal(t, 7, line.Result.Node.Seq, "int32 seq is a JSON number")
		ids = append(ids, line.Result.Node.NodeID)
	}
	require.NoError(t, sc.Err())
	require.Equal(t, []string{"a", "b", "c"}, ids)
}

func TestErrorsMapToHTTPStatus(t *testing.T) {
	t.Parallel()
	hs := setup(t)
	resp := get(t, hs.URL+"/api/admin/cluster")
	defer resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, 5, body.Code)
	require.Equal(t, "no cluster here", body.Message)

	unregistered := get(t, hs.URL+"/api/queues/default/stats")
	defer unregistered.Body.Close()
	require.Equal(t, http.StatusNotImplemented, unregistered.StatusCode,
		"a service that is not registered upstream answers 501")
	require.NoError(t, json.NewDecoder(unregistered.Body).Decode(&body))
	require.Equal(t, "the upstream does not serve this method", body.Message, "not gRPC's own text")
}

// TestUnreachableUpstreamIsRetryableInOurWords: a status the gRPC client
// makes up itself (nothing listens upstream) reaches a REST client as 503
// with Retry-After and our words, never the transport's text.
func TestUnreachableUpstreamIsRetryableInOurWords(t *testing.T) {
	t.Parallel()
	lis, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now
	gw, err := gateway.New(t.Context(), addr, gateway.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)

	resp := get(t, hs.URL+"/health")
	defer resp.Body.Close()
	requireRetryLater(t, resp, "the upstream is unreachable; retry shortly")
}

// requireRetryLater checks a 503 that tells the client to retry: a
// Retry-After header and our words (message), never a library's.
func requireRetryLater(t *testing.T, resp *http.Response, message string) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	var body struct {
		Message string `json:"message"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, message, body.Message)
}
