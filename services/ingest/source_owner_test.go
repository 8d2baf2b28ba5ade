//go:build integration

package ingest_test

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/admin"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// refusedAtDial is the last_error of an adapter a node refused to let read
// (the words of ALREADY_EXISTS at create time, never the other owner's).
const refusedAtDial = "refused: another owner's adapter already reads this Redis stream (server, db and stream); this adapter reads nothing from it"

// loopbackAnyPort is SWITCHBOARD_ADAPTER_ALLOW=127.0.0.1 (every port): the
// local Redis, a test's own and the proxies in front of them.
var loopbackAnyPort = []sources.AllowRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}

// newHuman adds another tenant.
func (e *env) newHuman(t *testing.T) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&id))
	return id
}

// adapterOf creates, as human's own admin, a redis_stream adapter reading
// stream at addr from its start (in group, "" for the default one), under
// allow.
func (e *env) adapterOf(t *testing.T, allow *sources.Allowlist, human uuid.UUID, name, addr, stream, group string) uuid.UUID {
	t.Helper()
	adm := admin.New(zap.NewNop(), e.pool, auth.NewStore(e.pool, auth.NewHasher(make([]byte, 32))), sources.New(e.pool, e.keys, allow))
	ctx := auth.NewContext(t.Context(), auth.Principal{CredentialID: uuid.New(), HumanID: human, Scopes: []auth.Scope{auth.ScopeAdmin}})
	c := map[string]any{"addr": addr, "stream": stream, "start": "0"}
	if group != "" {
		c["group"] = group
	}
	cfg, err := structpb.NewStruct(c)
	require.NoError(t, err)
	created, err := adm.CreateAdapter(ctx, &adminv1.CreateAdapterRequest{Adapter: &adminv1.Adapter{
		Name: name, Kind: adminv1.AdapterKind_ADAPTER_KIND_REDIS_STREAM, Queue: "stream", Config: cfg,
	}})
	require.NoError(t, err, "%s at %s", name, addr)
	return uuid.MustParse(created.GetAdapter().GetId())
}

// eventsOf counts human's events.
func (e *env) eventsOf(t *testing.T, human uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE human_id = $1`, human).Scan(&n))
	return n
}

// serverSince is when the adapter's record says it began reading (nil: no
// record).
func (e *env) serverSince(t *testing.T, id uuid.UUID) *time.Time {
	t.Helper()
	var since *time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT server_since FROM adapters WHERE id = $1`, id).Scan(&since))
	return since
}

func addEntries(t *testing.T, rdb *redis.Client, stream string, n int) {
	t.Helper()
	for i := range n {
		require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": fmt.Sprintf(`{"n":%d}`, i)}}).Err())
	}
}

// TestNodeRefusesAnAliasOfAnOwnedStream: tenant B's adapter reads stream S
// on the local Redis at 127.0.0.1:6379. Tenant A's adapters reach the same
// server through another address (a proxy: no address comparison can tell)
// for S, one in B's own consumer group, one in a group of its own; both
// pass creation. The node asks the server who it is before reading: A's
// adapters are refused before a single command (no group of A's exists),
// say so in their last_error, and B receives every entry.
func TestNodeRefusesAnAliasOfAnOwnedStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	allow := sources.NewAllowlist(loopbackAnyPort, nil)
	owner := e.adapterOf(t, allow, e.human, "orders", "127.0.0.1:6379", stream, "")
	thief := e.newHuman(t)
	alias := proxy(t, "127.0.0.1:6379")
	inOwnersGroup := e.adapterOf(t, allow, thief, "steal", alias, stream, "")
	inItsGroup := e.adapterOf(t, allow, thief, "copy", alias, stream, "thief")
	e.startNodeWith(t, "node-alias", allow)

	const entries = 50
	addEntries(t, rdb, stream, entries)
	require.Eventually(t, func() bool {
		return e.lastError(t, inOwnersGroup) == refusedAtDial && e.lastError(t, inItsGroup) == refusedAtDial
	}, time.Minute, 20*time.Millisecond)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == entries }, time.Minute, 20*time.Millisecond,
		"the owner receives every entry")
	addEntries(t, rdb, stream, entries)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == 2*entries }, time.Minute, 20*time.Millisecond)
	require.Zero(t, e.eventsOf(t, thief), "the alias read nothing")
	require.Empty(t, e.lastError(t, owner))
	groups, err := rdb.XInfoGroups(t.Context(), stream).Result()
	require.NoError(t, err)
	require.Len(t, groups, 1, "the thief's own group was never created")
	require.Equal(t, "switchboard", groups[0].Name)
	// The owner acknowledges an entry after its event committed, so the
	// last ones can still be pending when the count above is reached (5 were,
	// once, with both cores saturated): wait for the acks.
	require.Eventually(t, func() bool {
		groups, err := rdb.XInfoGroups(t.Context(), stream).Result()
		return err == nil && len(groups) == 1 && groups[0].Pending == 0
	}, time.Minute, 20*time.Millisecond, "the owner acknowledges every entry")
}

