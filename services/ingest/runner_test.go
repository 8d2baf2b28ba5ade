//go:build integration

package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest"
)

// TestNodeRunsEnabledRedisAdapters: an enabled redis_stream row makes the
// service run a consumer of it (named after the node); entries become events
// and todos; disabling the row stops it (new entries stay in Redis).
func TestNodeRunsEnabledRedisAdapters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, NodeID: "node-a", AdapterInterval: 50 * time.Millisecond})
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err(), "these tests need the real Redis on 127.0.0.1:6379 (deploy/local/redis.sh)")
	stream := "sbtest:runner:" + uuid.NewString()
	t.Cleanup(func() { _ = rdb.Del(context.Background(), stream, stream+":dead").Err() })
	config := fmt.Sprintf(`{"addr":"127.0.0.1:6379","stream":%q,"group":"switchboard","start":"0","db":0,"username":"","body_field":"body","max_deliveries":5,"batch_size":100}`, stream)
	var adapterID uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO adapters (human_id, name, kind, queue, config) VALUES ($1, 'events', 'redis_stream', 'stream', $2) RETURNING id`,
		e.human, config).Scan(&adapterID))
	for _, c := range srv.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
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
