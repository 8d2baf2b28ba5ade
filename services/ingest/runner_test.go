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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
	for i := range 3 {
		require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": fmt.Sprintf(`{"n":%d}`, i)}}).Err())
	}
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'stream'`) == 3
	}, 10*time.Second, 20*time.Millisecond)
	consumers, err := rdb.XInfoConsumers(t.Context(), stream, "switchboard").Result()
	require.NoError(t, err)
	require.Len(t, consumers, 1)
	require.Equal(t, "node-a", consumers[0].Name)

	_, err = e.pool.Exec(t.Context(), `UPDATE adapters SET enabled = false WHERE id = $1`, adapterID)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // several reconciles
	require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": `{"n":9}`}}).Err())
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, 3, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`), "a disabled adapter reads nothing")
	var lastPolled *time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT last_polled_at FROM adapters WHERE id = $1`, adapterID).Scan(&lastPolled))
	require.NotNil(t, lastPolled)
}