// TestNodeRefusesANameThatNowReachesAnOwnedStream: A's adapter names a
// host that resolved elsewhere when it was created; DNS now answers with
// the address of B's server. The node refuses it at dial time, on the
// address dialed, and B receives every entry.
func TestNodeRefusesANameThatNowReachesAnOwnedStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	dns := newDNS("192.0.2.10")
	allow := sources.NewAllowlist([]sources.AllowRule{
		{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 6379}, {Prefix: netip.MustParsePrefix("0.0.0.0/0")},
	}, dns.resolver())
	e.adapterOf(t, allow, e.human, "orders", "127.0.0.1:6379", stream, "")
	thief := e.newHuman(t)
	rebound := e.adapterOf(t, allow, thief, "steal", "cache.example:6379", stream, "")
	dns.set("127.0.0.1")
	e.startNodeWith(t, "node-dns", allow)

	const entries = 30
	addEntries(t, rdb, stream, entries)
	require.Eventually(t, func() bool { return e.lastError(t, rebound) == refusedAtDial }, time.Minute, 20*time.Millisecond)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == entries }, time.Minute, 20*time.Millisecond)
	require.Zero(t, e.eventsOf(t, thief))
}

// TestNodeRefusesAnAliasStoredBeforeAddressesWereCompared: an adapter
// stored before 00031 with addr "localhost:6379" for B's stream, older than
// B's adapter on 127.0.0.1:6379, has no address keys (00031 keys only IP
// addresses). The node refuses it at dial time (the address dialed is
// B's), and B's adapter is not held back by it: one refused at its own
// address outranks no one.
func TestNodeRefusesAnAliasStoredBeforeAddressesWereCompared(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	allow := sources.NewAllowlist(loopbackAnyPort, nil)
	e.adapterOf(t, allow, e.human, "orders", "127.0.0.1:6379", stream, "")
	thief := e.newHuman(t)
	var legacy uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		INSERT INTO adapters (human_id, name, kind, queue, config, source_key, created_at, source_since)
		VALUES ($1, 'old', 'redis_stream', 'stream',
		        jsonb_build_object('addr', 'localhost:6379', 'stream', $2::text, 'group', 'switchboard', 'start', '0', 'db', 0,
		                           'username', '', 'body_field', 'body', 'max_deliveries', 5, 'batch_size', 100),
		        'localhost:6379/0/' || $2, now() - interval '1 day', now() - interval '1 day')
		RETURNING id`, thief, stream).Scan(&legacy))
	e.startNodeWith(t, "node-legacy", allow)

	const entries = 30
	addEntries(t, rdb, stream, entries)
	require.Eventually(t, func() bool { return e.lastError(t, legacy) == refusedAtDial }, time.Minute, 20*time.Millisecond)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == entries }, time.Minute, 20*time.Millisecond)
	require.Zero(t, e.eventsOf(t, thief))
}

// TestOlderAdapterKeepsItsStreamAcrossARedisRestart: a restarted Redis has
// a new run_id, so the record of who reads it no longer matches. B reads S
// on a Redis server of the test's own; A's adapter reaches it through a
// proxy and is refused. B is disabled, the server restarts, and A's
// adapter reconnects first: it is still refused (the node probes B's addr,
// finds the same server there, and B recorded that address), and once B
// runs again it reads every entry, keeping the time it began reading.
func TestOlderAdapterKeepsItsStreamAcrossARedisRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := newOwnRedis(t)
	rdb := own.client()
	t.Cleanup(func() { _ = rdb.Close() })
	stream := "sbtest:restart:" + uuid.NewString()
	allow := sources.NewAllowlist(loopbackAnyPort, nil)
	owner := e.adapterOf(t, allow, e.human, "orders", own.Addr, stream, "")
	thief := e.newHuman(t)
	alias := e.adapterOf(t, allow, thief, "steal", proxy(t, own.Addr), stream, "")
	srv := e.startNodeWith(t, "node-restart", allow)
	require.Eventually(t, func() bool { return e.serverSince(t, owner) != nil && e.lastError(t, alias) == refusedAtDial },
		time.Minute, 20*time.Millisecond)
	since := e.serverSince(t, owner)

	_, err := e.pool.Exec(t.Context(), `UPDATE adapters SET enabled = false WHERE id = $1`, owner)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return srv.RunningAdapters() == 1 }, time.Minute, 20*time.Millisecond)
	// The server goes away (the alias's retries fail otherwise), then
	// comes back as a new process: the alias's next connection reaches it
	// before the owner's.
	before := own.runID()
	own.stop()
	require.Eventually(t, func() bool { return e.lastError(t, alias) != refusedAtDial }, time.Minute, 20*time.Millisecond)
	own.start()
	require.NotEqual(t, before, own.runID(), "a new server process names itself anew")
	require.Eventually(t, func() bool { return e.lastError(t, alias) == refusedAtDial }, time.Minute, 20*time.Millisecond,
		"the new server process is still the owner's")

	const entries = 40
	addEntries(t, rdb, stream, entries)
	_, err = e.pool.Exec(t.Context(), `UPDATE adapters SET enabled = true WHERE id = $1`, owner)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == entries }, time.Minute, 20*time.Millisecond)
	require.Zero(t, e.eventsOf(t, thief))
	require.Equal(t, since, e.serverSince(t, owner), "the owner kept its standing across the restart")
	require.Equal(t, refusedAtDial, e.lastError(t, alias))
}

// TestNodeStopsAnAdapterThatLostItsStream: an adapter reading a stream
// whose record an older adapter of another owner takes (its claim comes
// later, say its node could not probe when this one claimed) is stopped
// by its node at the next reconcile, refused on reconnecting, and reads
// no more.
func TestNodeStopsAnAdapterThatLostItsStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rdb := newRedis(t)
	stream := newStream(t, rdb)
	allow := sources.NewAllowlist(loopbackAnyPort, nil)
	reader := e.adapterOf(t, allow, e.human, "orders", "127.0.0.1:6379", stream, "")
	e.startNodeWith(t, "node-lost", allow)
	addEntries(t, rdb, stream, 5)
	require.Eventually(t, func() bool { return e.eventsOf(t, e.human) == 5 }, time.Minute, 20*time.Millisecond)
	// Another owner's adapter on the same server, through another address,
	// not running here (its node is another one, say).
	elder := e.adapterOf(t, allow, e.newHuman(t), "orders", proxy(t, "127.0.0.1:6379"), stream, "")
	_, err := e.pool.Exec(t.Context(), `UPDATE adapters SET enabled = false WHERE id = $1`, elder)
	require.NoError(t, err)

	// The elder's claim, as its node makes it: it read this server at its
	// address since long before.
	var key, addrKey string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT server_key, server_addr_key FROM adapters WHERE id = $1`, reader).Scan(&key, &addrKey))
	_, port, err := net.SplitHostPort(e.configAddr(t, elder))
	require.NoError(t, err)
	elderAddrKey := "loopback:" + port + "/0/" + stream
	_, err = e.pool.Exec(t.Context(), `UPDATE adapters SET server_key = $2, server_addr_key = $3, server_since = now() - interval '1 day'
		WHERE id = $1`, elder, "0000000000000000000000000000000000000000/0/"+stream, elderAddrKey)
	require.NoError(t, err)
	src := sources.New(e.pool, e.keys, allow)
	require.NoError(t, src.ClaimServer(t.Context(), sources.ServerClaim{AdapterID: elder, ServerKey: key, AddrKey: elderAddrKey}))

	require.Eventually(t, func() bool { return e.lastError(t, reader) == refusedAtDial }, time.Minute, 20*time.Millisecond)
	addEntries(t, rdb, stream, 5)
	groups, err := rdb.XInfoGroups(t.Context(), stream).Result()
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.EqualValues(t, 5, groups[0].Lag, "nobody reads the new entries: the elder is disabled, the reader refused")
	require.Equal(t, 5, e.eventsOf(t, e.human))
}

// configAddr is the adapter's stored addr.
func (e *env) configAddr(t *testing.T, id uuid.UUID) string {
	t.Helper()
	var addr string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT config ->> 'addr' FROM adapters WHERE id = $1`, id).Scan(&addr))
	return addr
}
