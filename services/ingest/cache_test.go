//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// edgeNode is a node's webhook edge: its own notifier, store of endpoints
// (which announces through that notifier) and ingest server, with an
// endpoint cache that never expires in the test (an hour), so only an
// announced change can make it drop an endpoint.
type edgeNode struct {
	sources *sources.Store
	admin   *admin.Server
	url     string
}

func newEdgeNode(t *testing.T, e *env) *edgeNode {
	t.Helper()
	n := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	src := sources.New(e.pool, e.keys, nil)
	src.UseNotifier(n)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Sources: src, Todos: e.queue.Todos()})
	srv.SetEndpointCacheTTL(time.Hour)
	listening := make(chan struct{})
	require.NoError(t, src.OnEndpointChange(func(slug string) {
		if slug == "" { // the listen connection is up: OnConnect
			select {
			case <-listening:
			default:
				close(listening)
			}
		}
	}))
	require.NoError(t, n.Start(t.Context()))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the notifier never listened")
	}
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &edgeNode{
		sources: src, url: hs.URL,
		admin: admin.New(zap.NewNop(), e.pool, auth.NewStore(e.pool, auth.NewHasher(make([]byte, 32))), src),
	}
}

// deliver posts a fresh delivery signed with secret to slug on node and
// returns the status.
func deliver(t *testing.T, node *edgeNode, slug, secret string) int {
	t.Helper()
	body := []byte(`{"n":"` + uuid.NewString() + `"}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, node.url+"/hooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = signStandard(t, secret, "msg_"+uuid.NewString(), time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// endpointAdmin is a tenant admin of e's human acting on node.
func (e *env) endpointAdmin(t *testing.T) context.Context {
	t.Helper()
	return auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAdmin}})
}

func setEnabled(t *testing.T, ctx context.Context, node *edgeNode, id string, enabled bool) {
	t.Helper()
	_, err := node.admin.UpdateEndpoint(ctx, &adminv1.UpdateEndpointRequest{
		Endpoint:   &adminv1.Endpoint{Id: id, Enabled: &enabled},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"enabled"}},
	})
	require.NoError(t, err)
}

// TestEndpointChangesApplyAtOnce: with the endpoint cached (for an hour),
// disabling it, rotating its secret or deleting it applies to the very
// next delivery on the node that made the change.
func TestEndpointChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	node := newEdgeNode(t, e)
	ctx := e.endpointAdmin(t)
	created, err := node.admin.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS,
	}})
	require.NoError(t, err)
	id, slug, secret := created.GetEndpoint().GetId(), created.GetEndpoint().GetSlug(), created.GetSecret()
	require.Equal(t, http.StatusOK, deliver(t, node, slug, secret), "the cache is warm")

	setEnabled(t, ctx, node, id, false)
	require.Equal(t, http.StatusNotFound, deliver(t, node, slug, secret), "disabled: refused right after the write")
	setEnabled(t, ctx, node, id, true)
	require.Equal(t, http.StatusOK, deliver(t, node, slug, secret), "enabled again")

	rotated, err := node.admin.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: id})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, deliver(t, node, slug, rotated.GetSecret()), "the new secret verifies at once")
	old := created.GetEndpoint().GetSecrets()[0].GetId()
	_, err = node.admin.RemoveEndpointSecret(ctx, &adminv1.RemoveEndpointSecretRequest{EndpointId: id, SecretId: old})
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, deliver(t, node, slug, secret), "the removed secret stops verifying at once")

	_, err = node.admin.DeleteEndpoint(ctx, &adminv1.DeleteEndpointRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, deliver(t, node, slug, rotated.GetSecret()), "deleted")
}

// TestEndpointChangesReachEveryNode: two nodes (two notifiers and edges,
// one database), both with the endpoint cached for an hour; a change made
// through one reaches the other's cache through its notifier, well within
// the hour.
func TestEndpointChangesReachEveryNode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := newEdgeNode(t, e), newEdgeNode(t, e)
	ctx := e.endpointAdmin(t)
	created, err := a.admin.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS,
	}})
	require.NoError(t, err)
	id, slug, secret := created.GetEndpoint().GetId(), created.GetEndpoint().GetSlug(), created.GetSecret()
	require.Equal(t, http.StatusOK, deliver(t, a, slug, secret))
	require.Equal(t, http.StatusOK, deliver(t, b, slug, secret), "b's cache is warm")

	heard := func(node *edgeNode, want int, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return deliver(t, node, slug, secret) == want }, 10*time.Second, 20*time.Millisecond, what)
	}
	setEnabled(t, ctx, a, id, false)
	heard(b, http.StatusNotFound, "b never heard that a disabled the endpoint")
	require.Equal(t, http.StatusNotFound, deliver(t, a, slug, secret), "a caches the disabled endpoint")
	setEnabled(t, ctx, b, id, true)
	heard(a, http.StatusOK, "a never heard that b enabled it again")
	_, err = a.admin.DeleteEndpoint(ctx, &adminv1.DeleteEndpointRequest{Id: id})
	require.NoError(t, err)
	heard(b, http.StatusNotFound, "b never heard that a deleted the endpoint")
}
