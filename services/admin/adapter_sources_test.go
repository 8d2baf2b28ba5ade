//go:build integration

package admin_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// redisAt is a REDIS_STREAM adapter reading stream at addr (more config
// keys in kv).
func redisAt(t *testing.T, name, addr, stream string, kv ...any) *adminv1.Adapter {
	t.Helper()
	cfg := map[string]any{"addr": addr, "stream": stream}
	for i := 0; i < len(kv); i += 2 {
		cfg[kv[i].(string)] = kv[i+1]
	}
	return &adminv1.Adapter{Name: name, Kind: kindRedis, Queue: "in", Config: mustStruct(t, cfg)}
}

// TestCreateAdapterRefusesAddressesNotAllowed: an addr the operator's allow
// list does not allow is INVALID_ARGUMENT naming adapter.config.addr and
// why, and nothing is stored. The node's own ports, Postgres, SSH and the
// cloud metadata endpoint were all reachable before.
func TestCreateAdapterRefusesAddressesNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnvAllowing(t,
		sources.AllowRule{Prefix: netip.MustParsePrefix("0.0.0.0/0")},
		sources.AllowRule{Prefix: netip.MustParsePrefix("::/0")},
		sources.AllowRule{Host: "redis.internal", Port: 6379},
		sources.AllowRule{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Port: 6379},
	)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	before := snapshot(t.Context(), t, e.pool)
	for addr, why := range map[string]string{
		"127.0.0.1:5432":          "loopback",
		"127.0.0.1:9090":          "loopback",
		"[::1]:22":                "loopback",
		"[::ffff:127.0.0.1]:6379": "loopback",
		"0.0.0.0:6379":            "unspecified",
		"169.254.169.254:80":      "link-local",
		"10.0.0.1:6379":           "private",
		"10.1.2.3:5432":           "private; port 5432 is not listed for it",
		"192.168.1.1:6379":        "private",
		"100.64.0.1:6379":         "carrier-grade NAT",
		"[fd00::1]:6379":          "private",
	} {
		_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "x", addr, "s")})
		v := violations(t, err)
		require.Contains(t, v, "adapter.config.addr", addr)
		require.Contains(t, v["adapter.config.addr"], " is not allowed by SWITCHBOARD_ADAPTER_ALLOW ("+why+")", addr)
	}
	_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "x", "127.0.0.1:5432", "s")})
	require.Equal(t, "invalid adapter.config.addr: 127.0.0.1:5432 is not allowed by SWITCHBOARD_ADAPTER_ALLOW (loopback)",
		status.Convert(toStatus(err)).Message())
	require.Equal(t, before, snapshot(t.Context(), t, e.pool), "nothing stored")

	// What the list allows is created: a public address, a listed name, a
	// private address inside a listed range.
	for i, addr := range []string{"8.8.8.8:6379", "redis.internal:6379", "10.1.2.3:6379"} {
		e.createAdapter(ctx, t, redisAt(t, fmt.Sprint("ok", i), addr, "s"))
	}

	// An update is checked the same way, and changes nothing when refused.
	a := e.createAdapter(ctx, t, redisAt(t, "moving", "redis.internal:6379", "moving"))
	before = snapshot(t.Context(), t, e.pool)
	_, err = e.srv.UpdateAdapter(ctx, &adminv1.UpdateAdapterRequest{
		Adapter:    &adminv1.Adapter{Id: a.GetId(), Config: mustStruct(t, map[string]any{"addr": "169.254.169.254:80", "stream": "s"})},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"config"}},
	})
	require.Contains(t, violations(t, err)["adapter.config.addr"], "(link-local)")
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))
}

// TestCreateAdapterWithoutAllowList: unset, the list allows nothing, and
// says so.
func TestCreateAdapterWithoutAllowList(t *testing.T) {
	t.Parallel()
	e := newEnvAllowing(t)
	alice := e.seedTenant(t, "alice")
	ctx := e.asTenant(t, mustUUID(t, alice.human.GetId()))
	for _, addr := range []string{"8.8.8.8:6379", "redis.internal:6379", "127.0.0.1:6379"} {
		_, err := e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "x", addr, "s")})
		require.Equal(t, addr+" is not allowed by SWITCHBOARD_ADAPTER_ALLOW (it is unset, so no address is allowed)",
			violations(t, err)["adapter.config.addr"])
	}
	// Push adapters connect nowhere; the list does not concern them.
	ep, _ := e.createEndpoint(ctx, t, &adminv1.Endpoint{Verification: adminv1.VerificationScheme_VERIFICATION_SCHEME_NONE}, "")
	e.createAdapter(ctx, t, &adminv1.Adapter{Name: "hook", Kind: kindWebhook, EndpointId: ep.GetId(), Queue: "hooks"})
}

