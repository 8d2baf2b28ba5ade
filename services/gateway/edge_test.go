package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	registryv1 "github.com/switchboard/switchboard/gen/switchboard/registry/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/services/gateway"
)

// pathVariable is a variable in a google.api.http path template.
var pathVariable = regexp.MustCompile(`\{[^}]+\}`)

// route is one google.api.http binding: a request that reaches rpc.
type route struct{ method, path, rpc string }

// allRoutes lists a concrete request for every binding of every service the
// gateway serves, read from the contracts.
func allRoutes(t *testing.T) []route {
	t.Helper()
	var out []route
	for _, f := range []protoreflect.FileDescriptor{
		registryv1.File_switchboard_registry_v1_registry_service_proto,
		queuev1.File_switchboard_queue_v1_queue_service_proto,
		ingestv1.File_switchboard_ingest_v1_ingest_service_proto,
		realtimev1.File_switchboard_realtime_v1_realtime_service_proto,
		adminv1.File_switchboard_admin_v1_admin_service_proto,
	} {
		for i := range f.Services().Len() {
			sd := f.Services().Get(i)
			for j := range sd.Methods().Len() {
				m := sd.Methods().Get(j)
				rule, ok := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
				require.True(t, ok)
				for _, r := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
					method, template := http.MethodGet, r.GetGet()
					for verb, p := range map[string]string{
						http.MethodPost: r.GetPost(), http.MethodPut: r.GetPut(),
						http.MethodPatch: r.GetPatch(), http.MethodDelete: r.GetDelete(),
					} {
						if p != "" {
							method, template = verb, p
						}
					}
					if template == "" {
						continue
					}
					out = append(out, route{method, pathVariable.ReplaceAllString(template, "x"),
						"/" + string(sd.FullName()) + "/" + string(m.Name())})
				}
			}
		}
	}
	require.Greater(t, len(out), 40, "every service's routes")
	return out
}

// The edge checks the caller of each route as the RPC behind it (open ones
// pass; the rest need a credential), before the body: so every route must
// name its RPC, or an open one would be refused and a closed one checked as
// the wrong method.
func TestEveryRouteIsCheckedAsItsRPC(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen string
	)
	gw, err := gateway.New(t.Context(), "127.0.0.1:1", gateway.Options{
		Authenticate: func(_ context.Context, fullMethod string, _ []string) error {
			mu.Lock()
			defer mu.Unlock()
			seen = fullMethod
			return status.Error(codes.Unauthenticated, "missing or invalid credentials")
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	for _, r := range allRoutes(t) {
		req, err := http.NewRequestWithContext(t.Context(), r.method, hs.URL+r.path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s", r.method, r.path)
		mu.Lock()
		require.Equal(t, r.rpc, seen, "%s %s", r.method, r.path)
		mu.Unlock()
	}
}

// hugeAnswers answers ListNodes with more than a gRPC client accepts.
type hugeAnswers struct {
	registryv1.UnimplementedRegistryServiceServer
}

func (hugeAnswers) ListNodes(context.Context, *registryv1.ListNodesRequest) (*registryv1.ListNodesResponse, error) {
	return &registryv1.ListNodesResponse{Data: []*registryv1.Node{{NodeId: strings.Repeat("n", 5<<20)}}}, nil
}

// serveGateway runs a gateway with o in front of a real gRPC server with
// hugeAnswers and a queue service that implements nothing.
func serveGateway(t *testing.T, o gateway.Options) string {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	srv.Register(&registryv1.RegistryService_ServiceDesc, hugeAnswers{})
	srv.Register(&queuev1.QueueService_ServiceDesc, queuev1.UnimplementedQueueServiceServer{})
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	gw, err := gateway.New(t.Context(), srv.Addr(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

// gRPC's own size limits surface as 413 (the request) or 502 (the answer),
// in our words: whether the gateway checks the request's size itself or
// the upstream refuses it.
func TestSizeLimitsCarryNoLibraryText(t *testing.T) {
	t.Parallel()
	// 800 kB of JSON, 4.4 MB as protobuf (11 bytes per google.protobuf.Value).
	numbers := `{"payload":{"x":[` + strings.Repeat("0,", 400_000) + `0]}}`
	for name, tc := range map[string]struct {
		opts         gateway.Options
		method, path string
		body         string
		status       int
		message      string
	}{
		"request checked here": {opts: gateway.Options{MaxRequestBytes: grpcserver.MaxRecvMsgSize},
			method: http.MethodPost, path: "/api/queues/v/todos", body: numbers, status: http.StatusRequestEntityTooLarge,
			message: "the request is larger than 4194304 bytes as protobuf; send less"},
		"request refused upstream": {method: http.MethodPost, path: "/api/queues/v/todos", body: numbers,
			status: http.StatusRequestEntityTooLarge, message: "the request is larger than the node accepts"},
		"answer too large": {opts: gateway.Options{MaxRequestBytes: grpcserver.MaxRecvMsgSize},
			method: http.MethodGet, path: "/api/admin/cluster", status: http.StatusBadGateway,
			message: "the answer is too large to relay; ask for less (a smaller page_size)"},
	} {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req, err := http.NewRequestWithContext(t.Context(), tc.method, serveGateway(t, tc.opts)+tc.path, body)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, raw)
		var got struct {
			Message string `json:"message"`
		}
		require.NoError(t, json.Unmarshal(raw, &got), name)
		require.Equal(t, tc.message, got.Message, name)
		require.NotContains(t, string(raw), "grpc:", name)
	}
}
