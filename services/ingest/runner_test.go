//go:build integration

package ingest_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// allowLocalRedis is SWITCHBOARD_ADAPTER_ALLOW=127.0.0.1:6379, what a
// developer sets for the local Redis.
var allowLocalRedis = []sources.AllowRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 6379}}

// newRedis connects to the real Redis the adapter tests need.
func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err(), "these tests need the real Redis on 127.0.0.1:6379 (deploy/local/redis.sh)")
	return rdb
}

// newStream names a stream for this test, deleted (with its dead letters)
// at cleanup.
func newStream(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	stream := "sbtest:runner:" + uuid.NewString()
	t.Cleanup(func() { _ = rdb.Del(context.Background(), stream, stream+":dead").Err() })
	return stream
}

// startNode starts the ingest service of a node whose operator set allow,
// with its adapter runner; it stops at cleanup.
func (e *env) startNode(t *testing.T, nodeID string, allow []sources.AllowRule) *ingest.Server {
	t.Helper()
	return e.startNodeWith(t, nodeID, sources.NewAllowlist(allow, nil))
}

// startNodeWith is startNode under an allow list with its own resolver.
func (e *env) startNodeWith(t *testing.T, nodeID string, allow *sources.Allowlist) *ingest.Server {
	t.Helper()
	src := sources.New(e.pool, e.keys, allow)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{
		SealingKeys: e.keys, Sources: src, NodeID: nodeID, AdapterInterval: 50 * time.Millisecond,
	})
	srv.SetAdapterStatusGap(50 * time.Millisecond)
	srv.SetAdapterBackoff(20*time.Millisecond, 200*time.Millisecond)
	for _, c := range srv.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
	return srv
}

// createAdapter creates a redis_stream adapter of the env's tenant through
// AdminService, under the operator's allow list.
func (e *env) createAdapter(t *testing.T, allow []sources.AllowRule, stream string) uuid.UUID {
	t.Helper()
	return e.createAdapterVia(t, sources.New(e.pool, e.keys, sources.NewAllowlist(allow, nil)), stream)
}

// createAdapterVia is createAdapter through an AdminService over src.
func (e *env) createAdapterVia(t *testing.T, src *sources.Store, stream string) uuid.UUID {
	t.Helper()
	cfg, err := structpb.NewStruct(map[string]any{"addr": "127.0.0.1:6379", "stream": stream, "start": "0"})
	require.NoError(t, err)
	created, err := e.adminOver(src).CreateAdapter(e.adminContext(t), &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		Name: "events", Kind: adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM, Queue: "stream", Config: cfg,
	}})
	require.NoError(t, err)
	return uuid.MustParse(created.GetAdapter().GetId())
}

// startComponent starts c and stops it at cleanup.
func startComponent(t *testing.T, c lifecycle.Component) {
	t.Helper()
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
}

// TestAdapterChangesReachEveryNodesRunnerAtOnce: an adapter created and
// then deleted through another node's AdminService starts and stops on this
// node's runner at once, announced through NOTIFY: the runner here
// reconciles once an hour. (A create that commits before this node listens
// is found by the reconcile its listen connection's OnConnect asks for; the
// delete comes after the adapter ran here, so the connection was up and
// only the notification can stop it.)
func TestAdapterChangesReachEveryNodesRunnerAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	here := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	src := sources.New(e.pool, e.keys, sources.NewAllowlist(allowLocalRedis, nil))
	src.UseNotifier(here)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{
		SealingKeys: e.keys, Sources: src, NodeID: "node-n", AdapterInterval: time.Hour,
	})
	startComponent(t, here)
	for _, c := range srv.Components() {
		startComponent(t, c)
	}

	there := pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})
	otherSrc := sources.New(e.pool, e.keys, sources.NewAllowlist(allowLocalRedis, nil))
	otherSrc.UseNotifier(there)
	startComponent(t, there)

	id := e.createAdapterVia(t, otherSrc, stream)
	require.Eventually(t, func() bool { return srv.RunningAdapters() == 1 }, time.Minute, 10*time.Millisecond,
		"the runner started the adapter another node created")
	_, err := e.adminOver(otherSrc).DeleteAdapter(e.adminContext(t), &adminv1.DeleteAdapterRequest{Id: id.String()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.RunningAdapters() == 0 }, time.Minute, 10*time.Millisecond,
		"the runner stopped the adapter another node deleted")
}

