//go:build integration

package admin_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/settings"
)

// setTenantLimits changes tenant.limits as an operator would (UpdateSetting
// as the root administrator): def with change applied.
func (e *env) setTenantLimits(t *testing.T, change func(l *settings.Tenant)) {
	t.Helper()
	l := settings.DefaultTenant
	change(&l)
	_, err := e.srv.UpdateSetting(e.rootCtx(t), &adminv1.UpdateSettingRequest{Setting: &adminv1.Setting{
		Key: settings.TenantLimits, Value: objectValue(t, map[string]any{
			"max_agents": l.MaxAgents, "max_credentials": l.MaxCredentials, "max_endpoints": l.MaxEndpoints,
			"max_adapters": l.MaxAdapters, "max_schedules": l.MaxSchedules,
		}),
	}})
	require.NoError(t, err)
}

// createConcurrently runs create n times at once and returns how many
// succeeded; every failure must be RESOURCE_EXHAUSTED with message.
func createConcurrently(t *testing.T, n int, message string, create func(i int) error) int {
	t.Helper()
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = create(i)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		requireCode(t, codes.ResourceExhausted, err)
		require.Equal(t, message, status.Convert(toStatus(err)).Message())
	}
	return won
}

// TestAdaptersPerTenantAreCapped: each pull adapter holds a blocking Redis
// connection on every ingest node, so a tenant may hold at most
// tenant.limits' max_adapters (of every kind); one more is
// RESOURCE_EXHAUSTED naming the setting, also when many creations race
// (the count runs under the tenant's lock), also for an administrator
// creating for the tenant. Another tenant is not affected, a deleted
// adapter frees its place, and lowering the limit removes nothing.
func TestAdaptersPerTenantAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setTenantLimits(t, func(l *settings.Tenant) { l.MaxAdapters = 3 })
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	aliceCtx, bobCtx := e.asTenant(t, mustUUID(t, alice.human.GetId())), e.asTenant(t, mustUUID(t, bob.human.GetId()))
	const full = "the tenant holds 3 adapters, the most it may hold (setting tenant.limits, max_adapters = 3); delete one first"

	won := createConcurrently(t, 12, full, func(i int) error {
		_, err := e.srv.CreateAdapter(aliceCtx, &adminv1.CreateAdapterRequest{
			Adapter: redisAt(t, fmt.Sprint("a", i), "redis.internal:6379", fmt.Sprint("alice-", i)),
		})
		return err
	})
	require.Equal(t, 3, won, "exactly max_adapters creations pass")
	require.Equal(t, 3, count(t, e.pool, `SELECT count(*) FROM adapters WHERE human_id = $1`, alice.human.GetId()))

	// A push adapter counts too, and an administrator acting for the
	// tenant is held to its limit.
	ep, _ := e.createEndpoint(aliceCtx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	_, err := e.srv.CreateAdapter(aliceCtx, &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		Name: "hook", Kind: kindWebhook, EndpointId: ep.GetId(), Queue: "hooks",
	}})
	requireCode(t, codes.ResourceExhausted, err)
	byAdmin := redisAt(t, "by-admin", "redis.internal:6379", "alice-admin")
	byAdmin.HumanId = alice.human.GetId()
	_, err = e.srv.CreateAdapter(e.rootCtx(t), &adminv1.CreateAdapterRequest{Adapter: byAdmin})
	requireCode(t, codes.ResourceExhausted, err)
	require.Equal(t, full, status.Convert(toStatus(err)).Message())

	// Bob naming Alice's (full) tenant learns nothing of it: NOT_FOUND, as
	// for a missing human, never RESOURCE_EXHAUSTED.
	intoAlice := redisAt(t, "into-alice", "redis.internal:6379", "bob-into")
	intoAlice.HumanId = alice.human.GetId()
	_, err = e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: intoAlice})
	requireCode(t, codes.NotFound, err)

	// Bob's count is his own.
	for i := range 3 {
		e.createAdapter(bobCtx, t, redisAt(t, fmt.Sprint("b", i), "redis.internal:6379", fmt.Sprint("bob-", i)))
	}

	// Deleting one frees its place.
	mine := listAdapters(aliceCtx, t, e)
	_, err = e.srv.DeleteAdapter(aliceCtx, &adminv1.DeleteAdapterRequest{Id: mine[0].GetId()})
	require.NoError(t, err)
	e.createAdapter(aliceCtx, t, redisAt(t, "again", "redis.internal:6379", "alice-again"))

	// Lowering the limit keeps what the tenants hold, and refuses more.
	e.setTenantLimits(t, func(l *settings.Tenant) { l.MaxAdapters = 1 })
	require.Len(t, listAdapters(aliceCtx, t, e), 3)
	_, err = e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "more", "redis.internal:6379", "bob-more")})
	requireCode(t, codes.ResourceExhausted, err)
	require.Equal(t, "the tenant holds 3 adapters, the most it may hold (setting tenant.limits, max_adapters = 1); delete one first",
		status.Convert(toStatus(err)).Message())
}

