//go:build integration

package auth_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/auth"
)

// Authenticate is the REST edge's check before it reads a body: who, not
// what. It fails every way Authorize fails for a bad credential, and lets a
// valid one through whatever its scopes (Authorize decides those).
func TestAuthenticateChecksWhoNotWhat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	unknown, _, err := auth.NewToken() // well formed, never stored
	require.NoError(t, err)
	for name, header := range map[string][]string{
		"none":          nil,
		"empty":         {""},
		"wrong scheme":  {"Basic " + tok},
		"malformed":     {"Bearer sbt_nope"},
		"two headers":   {"Bearer " + tok, "Bearer " + tok},
		"unknown token": {"Bearer " + unknown},
	} {
		err := b.authn.Authenticate(t.Context(), adminMethod, header)
		require.Equal(t, codes.Unauthenticated, code(err), name)
		require.EqualError(t, err, "missing or invalid credentials", name)
	}
	require.NoError(t, b.authn.Authenticate(t.Context(), adminMethod, []string{"Bearer " + tok}))
	require.NoError(t, b.authn.Authenticate(t.Context(), "/switchboard.queue.v1.QueueService/Claim", []string{"bearer " + tok}),
		"an admin credential may not Claim, but that is Authorize's call")
	require.NoError(t, b.authn.Authenticate(t.Context(), "/switchboard.queue.v1.QueueService/NoSuchMethod", []string{"Bearer " + tok}),
		"a valid credential passes even for a method without a rule: the gRPC interceptor denies it")
	err = b.authn.Authenticate(t.Context(), "/switchboard.queue.v1.QueueService/NoSuchMethod", nil)
	require.Equal(t, codes.Unauthenticated, code(err), "a method without a rule is not open")
}

// Identify verifies as Authenticate does and says whose credential it is,
// in the credential's own tenant (the MCP edge counts each caller's
// requests in progress by it).
func TestIdentifyNamesTheCredentialAndItsTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	ada, err := b.store.CreateHuman(t.Context(), auth.NewHuman{Email: "ada@example.com"})
	require.NoError(t, err)
	cred, adaToken, err := b.store.MintCredential(t.Context(), auth.Tenant{Administrator: true},
		auth.NewCredential{HumanID: ada.ID, Scopes: []string{"read"}}, roomy)
	require.NoError(t, err)

	p, err := b.authn.Identify(t.Context(), []string{"Bearer " + adaToken})
	require.NoError(t, err)
	require.Equal(t, cred.ID, p.CredentialID)
	require.Equal(t, ada.ID, p.HumanID)
	require.Equal(t, []auth.Scope{auth.ScopeRead}, p.Scopes)

	root, err := b.authn.Identify(t.Context(), []string{"Bearer " + tok})
	require.NoError(t, err)
	require.True(t, root.Administrator)
	require.NotEqual(t, ada.ID, root.HumanID)

	for name, header := range map[string][]string{"none": nil, "malformed": {"Bearer sbt_nope"}} {
		p, err := b.authn.Identify(t.Context(), header)
		require.Equal(t, codes.Unauthenticated, code(err), name)
		require.Equal(t, auth.Principal{}, p, name)
	}
}

func TestAuthenticateLeavesOpenMethodsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, m := range []string{
		"/grpc.health.v1.Health/Check",
		"/switchboard.registry.v1.RegistryService/GetHealth",
	} {
		require.NoError(t, b.authn.Authenticate(t.Context(), m, nil), m)
	}
}

// One cache behind both checks: a credential Authenticate verified is not
// looked up again by Authorize within the TTL, so the REST edge's check
// costs no second database round trip.
func TestAuthenticateSharesTheCacheWithAuthorize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	require.NoError(t, b.authn.Authenticate(t.Context(), adminMethod, []string{"Bearer " + tok}))
	_, err := b.pool.Exec(t.Context(), "UPDATE credentials SET revoked_at = now()")
	require.NoError(t, err)
	_, err = b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), adminMethod)
	require.NoError(t, err, "served from the entry Authenticate cached")
	b.clock.Advance(ttl)
	err = b.authn.Authenticate(t.Context(), adminMethod, []string{"Bearer " + tok})
	require.Equal(t, codes.Unauthenticated, code(err), "refused once the TTL is over")
}