// lastError is the adapter's last_error ("" for NULL).
func (e *env) lastError(t *testing.T, id uuid.UUID) string {
	t.Helper()
	var s *string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT last_error FROM adapters WHERE id = $1`, id).Scan(&s))
	if s == nil {
		return ""
	}
	return *s
}

// TestNodeRunsEnabledRedisAdapters: an adapter created through
// AdminService at an address the operator allows makes the service run a
// consumer of it (named after the node); entries become events and todos;
// disabling the row stops it (new entries stay in Redis).
func TestNodeRunsEnabledRedisAdapters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	adapterID := e.createAdapter(t, allowLocalRedis, stream)
	srv := e.startNode(t, "node-a", allowLocalRedis)
	for i := range 3 {
		require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": fmt.Sprintf(`{"n":%d}`, i)}}).Err())
	}
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'stream'`) == 3
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, 1, srv.RunningAdapters())
	consumers, err := rdb.XInfoConsumers(t.Context(), stream, "switchboard").Result()
	require.NoError(t, err)
	require.Len(t, consumers, 1)
	require.Equal(t, "node-a", consumers[0].Name)
	require.Empty(t, e.lastError(t, adapterID))

	_, err = e.pool.Exec(t.Context(), `UPDATE adapters SET enabled = false WHERE id = $1`, adapterID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.RunningAdapters() == 0 }, time.Minute, 20*time.Millisecond,
		"the runner stops a disabled adapter")
	// Stopped means its consumer returned: a new entry stays unread.
	require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{"n":9}`}}).Err())
	groups, err := rdb.XInfoGroups(t.Context(), stream).Result()
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.EqualValues(t, 1, groups[0].Lag, "nobody read the new entry")
	require.Equal(t, 3, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	var lastPolled *time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT last_polled_at FROM adapters WHERE id = $1`, adapterID).Scan(&lastPolled))
	require.NotNil(t, lastPolled)
}

// TestNodeDialsOnlyWhatTheListAllows: an adapter stored while the list
// allowed its address stops reaching it once the operator narrows the list
// and restarts: the dial is refused (nothing reaches Redis, no group is
// created, nothing is stored) and last_error says why.
func TestNodeDialsOnlyWhatTheListAllows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{}`}}).Err())
	adapterID := e.createAdapter(t, allowLocalRedis, stream)

	srv := e.startNode(t, "node-b", []sources.AllowRule{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}})
	require.Eventually(t, func() bool {
		return e.lastError(t, adapterID) == "dial 127.0.0.1:6379: refused by SWITCHBOARD_ADAPTER_ALLOW (loopback)"
	}, time.Minute, 20*time.Millisecond)
	require.Equal(t, 1, srv.RunningAdapters(), "it keeps trying, with backoff, in case the name resolves elsewhere")
	groups, err := rdb.XInfoGroups(t.Context(), stream).Result()
	require.NoError(t, err)
	require.Empty(t, groups, "the adapter never reached Redis")
	require.Zero(t, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
}

// TestNodeRecordsWhyAnAdapterFails: a failing step's reason reaches the
// row's last_error (the server's reply, not a log line only), and the first
// step that works clears it.
func TestNodeRecordsWhyAnAdapterFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	require.NoError(t, rdb.Set(t.Context(), stream, "a string, not a stream", 0).Err())
	adapterID := e.createAdapter(t, allowLocalRedis, stream)
	e.startNode(t, "node-c", allowLocalRedis)

	require.Eventually(t, func() bool {
		return e.lastError(t, adapterID) == "create consumer group: WRONGTYPE Operation against a key holding the wrong kind of value"
	}, time.Minute, 20*time.Millisecond)

	require.NoError(t, rdb.Del(t.Context(), stream).Err())
	require.Eventually(t, func() bool { return e.lastError(t, adapterID) == "" }, time.Minute, 20*time.Millisecond,
		"recovered: cleared")
	require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{}`}}).Err())
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`) == 1
	}, time.Minute, 20*time.Millisecond)
}
