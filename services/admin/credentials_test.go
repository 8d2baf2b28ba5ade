//go:build integration

package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
)

func TestMintListRevokeCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))

	// For the human itself (empty human_id = the caller's), scopes deduped and sorted.
	expires := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	minted, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{
		Name: "laptop", Scopes: []string{"read", "publisher", "read"}, ExpiresAt: timestamppb.New(expires),
	})
	require.NoError(t, err)
	c := minted.GetCredential()
	tok := minted.GetToken()
	require.NoError(t, auth.ParseToken(tok))
	require.Equal(t, tok[:auth.DisplayPrefixLen], c.GetTokenPrefix())
	require.Equal(t, alice.human.GetId(), c.GetHumanId())
	require.Empty(t, c.GetAgentId())
	require.Equal(t, "laptop", c.GetName())
	require.Equal(t, []string{"publisher", "read"}, c.GetScopes())
	require.True(t, expires.Equal(c.GetExpiresAt().AsTime()))
	require.Nil(t, c.GetRevokedAt())
	require.Nil(t, c.GetLastUsedAt())

	// Only the keyed hash is stored, never the token.
	var hash []byte
	require.NoError(t, e.pool.QueryRow(t.Context(), "SELECT token_hash FROM credentials WHERE id = $1", c.GetId()).Scan(&hash))
	require.Equal(t, e.hasher.Hash(tok), hash)
	require.Zero(t, count(t, e.pool, "SELECT count(*) FROM credentials WHERE position($1 in token_prefix || name) > 0", tok))

	// For one of the human's agents.
	forAgent, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{AgentId: alice.agent.GetId(), Scopes: []string{"publisher", "agent"}})
	require.NoError(t, err)
	require.Equal(t, alice.agent.GetId(), forAgent.GetCredential().GetAgentId())
	require.Equal(t, []string{"agent", "publisher"}, forAgent.GetCredential().GetScopes())
	require.NotEqual(t, tok, forAgent.GetToken())

	list, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	ids := credentialIDs(list.GetCredentials())
	require.Equal(t, []string{forAgent.GetCredential().GetId(), c.GetId(), callerCredential(ctx), alice.credential.GetId()}, ids, "newest first")

	byAgent, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{AgentId: alice.agent.GetId()})
	require.NoError(t, err)
	require.Equal(t, []string{forAgent.GetCredential().GetId()}, credentialIDs(byAgent.GetCredentials()))

	revoked, err := e.srv.RevokeCredential(ctx, &adminv1.RevokeCredentialRequest{Id: c.GetId()})
	require.NoError(t, err)
	first := revoked.GetCredential().GetRevokedAt()
	require.NotNil(t, first)

	// Idempotent: the second revoke succeeds and keeps the first time.
	again, err := e.srv.RevokeCredential(ctx, &adminv1.RevokeCredentialRequest{Id: c.GetId()})
	require.NoError(t, err)
	require.True(t, first.AsTime().Equal(again.GetCredential().GetRevokedAt().AsTime()))

	active, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	require.NotContains(t, credentialIDs(active.GetCredentials()), c.GetId())
	all, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{IncludeInactive: true})
	require.NoError(t, err)
	require.Contains(t, credentialIDs(all.GetCredentials()), c.GetId())

	// Expired (by the database clock) is inactive too.
	_, err = e.pool.Exec(t.Context(), "UPDATE credentials SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' WHERE id = $1",
		forAgent.GetCredential().GetId())
	require.NoError(t, err)
	active, err = e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{callerCredential(ctx), alice.credential.GetId()}, credentialIDs(active.GetCredentials()))

	_, err = e.srv.RevokeCredential(ctx, &adminv1.RevokeCredentialRequest{Id: "00000000-0000-4000-8000-000000000000"})
	requireCode(t, codes.NotFound, err)
}

func TestAdministratorMintsForAnotherHuman(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	bob := e.seedTenant(t, "bob")
	ctx := e.rootCtx(t)

	minted, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: bob.human.GetId(), AgentId: bob.agent.GetId(), Scopes: []string{"agent"}})
	require.NoError(t, err)
	require.Equal(t, bob.human.GetId(), minted.GetCredential().GetHumanId())

	// The agent must belong to the named human, even for an administrator.
	before := snapshot(t.Context(), t, e.pool)
	_, err = e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{AgentId: bob.agent.GetId(), Scopes: []string{"agent"}})
	requireCode(t, codes.NotFound, err)
	_, err = e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: "00000000-0000-4000-8000-000000000000"})
	requireCode(t, codes.NotFound, err)
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	list, err := e.srv.ListCredentials(ctx, &adminv1.ListCredentialsRequest{HumanId: bob.human.GetId()})
	require.NoError(t, err)
	require.Len(t, list.GetCredentials(), 2)
	_, err = e.srv.RevokeCredential(ctx, &adminv1.RevokeCredentialRequest{Id: bob.credential.GetId()})
	require.NoError(t, err)
}

func TestMintCredentialValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	// "Past" is measured against the database's clock, which is what the
	// server compares with: read it rather than trusting this process's.
	var dbNow time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), "SELECT now()").Scan(&dbNow))
	before := snapshot(t.Context(), t, e.pool)
	cases := map[string]struct {
		req   *adminv1.MintCredentialRequest
		field string
	}{
		"unknown scope":                 {&adminv1.MintCredentialRequest{Scopes: []string{"read", "superuser"}}, "scopes"},
		"agent scope for a human":       {&adminv1.MintCredentialRequest{Scopes: []string{"agent"}}, "scopes"},
		"admin scope for an agent":      {&adminv1.MintCredentialRequest{AgentId: alice.agent.GetId(), Scopes: []string{"admin"}}, "scopes"},
		"expires_at in the past":        {&adminv1.MintCredentialRequest{Scopes: []string{"read"}, ExpiresAt: timestamppb.New(dbNow.Add(-time.Second))}, "expires_at"},
		"expires_at just before db now": {&adminv1.MintCredentialRequest{Scopes: []string{"read"}, ExpiresAt: timestamppb.New(dbNow.Add(-time.Microsecond))}, "expires_at"},
		"invalid expires_at":            {&adminv1.MintCredentialRequest{Scopes: []string{"read"}, ExpiresAt: &timestamppb.Timestamp{Seconds: 1, Nanos: -1}}, "expires_at"},
		"bad agent_id":                  {&adminv1.MintCredentialRequest{AgentId: "agent-7"}, "agent_id"},
		"bad human_id":                  {&adminv1.MintCredentialRequest{HumanId: strings.Repeat("f", 36)}, "human_id"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := e.srv.MintCredential(ctx, tc.req)
			requireInvalid(t, err, tc.field)
			require.Equal(t, before, snapshot(ctx, t, e.pool))
		})
	}
}

func credentialIDs(cs []*adminv1.Credential) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.GetId()
	}
	return out
}

// TestMintedLifetimeIsBounded: a tenant admin's credential lives at most
// auth.credentials' max_ttl_seconds (a request without an expiry gets it, a
// later one is refused naming the limit; 0 lifts it), and no credential
// outlives the one that minted it. Administrators are exempt from the
// maximum but not from their own credential's expiry.
func TestMintedLifetimeIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	aliceID := mustUUID(t, alice.human.GetId())
	ctx := e.asTenant(t, aliceID)
	dbNow := func() time.Time {
		var now time.Time
		require.NoError(t, e.pool.QueryRow(t.Context(), "SELECT now()").Scan(&now))
		return now
	}
	setMax := func(seconds int) {
		_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = jsonb_build_object('max_ttl_seconds', $1::int) WHERE key = 'auth.credentials'`, seconds)
		require.NoError(t, err)
	}
	mint := func(ctx context.Context, expires *time.Time) (*adminv1.Credential, error) {
		req := &adminv1.MintCredentialRequest{Scopes: []string{"read"}}
		if expires != nil {
			req.ExpiresAt = timestamppb.New(*expires)
		}
		m, err := e.srv.MintCredential(ctx, req)
		return m.GetCredential(), err
	}
	near := func(want time.Time, got *timestamppb.Timestamp) {
		t.Helper()
		require.NotNil(t, got, "the credential must expire")
		require.WithinDuration(t, want, got.AsTime(), 5*time.Second)
	}

	setMax(3600)
	before := dbNow()
	c, err := mint(ctx, nil)
	require.NoError(t, err)
	near(before.Add(time.Hour), c.GetExpiresAt())
	tooLate := before.Add(2 * time.Hour)
	_, err = mint(ctx, &tooLate)
	requireInvalid(t, err, "expires_at")
	require.ErrorContains(t, err, "max_ttl_seconds")
	inTime := before.Add(30 * time.Minute).Truncate(time.Microsecond)
	c, err = mint(ctx, &inTime)
	require.NoError(t, err)
	require.True(t, inTime.Equal(c.GetExpiresAt().AsTime()))

	// Administrators are exempt from the maximum.
	c, err = mint(e.rootCtx(t), nil)
	require.NoError(t, err)
	require.Nil(t, c.GetExpiresAt())
	c, err = mint(e.rootCtx(t), &tooLate)
	require.NoError(t, err)
	require.True(t, tooLate.Truncate(time.Microsecond).Equal(c.GetExpiresAt().AsTime()), "an administrator's longer expiry stands")

	// 0: no maximum.
	setMax(0)
	c, err = mint(ctx, nil)
	require.NoError(t, err)
	require.Nil(t, c.GetExpiresAt())

	// Whatever the maximum, a credential expires no later than its minter:
	// a tenant admin's token that expires in 10 minutes, and an
	// administrator's.
	for name, administrator := range map[string]bool{"tenant admin": false, "administrator": true} {
		human := aliceID
		if administrator {
			human = e.root
		}
		expiring := dbNow().Add(10 * time.Minute).Truncate(time.Microsecond)
		minter, err := e.srv.MintCredential(e.rootCtx(t), &adminv1.MintCredentialRequest{
			HumanId: human.String(), Scopes: []string{"admin"}, ExpiresAt: timestamppb.New(expiring),
		})
		require.NoError(t, err, name)
		asMinter := auth.NewContext(t.Context(), auth.Principal{
			CredentialID: mustUUID(t, minter.GetCredential().GetId()), HumanID: human, Scopes: []auth.Scope{auth.ScopeAdmin},
			Administrator: administrator,
		})
		c, err := mint(asMinter, nil)
		require.NoError(t, err, name)
		require.True(t, expiring.Equal(c.GetExpiresAt().AsTime()), "%s: defaulted to the minter's expiry", name)
		later := expiring.Add(time.Minute)
		_, err = mint(asMinter, &later)
		requireInvalid(t, err, "expires_at")
		require.ErrorContains(t, err, "the credential minting it", name)
		sooner := expiring.Add(-time.Minute)
		c, err = mint(asMinter, &sooner)
		require.NoError(t, err, name)
		require.True(t, sooner.Equal(c.GetExpiresAt().AsTime()), name)
	}
}
