package redisstream_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
)

// TestParseStoredFillsDefaults: the minimal config stores every default,
// the same ones the runtime Config falls back to.
func TestParseStoredFillsDefaults(t *testing.T) {
	t.Parallel()
	c, violations := redisstream.ParseStored(map[string]any{"addr": "redis:6379", "stream": "in"})
	require.Empty(t, violations)
	require.Equal(t, redisstream.StoredConfig{
		Addr: "redis:6379", Stream: "in", Group: redisstream.DefaultGroup, Start: "$",
		BodyField: redisstream.DefaultBodyField, MaxDeliveries: redisstream.DefaultMaxDeliveries, BatchSize: redisstream.DefaultBatchSize,
	}, c)
	rc := c.Config("id-1", "node-a", nil)
	require.Equal(t, "node-a", rc.Consumer)
	require.Equal(t, "id-1", rc.ID)
	require.EqualValues(t, redisstream.DefaultBatchSize, rc.BatchSize)
}

// TestParseStoredNamesEveryViolation: each bad key is named, in key order.
func TestParseStoredNamesEveryViolation(t *testing.T) {
	t.Parallel()
	_, violations := redisstream.ParseStored(map[string]any{
		"addr": "no-port", "password": "x", "start": "5", "db": 99.0, "batch_size": 1.5, "zz": true,
	})
	require.Equal(t, []apierr.FieldViolation{
		{Field: "password", Description: "passwords are not supported yet: they would be stored in clear"},
		{Field: "zz", Description: "is not a known key; allowed: addr, stream, group, start, db, username, body_field, max_deliveries, batch_size"},
		{Field: "addr", Description: `must be "host:port"`},
		{Field: "stream", Description: "is required"},
		{Field: "start", Description: `must be "$" (new entries only) or "0" (the whole stream)`},
		{Field: "db", Description: "must be between 0 and 15"},
		{Field: "batch_size", Description: "must be an integer"},
	}, violations)
}

// TestParseStoredNormalizesAddr: one server is stored one way (case,
// trailing dot, port digits, IPv6 form), and a host is an IP address or a
// DNS name, never userinfo or a zone.
func TestParseStoredNormalizesAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Redis.Internal.:6379":      "redis.internal:6379",
		"redis.internal:06379":      "redis.internal:6379",
		"LOCALHOST:6379":            "localhost:6379",
		"127.0.0.1:6379":            "127.0.0.1:6379",
		"[::1]:6379":                "[::1]:6379",
		"[0:0::0001]:6379":          "[::1]:6379",
		"[FD00::A]:6379":            "[fd00::a]:6379",
		"[::ffff:10.0.0.1]:6379":    "10.0.0.1:6379",
		"my_redis-1.svc.local:6380": "my_redis-1.svc.local:6380",
	} {
		c, violations := redisstream.ParseStored(map[string]any{"addr": in, "stream": "s"})
		require.Empty(t, violations, in)
		require.Equal(t, want, c.Addr, in)
	}
	for _, in := range []string{"user:pass@redis:6379", "pass@redis:6379", "[fe80::1%eth0]:6379", "re dis:6379", "10.0.0:6379", "-a:1", "a..b:1"} {
		_, violations := redisstream.ParseStored(map[string]any{"addr": in, "stream": "s"})
		require.Len(t, violations, 1, in)
		require.Equal(t, "addr", violations[0].Field, in)
	}
}

// TestParseStoredRefusesDeadLetterStreams: a dead-letter stream holds the
// entries of another adapter's stream; no adapter reads one.
func TestParseStoredRefusesDeadLetterStreams(t *testing.T) {
	t.Parallel()
	_, violations := redisstream.ParseStored(map[string]any{"addr": "redis:6379", "stream": "orders" + redisstream.DeadLetterSuffix})
	require.Equal(t, []apierr.FieldViolation{
		{Field: "stream", Description: `must not end in ":dead": that suffix names dead-letter streams`},
	}, violations)
}

// TestSourceKey: the key names server, database and stream, normalized
// even for a config stored before normalization.
func TestSourceKey(t *testing.T) {
	t.Parallel()
	c, violations := redisstream.ParseStored(map[string]any{"addr": "Redis.Internal:06379", "stream": "Orders", "db": 2.0})
	require.Empty(t, violations)
	require.Equal(t, "redis.internal:6379/2/Orders", c.SourceKey())
	legacy := redisstream.StoredConfig{Addr: "REDIS.internal.:6379", Stream: "Orders", DB: 2}
	require.Equal(t, c.SourceKey(), legacy.SourceKey())
	other := redisstream.StoredConfig{Addr: "redis.internal:6379", Stream: "Orders", DB: 3}
	require.NotEqual(t, c.SourceKey(), other.SourceKey(), "another database is another keyspace")
}

// TestAddrAndServerKeys: the keys ownership is compared on name what an
// addr reaches (every loopback address alike, IPv4-mapped as IPv4) and
// what the server calls itself, each with the database and the stream.
func TestAddrAndServerKeys(t *testing.T) {
	t.Parallel()
	c := redisstream.StoredConfig{Addr: "localhost:6379", Stream: "orders", DB: 1}
	require.Equal(t, []string{"loopback:6379/1/orders", "10.0.0.1:6379/1/orders"}, c.AddrKeys([]netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:6379"), netip.MustParseAddrPort("[::1]:6379"),
		netip.MustParseAddrPort("[::ffff:10.0.0.1]:6379"), netip.MustParseAddrPort("10.0.0.1:6379"),
	}))
	require.Equal(t, "[2001:db8::1]:6380/1/orders", c.AddrKey(netip.MustParseAddrPort("[2001:db8::1]:6380")))
	require.Equal(t, "0123456789abcdef0123456789abcdef01234567/1/orders", c.ServerKey("0123456789abcdef0123456789abcdef01234567"))
}
