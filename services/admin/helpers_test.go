//go:build integration

package admin_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }

// env is one test's server over its own migrated database.
type env struct {
	srv      *admin.Server
	pool     *pgxpool.Pool
	identity *auth.Store
	hasher   *auth.Hasher
	// keys seals endpoint secrets; tests open stored rows with it.
	keys *secretbox.Keyring
	// root is a bootstrap administrator, seeded through the store because
	// no RPC can create the first human.
	root uuid.UUID

	callersMu sync.Mutex
	callers   map[caller]uuid.UUID // the credentials as calls with
}

// testAllow is the operator's allow list the admin tests run under (as
// SWITCHBOARD_ADAPTER_ALLOW=redis.internal:6379,localhost,other,third,[::1]).
// Names are allowed by name, so nothing is resolved.
var testAllow = []sources.AllowRule{
	{Host: "redis.internal", Port: 6379}, {Host: "localhost"}, {Host: "other"}, {Host: "third"},
	{Prefix: netip.MustParsePrefix("::1/128")},
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvAllowing(t, testAllow...) }

// newEnvAllowing is newEnv under another allow list.
func newEnvAllowing(t *testing.T, allow ...sources.AllowRule) *env {
	t.Helper()
	pool := pgtest.NewPool(t)
	hasher := auth.NewHasher([]byte("admin-test-key"))
	identity := auth.NewStore(pool, hasher)
	root, err := identity.CreateHuman(t.Context(), auth.NewHuman{Email: "root@example.test", IsAdmin: true})
	require.NoError(t, err)
	keys, err := secretbox.NewKeyring("k2", map[string][]byte{
		"k1": bytes.Repeat([]byte{1}, secretbox.KeySize), "k2": bytes.Repeat([]byte{2}, secretbox.KeySize),
	})
	require.NoError(t, err)
	return &env{
		srv:  admin.New(zap.NewNop(), pool, identity, sources.New(pool, keys, sources.NewAllowlist(allow, nil))),
		pool: pool, identity: identity, hasher: hasher, keys: keys, root: root.ID, callers: map[caller]uuid.UUID{},
	}
}

// asAdministrator is the context of an administrator's admin credential.
func (e *env) asAdministrator(t *testing.T, humanID uuid.UUID) context.Context {
	t.Helper()
	return e.as(t, humanID, true)
}

// asTenant is the context of an ordinary human's admin credential: full
// control of its own tenant, nothing else.
func (e *env) asTenant(t *testing.T, humanID uuid.UUID) context.Context {
	t.Helper()
	return e.as(t, humanID, false)
}

// as is the context of an admin credential of humanID that exists in the
// database, as the interceptor's would: a mint records it as the new
// credential's minted_by, and refuses it once revoked. One credential per
// human and role serves the whole test, so a context made after a snapshot
// changes nothing.
func (e *env) as(t *testing.T, humanID uuid.UUID, administrator bool) context.Context {
	t.Helper()
	e.callersMu.Lock()
	defer e.callersMu.Unlock()
	key := caller{humanID, administrator}
	id, ok := e.callers[key]
	if !ok {
		c, _, err := e.identity.MintCredential(t.Context(), auth.Tenant{Administrator: true},
			auth.NewCredential{HumanID: humanID, Name: "test caller", Scopes: []string{"admin"}}, math.MaxInt32)
		require.NoError(t, err)
		id = c.ID
		e.callers[key] = id
	}
	return auth.NewContext(t.Context(), auth.Principal{
		CredentialID: id, HumanID: humanID, Scopes: []auth.Scope{auth.ScopeAdmin}, Administrator: administrator,
	})
}

// caller names a test's caller credential: whose, and in which role.
type caller struct {
	human         uuid.UUID
	administrator bool
}

// callerCredential is the id of the credential ctx (from as) calls with.
func callerCredential(ctx context.Context) string {
	p, _ := auth.FromContext(ctx)
	return p.CredentialID.String()
}

func (e *env) rootCtx(t *testing.T) context.Context { t.Helper(); return e.asAdministrator(t, e.root) }

// tenant is one seeded tenant: a human with an agent and a credential.
type tenant struct {
	human      *adminv1.Human
	agent      *adminv1.Agent
	credential *adminv1.Credential
}

// seedTenant creates a non-administrator human with one agent and one
// credential, through the RPCs, as the root administrator.
func (e *env) seedTenant(t *testing.T, name string) tenant {
	t.Helper()
	ctx := e.rootCtx(t)
	h, err := e.srv.CreateHuman(ctx, &adminv1.CreateHumanRequest{Human: &adminv1.Human{Email: name + "@example.test", DisplayName: name}})
	require.NoError(t, err)
	a, err := e.srv.CreateAgent(ctx, &adminv1.CreateAgentRequest{Agent: &adminv1.Agent{HumanId: h.GetHuman().GetId(), Name: name + "-worker"}})
	require.NoError(t, err)
	c, err := e.srv.MintCredential(ctx, &adminv1.MintCredentialRequest{HumanId: h.GetHuman().GetId(), Name: name + " key", Scopes: []string{"admin"}})
	require.NoError(t, err)
	return tenant{human: h.GetHuman(), agent: a.GetAgent(), credential: c.GetCredential()}
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}

// code is the gRPC code a client would see for err.
func code(err error) codes.Code {
	st, _ := apierr.ToStatus(err)
	return st.Code()
}

// requireInvalid asserts INVALID_ARGUMENT naming field in a BadRequest detail.
func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	require.Error(t, err)
	st, internal := apierr.ToStatus(err)
	require.False(t, internal, "internal error: %v", err)
	require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	require.Contains(t, fields, field, "%v", err)
}

// requireCode asserts the client-visible code and that the error is a domain
// error, not an internal one whose cause was hidden.
func requireCode(t *testing.T, want codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	_, internal := apierr.ToStatus(err)
	require.False(t, internal, "internal error: %v", err)
	require.Equal(t, want, code(err), "%v", err)
	var ae *apierr.Error
	if errors.As(err, &ae) {
		require.NotContains(t, strings.ToLower(ae.Message), "sql", "SQL must not leak")
	}
}

// snapshot renders every tenant-owned table and settings as JSON, to prove a
// failed request changed nothing.
func snapshot(ctx context.Context, t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM humans x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM agents x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM credentials x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.key), '[]')::text FROM settings x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM endpoints x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM endpoint_secrets x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM adapters x",
		"SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.id), '[]')::text FROM todos x",
	} {
		var s string
		require.NoError(t, pool.QueryRow(ctx, q).Scan(&s))
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}
