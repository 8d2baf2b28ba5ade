package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
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
