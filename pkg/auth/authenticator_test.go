//go:build integration

package auth_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

const (
	// roomy is a tenant limit no test of this package reaches by accident.
	roomy        = 1000
	ttl          = 10 * time.Second
	adminMethod  = "/switchboard.admin.v1.AdminService/ListAgents"
	clusterAdmin = "/switchboard.registry.v1.RegistryService/ListNodes"
)

type testBundle struct {
	url    string // the test's database
	pool   *pgxpool.Pool
	store  *auth.Store
	hasher *auth.Hasher
	authn  *auth.Authenticator
	clock  *fakeClock
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url, nil)
	hasher := auth.NewHasher([]byte("test key of at least thirty-two bytes"))
	b := &testBundle{url: url, pool: pool, store: auth.NewStore(pool, hasher), hasher: hasher, clock: &fakeClock{now: time.Now()}}
	b.authn = auth.NewAuthenticator(zap.NewNop(), b.store, b.hasher, ttl)
	b.authn.SetClock(b.clock.Now)
	return b
}

func withToken(ctx context.Context, header string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", header))
}

func code(err error) codes.Code {
	st, _ := apierr.ToStatus(err)
	return st.Code()
}

func (b *testBundle) mintAdmin(t *testing.T, email string) string {
	t.Helper()
	m, err := b.store.MintAdmin(t.Context(), email, "test", false)
	require.NoError(t, err)
	return m.Token
}

func TestValidTokenCarriesThePrincipal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	ctx, err := b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), clusterAdmin)
	require.NoError(t, err)
	p, ok := auth.FromContext(ctx)
	require.True(t, ok)
	require.True(t, p.Administrator)
	require.True(t, p.Has(auth.ScopeRead), "admin implies read")
	require.True(t, p.Has(auth.ScopeAgent), "and agent work: admin is everything in the tenant")
}

func TestEveryFailureLooksTheSame(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	other, _, err := auth.NewToken() // well formed, never stored
	require.NoError(t, err)
	cases := map[string]context.Context{
		"no metadata":   t.Context(),
		"empty header":  withToken(t.Context(), ""),
		"wrong scheme":  withToken(t.Context(), "Basic "+tok),
		"no scheme":     withToken(t.Context(), tok),
		"malformed":     withToken(t.Context(), "Bearer sbt_nope"),
		"unknown token": withToken(t.Context(), "Bearer "+other),
		"two headers":   metadata.NewIncomingContext(t.Context(), metadata.Pairs("authorization", "Bearer "+tok, "authorization", "Bearer "+tok)),
	}
	for name, ctx := range cases {
		_, err := b.authn.Authorize(ctx, adminMethod)
		require.Equal(t, codes.Unauthenticated, code(err), name)
		require.EqualError(t, err, "missing or invalid credentials", name)
	}
}

func TestOpenMethodsNeedNoToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, m := range []string{
		"/grpc.health.v1.Health/Check",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/switchboard.registry.v1.RegistryService/GetHealth",
	} {
		_, err := b.authn.Authorize(t.Context(), m)
		require.NoError(t, err, m)
	}
}

func TestUnknownMethodsAreDenied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	_, err := b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), "/switchboard.queue.v1.QueueService/DropEverything")
	require.Equal(t, codes.PermissionDenied, code(err))
}

// Revocation, expiry and disabling take effect once the cached verification
// runs out (the TTL), and not before: that is the price of no database round
// trip per call.
func TestRevokedExpiredAndDisabledStopWithinTheTTL(t *testing.T) {
	t.Parallel()
	for name, kill := range map[string]string{
		"revoked":  "UPDATE credentials SET revoked_at = now()",
		"expired":  "UPDATE credentials SET expires_at = now() - interval '1 second', created_at = now() - interval '1 hour'",
		"disabled": "UPDATE humans SET disabled_at = now()",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := withToken(t.Context(), "Bearer "+b.mintAdmin(t, "root@example.com"))
			_, err := b.authn.Authorize(ctx, adminMethod)
			require.NoError(t, err)
			_, err = b.pool.Exec(t.Context(), kill)
			require.NoError(t, err)

			_, err = b.authn.Authorize(ctx, adminMethod)
			require.NoError(t, err, "still cached")
			b.clock.Advance(ttl)
			_, err = b.authn.Authorize(ctx, adminMethod)
			require.Equal(t, codes.Unauthenticated, code(err), "refused once the TTL is over")
		})
	}
}

func TestScopesAreEnforced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var humanID string
	require.NoError(t, b.pool.QueryRow(t.Context(),
		"INSERT INTO humans (email) VALUES ('reader@example.com') RETURNING id::text").Scan(&humanID))
	tok, display, err := auth.NewToken()
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(),
		"INSERT INTO credentials (human_id, token_prefix, token_hash, scopes) VALUES ($1, $2, $3, '{read}')",
		humanID, display, b.hasher.Hash(tok))
	require.NoError(t, err)
	ctx := withToken(t.Context(), "Bearer "+tok)

	_, err = b.authn.Authorize(ctx, "/switchboard.queue.v1.QueueService/QueueStats")
	require.NoError(t, err, "read may read")
	_, err = b.authn.Authorize(ctx, "/switchboard.queue.v1.QueueService/Enqueue")
	require.Equal(t, codes.PermissionDenied, code(err), "read may not publish")
	_, err = b.authn.Authorize(ctx, clusterAdmin)
	require.Equal(t, codes.PermissionDenied, code(err))
}

func TestTenantAdminIsNotAnAdministrator(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var humanID string
	require.NoError(t, b.pool.QueryRow(t.Context(),
		"INSERT INTO humans (email) VALUES ('tenant@example.com') RETURNING id::text").Scan(&humanID))
	tok, display, err := auth.NewToken()
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(),
		"INSERT INTO credentials (human_id, token_prefix, token_hash, scopes) VALUES ($1, $2, $3, '{admin}')",
		humanID, display, b.hasher.Hash(tok))
	require.NoError(t, err)
	ctx := withToken(t.Context(), "Bearer "+tok)
	_, err = b.authn.Authorize(ctx, adminMethod)
	require.NoError(t, err)
	_, err = b.authn.Authorize(ctx, "/switchboard.admin.v1.AdminService/CreateHuman")
	require.Equal(t, codes.PermissionDenied, code(err), "creating tenants is the administrator's")
}

func TestDatabaseDownIsUnavailableNotUnauthenticated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := b.mintAdmin(t, "root@example.com")
	b.pool.Close()
	_, err := b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), adminMethod)
	require.Equal(t, codes.Unavailable, code(err))
}

func TestBootstrapIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok, _, err := auth.NewToken()
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, b.store.Bootstrap(t.Context(), "root@example.com", "boot", tok))
	}
	var humans, creds int
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM humans), (SELECT count(*) FROM credentials)").Scan(&humans, &creds))
	require.Equal(t, 1, humans)
	require.Equal(t, 1, creds)
	_, err = b.authn.Authorize(withToken(t.Context(), "Bearer "+tok), clusterAdmin)
	require.NoError(t, err)
}