// TestEndpointsPerTenantAreCapped: likewise tenant.limits' max_endpoints
// bounds a tenant's webhook endpoints, under concurrent creations too.
func TestEndpointsPerTenantAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setTenantLimits(t, func(l *settings.Tenant) { l.MaxEndpoints = 4 })
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	aliceCtx, bobCtx := e.asTenant(t, mustUUID(t, alice.human.GetId())), e.asTenant(t, mustUUID(t, bob.human.GetId()))
	const full = "the tenant holds 4 endpoints, the most it may hold (setting tenant.limits, max_endpoints = 4); delete one first"
	create := func(ctx context.Context) error {
		_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
			Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
		}})
		return err
	}

	won := createConcurrently(t, 12, full, func(int) error { return create(aliceCtx) })
	require.Equal(t, 4, won, "exactly max_endpoints creations pass")
	require.Equal(t, 4, count(t, e.pool, `SELECT count(*) FROM endpoints WHERE human_id = $1`, alice.human.GetId()))
	require.NoError(t, create(bobCtx), "another tenant's count is its own")
	_, err := e.srv.CreateEndpoint(bobCtx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
		HumanId: alice.human.GetId(), Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
	}})
	requireCode(t, codes.NotFound, err) // a full tenant looks like a missing one

	list, err := e.srv.ListEndpoints(aliceCtx, &adminv1.ListEndpointsRequest{})
	require.NoError(t, err)
	_, err = e.srv.DeleteEndpoint(aliceCtx, &adminv1.DeleteEndpointRequest{Id: list.GetEndpoints()[0].GetId()})
	require.NoError(t, err)
	require.NoError(t, create(aliceCtx), "a deleted endpoint frees its place")
	requireCode(t, codes.ResourceExhausted, create(aliceCtx))
}

// TestSourceCreationWithTheDatabaseDownIsUnavailable: while the database
// refuses connections, creating an adapter or an endpoint (the tenant's
// count, the limit, the insert) answers UNAVAILABLE without the database's
// text, never INTERNAL; once it is back the same call works.
func TestSourceCreationWithTheDatabaseDownIsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	name := e.pool.Config().ConnConfig.Database
	allow := func(ctx context.Context, on bool) {
		_, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` ALLOW_CONNECTIONS `+map[bool]string{true: "true", false: "false"}[on])
		require.NoError(t, err)
	}
	t.Cleanup(func() { allow(context.Background(), true) })
	createAdapter := func() error {
		_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "down", "redis.internal:6379", "down")})
		return err
	}
	createEndpoint := func() error {
		_, err := e.srv.CreateEndpoint(ctx, &adminv1.CreateEndpointRequest{Endpoint: &adminv1.Endpoint{
			Queue: "hooks", Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE,
		}})
		return err
	}

	allow(t.Context(), false)
	_, err = admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
	require.NoError(t, err)
	for _, create := range []func() error{createAdapter, createEndpoint} {
		st, _ := apierr.ToStatus(create())
		require.Equal(t, codes.Unavailable, st.Code(), "%v", st.Err())
		require.Equal(t, "the database is unavailable; retry shortly", st.Message())
	}

	allow(t.Context(), true)
	require.Eventually(t, func() bool { return createAdapter() == nil }, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, createEndpoint())
}
