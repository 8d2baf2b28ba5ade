//go:build integration

package ingest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// TestEndpointCreatedByAdminVerifiesAtTheEdge: the secret AdminService
// seals at CreateEndpoint opens at the webhook edge (same keyring, same
// associated data), and a delivery signed with the secret it returned once
// is stored.
func TestEndpointCreatedByAdminVerifiesAtTheEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adm, ctx := e.admin(t)
	created, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STANDARD_WEBHOOKS,
	}})
	require.NoError(t, err)
	require.Contains(t, created.GetSecret(), "whsec_")

	body := []byte(`{"from":"admin"}`)
	h := signStandard(t, created.GetSecret(), "msg_admin", time.Now(), body)
	code, resp := e.post(t, created.GetEndpoint().GetSlug(), body, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND event_id IS NOT NULL`))
}

// TestStripeEndpointAwaitsItsSecret: Stripe issues its signing secret only
// once it knows the URL, so a STRIPE endpoint is created without one. Until
// AddEndpointSecret gives it the secret every delivery is refused (401,
// nothing stored); then a delivery signed with it is stored.
func TestStripeEndpointAwaitsItsSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	adm, ctx := e.admin(t)
	created, err := adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "stripe", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_STRIPE,
	}})
	require.NoError(t, err)
	require.Empty(t, created.GetSecret(), "a provider-issued secret is never generated")
	require.False(t, created.GetEndpoint().GetHasSecret())

	secret := []byte("whsec_test_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH")
	body := []byte(`{"id":"evt_await","type":"invoice.paid"}`)
	slug := created.GetEndpoint().GetSlug()
	code, resp := e.post(t, slug, body, stripeHeaders(secret, body))
	require.Equal(t, http.StatusUnauthorized, code, resp)
	require.Equal(t, 0, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))

	_, err = adm.AddEndpointSecret(ctx, &adminv1.AddEndpointSecretRequest{EndpointId: created.GetEndpoint().GetId(), Secret: string(secret)})
	require.NoError(t, err)
	// The edge's cache of the endpoint lasts at most endpointCacheTTL when
	// no change notification reaches it (none is wired here).
	require.Eventually(t, func() bool {
		code, _ := e.post(t, slug, body, stripeHeaders(secret, body))
		return code == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = 'evt_await'`))

	_, err = adm.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		Queue: "basic", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_BASIC,
	}})
	require.ErrorContains(t, err, "is required for VERIFICATION_SCHEME_BASIC", "a password is never optional")
}

// admin is an AdminService over e's database and keyring (as the node
// builds it), and a context acting as e's human with the admin scope.
func (e *env) admin(t testing.TB) (*admin.Server, context.Context) {
	t.Helper()
	return e.adminOver(sources.New(e.pool, e.keys, nil)), e.adminContext(t)
}

// adminOver is an AdminService over src.
func (e *env) adminOver(src *sources.Store) *admin.Server {
	return admin.New(zap.NewNop(), e.pool, auth.NewStore(e.pool, auth.NewHasher(make([]byte, 32))), src)
}

// adminContext acts as e's human with the admin scope.
func (e *env) adminContext(t testing.TB) context.Context {
	return auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAdmin}})
}
