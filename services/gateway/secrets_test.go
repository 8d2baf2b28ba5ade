package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/grpcserver"
	"github.com/switchboard/switchboard/services/gateway"
)

// recordingAdmin keeps every request the gateway hands it (after the
// server's protovalidate rules passed) and answers with an empty response.
type recordingAdmin struct {
	adminv1.UnimplementedAdminServiceServer
	mu   sync.Mutex
	seen []proto.Message
}

func (a *recordingAdmin) record(m proto.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, m)
}

func (a *recordingAdmin) requests() []proto.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]proto.Message(nil), a.seen...)
}

func (a *recordingAdmin) CreateEndpoint(_ context.Context, r *adminv1.CreateEndpointRequest) (*adminv1.CreateEndpointResponse, error) {
	a.record(r)
	return &adminv1.CreateEndpointResponse{}, nil
}

func (a *recordingAdmin) UpdateEndpoint(_ context.Context, r *adminv1.UpdateEndpointRequest) (*adminv1.UpdateEndpointResponse, error) {
	a.record(r)
	return &adminv1.UpdateEndpointResponse{}, nil
}

func (a *recordingAdmin) AddEndpointSecret(_ context.Context, r *adminv1.AddEndpointSecretRequest) (*adminv1.AddEndpointSecretResponse, error) {
	a.record(r)
	return &adminv1.AddEndpointSecretResponse{}, nil
}

// serveAdmin runs a gateway in front of a real gRPC server (with its
// validation) whose AdminService is a recordingAdmin.
func serveAdmin(t *testing.T) (string, *recordingAdmin) {
	t.Helper()
	srv, err := grpcserver.New(t.Context(), zap.NewNop(), grpcserver.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	rec := &recordingAdmin{}
	srv.Register(&adminv1.AdminService_ServiceDesc, rec)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	gw, err := gateway.New(t.Context(), srv.Addr(), gateway.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, rec
}

// send makes one request and returns its status and JSON error message.
func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var got struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	require.NoError(t, json.Unmarshal(raw, &got), "%s", raw)
	if resp.StatusCode != http.StatusOK {
		require.Equal(t, 3, got.Code, "INVALID_ARGUMENT in the gateway's error shape: %s", raw)
	}
	return resp.StatusCode, got.Message
}

const endpointID = "0b6c5bd0-53a4-4b0e-9d4e-1f1c3b7f7a01"

// A query parameter that would set a secret is refused on every route,
// whatever its spelling, with a message saying where the secret belongs and
// without its value; the upstream never sees the request.
func TestSecretInQueryIsRefused(t *testing.T) {
	t.Parallel()
	url, rec := serveAdmin(t)
	const want = `"secret" belongs in the JSON request body, not the URL (query strings are logged)`
	for _, r := range allRoutes(t) {
		code, msg := send(t, r.method, url+r.path+"?secret=whsec_c2VjcmV0LXZhbHVl", "{}")
		require.Equal(t, http.StatusBadRequest, code, "%s %s", r.method, r.path)
		require.Equal(t, want, msg, "%s %s", r.method, r.path)
	}
	for query, name := range map[string]string{
		"endpoint.secret=abcdefghijklmnop":         "secret",
		"queue=q&ENDPOINT.Secret=abcdefghijklmnop": "secret",
		"s%65cret=abcdefghijklmnop":                "secret",
		"secret=bad%zzescape":                      "secret",
		"secret":                                   "secret",
		"adapter.config.password=hunter2hunter2":   "password",
	} {
		code, msg := send(t, http.MethodPost, url+"/api/admin/endpoints?"+query,
			`{"queue":"q","verification":"VERIFICATION_SCHEME_GITHUB"}`)
		require.Equal(t, http.StatusBadRequest, code, query)
		require.Equal(t, `"`+name+`" belongs in the JSON request body, not the URL (query strings are logged)`, msg, query)
		require.NotContains(t, msg, "abcdefghijklmnop")
	}
	code, msg := send(t, http.MethodPost, url+"/api/admin/adapters?adapter.config.password=hunter2hunter2",
		`{"name":"a","kind":"ADAPTER_KIND_REDIS_STREAM","queue":"q","config":{"addr":"redis:6379","stream":"s"}}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, `"password" belongs in the JSON request body, not the URL (query strings are logged)`, msg)
	require.Empty(t, rec.requests(), "no refused request reached the upstream")

	// Names that merely contain "secret" are not secrets.
	code, _ = send(t, http.MethodPost, url+"/api/admin/endpoints?has_secret=true&secrets=x&page_token=y",
		`{"queue":"q","verification":"VERIFICATION_SCHEME_GITHUB"}`)
	require.Equal(t, http.StatusOK, code)
}

// The secret goes in the body of Create, Update and AddEndpointSecret,
// byte for byte ("+" and "/" included), and passes the contract's rules
// (a STRIPE endpoint requires one).
func TestSecretInBodyReachesTheUpstream(t *testing.T) {
	t.Parallel()
	url, rec := serveAdmin(t)
	const secret = "whsec_ab+cd/ef+gh/ij+kl/mn=="
	code, msg := send(t, http.MethodPost, url+"/api/admin/endpoints",
		`{"queue":"q","verification":"VERIFICATION_SCHEME_STRIPE","secret":"`+secret+`"}`)
	require.Equal(t, http.StatusOK, code, msg)
	code, msg = send(t, http.MethodPatch, url+"/api/admin/endpoints/"+endpointID,
		`{"verification":"VERIFICATION_SCHEME_SLACK","secret":"`+secret+`"}`)
	require.Equal(t, http.StatusOK, code, msg)
	code, msg = send(t, http.MethodPost, url+"/api/admin/endpoints/"+endpointID+"/secrets", `{"secret":"`+secret+`"}`)
	require.Equal(t, http.StatusOK, code, msg)

	seen := rec.requests()
	require.Len(t, seen, 3)
	create, ok := seen[0].(*adminv1.CreateEndpointRequest)
	require.True(t, ok)
	require.Equal(t, secret, create.GetEndpoint().GetSecret())
	update, ok := seen[1].(*adminv1.UpdateEndpointRequest)
	require.True(t, ok)
	require.Equal(t, secret, update.GetEndpoint().GetSecret())
	require.ElementsMatch(t, []string{"verification", "secret"}, update.GetUpdateMask().GetPaths(),
		"the body's secret key is in the derived mask")
	add, ok := seen[2].(*adminv1.AddEndpointSecretRequest)
	require.True(t, ok)
	require.Equal(t, secret, add.GetSecret())

	// The contract's rules see the body's secret: BASIC without any is
	// refused, NONE with one too.
	code, msg = send(t, http.MethodPost, url+"/api/admin/endpoints", `{"queue":"q","verification":"VERIFICATION_SCHEME_BASIC"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "is required for VERIFICATION_SCHEME_BASIC")
	code, msg = send(t, http.MethodPost, url+"/api/admin/endpoints",
		`{"queue":"q","verification":"VERIFICATION_SCHEME_NONE","secret":"`+secret+`"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "secret must be empty")
	code, msg = send(t, http.MethodPost, url+"/api/admin/endpoints",
		`{"queue":"q","verification":"VERIFICATION_SCHEME_GITHUB","secret":"short"}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "endpoint.secret")
	require.Len(t, rec.requests(), 3, "refused by the rules, not handled")
}