// TestAdapterSourceHasOneOwner: once a human's adapter reads a Redis
// stream (server, db, stream), another human's cannot, however the server
// is spelled; the refusal names neither the owner nor its adapter.
func TestAdapterSourceHasOneOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	aliceCtx, bobCtx := e.asTenant(t, mustUUID(t, alice.human.GetId())), e.asTenant(t, mustUUID(t, bob.human.GetId()))
	mine := e.createAdapter(aliceCtx, t, redisAt(t, "orders", "redis.internal:6379", "orders"))

	for _, steal := range []*adminv1.Adapter{
		redisAt(t, "steal", "redis.internal:6379", "orders"),
		redisAt(t, "steal", "REDIS.Internal.:06379", "orders"),
		redisAt(t, "steal", "redis.internal:6379", "orders", "group", "bobs", "start", "0"), // a group of its own
	} {
		_, err := e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: steal})
		requireCode(t, codes.AlreadyExists, err)
		msg := status.Convert(toStatus(err)).Message()
		require.Equal(t, "adapter.config: another owner's adapter already reads this Redis stream (server, db and stream)", msg)
		for _, secret := range []string{alice.human.GetId(), alice.human.GetEmail(), "alice", mine.GetId()} {
			require.NotContains(t, msg, secret)
		}
	}
	// Its dead letters are out of reach too.
	_, err := e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "dlq", "redis.internal:6379", "orders:dead")})
	requireInvalid(t, err, "adapter.config.stream")
	// Another database or stream of the server is another source.
	e.createAdapter(bobCtx, t, redisAt(t, "db1", "redis.internal:6379", "orders", "db", 1))
	bobs := e.createAdapter(bobCtx, t, redisAt(t, "own", "redis.internal:6379", "bob-orders"))

	// An update cannot move onto the stream either.
	_, err = e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{
		Adapter: &adminv1.Adapter{Id: bobs.GetId(), Config: mustStruct(t, map[string]any{
			"addr": "redis.internal:6379", "stream": "orders", "group": "bobs",
		})},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"config"}},
	})
	requireCode(t, codes.AlreadyExists, err)

	// The owner may read its stream again in another group (every group
	// gets every entry), not in the same one (they would split entries).
	e.createAdapter(aliceCtx, t, redisAt(t, "audit", "redis.internal:6379", "orders", "group", "audit"))
	_, err = e.srv.CreateAdapter(aliceCtx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "again", "redis.internal:6379", "orders")})
	requireCode(t, codes.AlreadyExists, err)
	require.Contains(t, status.Convert(toStatus(err)).Message(), "in this group")
	// An administrator is held to it as well.
	_, err = e.srv.CreateAdapter(e.rootCtx(t), &adminv1.CreateAdapterRequest{Adapter: func() *adminv1.Adapter {
		a := redisAt(t, "admin", "redis.internal:6379", "orders", "group", "other")
		a.HumanId = bob.human.GetId()
		return a
	}()})
	requireCode(t, codes.AlreadyExists, err)

	// Once the owner's adapters are gone, the stream is free.
	for _, a := range listAdapters(aliceCtx, t, e) {
		_, err := e.srv.DeleteAdapter(aliceCtx, &adminv1.DeleteAdapterRequest{Id: a.GetId()})
		require.NoError(t, err)
	}
	e.createAdapter(bobCtx, t, redisAt(t, "now-mine", "redis.internal:6379", "orders"))
}

// TestAdapterSourceOwnedAsReached: the owner rule holds for the server as
// dialed, not as written: once a human's adapter reads stream S at
// 127.0.0.1:6379, every other name of that server (localhost in any case,
// with a trailing dot, another loopback address, the IPv6 loopback, an
// IPv4-mapped form) is refused for S, at create and at update, with the
// same words, naming neither the owner nor its adapter; nothing is stored.
// Another database or stream of the server is another source.
func TestAdapterSourceOwnedAsReached(t *testing.T) {
	t.Parallel()
	e := newEnvAllowing(t,
		sources.AllowRule{Prefix: netip.MustParsePrefix("127.0.0.0/8"), Port: 6379},
		sources.AllowRule{Prefix: netip.MustParsePrefix("::1/128"), Port: 6379},
	)
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	aliceCtx, bobCtx := e.asTenant(t, mustUUID(t, alice.human.GetId())), e.asTenant(t, mustUUID(t, bob.human.GetId()))
	mine := e.createAdapter(aliceCtx, t, redisAt(t, "orders", "127.0.0.1:6379", "orders"))
	const taken = "adapter.config: another owner's adapter already reads this Redis stream (server, db and stream)"

	before := snapshot(t.Context(), t, e.pool)
	for _, addr := range []string{
		"localhost:6379", "LOCALHOST:6379", "localhost.:6379", "LocalHost.:06379",
		"127.0.0.2:6379", "[::1]:6379", "[::ffff:127.0.0.1]:6379", "[0:0::1]:6379",
	} {
		for _, group := range []string{"switchboard", "bobs"} { // the owner's group, or one of its own
			_, err := e.srv.CreateAdapter(bobCtx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "steal", addr, "orders", "group", group)})
			requireCode(t, codes.AlreadyExists, err)
			msg := status.Convert(toStatus(err)).Message()
			require.Equal(t, taken, msg, addr)
			for _, secret := range []string{alice.human.GetId(), alice.human.GetEmail(), "alice", mine.GetId()} {
				require.NotContains(t, msg, secret)
			}
		}
	}
	require.Equal(t, before, snapshot(t.Context(), t, e.pool), "nothing stored")

	// An update cannot move onto it either, however spelled.
	bobs := e.createAdapter(bobCtx, t, redisAt(t, "own", "localhost:6379", "bob-orders"))
	before = snapshot(t.Context(), t, e.pool)
	_, err := e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{
		Adapter:    &adminv1.Adapter{Id: bobs.GetId(), Config: mustStruct(t, map[string]any{"addr": "Localhost.:6379", "stream": "orders"})},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"config"}},
	})
	requireCode(t, codes.AlreadyExists, err)
	require.Equal(t, taken, status.Convert(toStatus(err)).Message())
	require.Equal(t, before, snapshot(t.Context(), t, e.pool))

	// The other way round: bob reads bob-orders by name; alice cannot by address.
	_, err = e.srv.CreateAdapter(aliceCtx, &adminv1.CreateAdapterRequest{Adapter: redisAt(t, "steal", "127.0.0.1:6379", "bob-orders")})
	requireCode(t, codes.AlreadyExists, err)

	// Another database or stream of the server is another source; bob's
	// update onto one of them works and frees what he read before.
	e.createAdapter(bobCtx, t, redisAt(t, "db1", "localhost:6379", "orders", "db", 1))
	_, err = e.srv.UpdateAdapter(bobCtx, &adminv1.UpdateAdapterRequest{
		Adapter:    &adminv1.Adapter{Id: bobs.GetId(), Config: mustStruct(t, map[string]any{"addr": "[::1]:6379", "stream": "bob-new"})},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"config"}},
	})
	require.NoError(t, err)
	e.createAdapter(aliceCtx, t, redisAt(t, "now-mine", "127.0.0.1:6379", "bob-orders"))
}

// TestAdapterSourceRace: two tenants creating an adapter on one stream at
// the same moment never both succeed: the database decides (an exclusion
// constraint), not a check that both could pass before either commits.
func TestAdapterSourceRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, bob := e.seedTenant(t, "alice"), e.seedTenant(t, "bob")
	ctxs := []context.Context{e.asTenant(t, mustUUID(t, alice.human.GetId())), e.asTenant(t, mustUUID(t, bob.human.GetId()))}
	const rounds = 20
	e.setTenantLimits(t, func(l *settings.Tenant) { l.MaxAdapters = rounds })
	for round := range rounds {
		stream := fmt.Sprint("contested-", round)
		start := make(chan struct{})
		errs := make([]error, len(ctxs))
		var wg sync.WaitGroup
		for i, ctx := range ctxs {
			// Each in a group of its own: only the owner rule can refuse.
			in := redisAt(t, stream, "redis.internal:6379", stream, "group", fmt.Sprint("g", i))
			wg.Go(func() {
				<-start
				_, errs[i] = e.srv.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: in})
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
			requireCode(t, codes.AlreadyExists, err)
		}
		require.Equal(t, 1, won, "round %d: exactly one tenant gets the stream", round)
	}
	require.Zero(t, count(t, e.pool, `
		SELECT count(*) FROM (
			SELECT source_key FROM adapters WHERE source_key IS NOT NULL
			GROUP BY source_key HAVING count(DISTINCT human_id) > 1) AS shared`))
}

func listAdapters(ctx context.Context, t *testing.T, e *env) []*adminv1.Adapter {
	t.Helper()
	out, err := e.srv.ListAdapters(ctx, &adminv1.ListAdaptersRequest{})
	require.NoError(t, err)
	return out.GetAdapters()
}

// toStatus is the status a client receives for err.
func toStatus(err error) error {
	st, _ := apierr.ToStatus(err)
	return st.Err()
}
