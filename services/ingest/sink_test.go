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
	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
	"github.com/switchboard/switchboard/services/ingest/sources"
)

// sinkFunc adapts a function to adapter.Sink.
type sinkFunc func(ctx context.Context, id string, msgs []adapter.Message) error

func (f sinkFunc) Store(ctx context.Context, id string, msgs []adapter.Message) error {
	return f(ctx, id, msgs)
}

// TestRedisAdapterKilledBetweenStoreAndAck: the Redis Streams adapter with
// the real store. The first run commits the events and todos and dies before
// acknowledging; a restarted adapter re-reads the pending entries, stores
// nothing new (the entry id is the event's delivery id) and acknowledges
// them. Nothing lost, nothing stored twice.
func TestRedisAdapterKilledBetweenStoreAndAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	var adapterID uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO adapters (human_id, name, kind, queue) VALUES ($1, 'orders', 'redis_stream', 'orders') RETURNING id`,
		e.human).Scan(&adapterID))
	target := ingest.AdapterTarget{ID: adapterID, HumanID: e.human, Queue: "orders"}
	store := srv.AdapterSink(target)

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379",
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err(), "these tests need the real Redis on 127.0.0.1:6379 (deploy/local/redis.sh)")
	stream := "sbtest:sink:" + uuid.NewString()
	t.Cleanup(func() { _ = rdb.Del(context.Background(), stream, stream+redisstream.DeadLetterSuffix).Err() })
	for i := range 5 {
		require.NoError(t, rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": fmt.Sprintf(`{"order":%d}`, i)}}).Err())
	}
	cfg := redisstream.Config{
		ID: adapterID.String(), Addr: "127.0.0.1:6379", Dialer: sources.NewAllowlist(allowLocalRedis, nil).DialContext, Stream: stream, Group: "g", Consumer: "c1", StartID: "0",
		Block: 100 * time.Millisecond, Backoff: adapter.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
	pending := func() int64 {
		p, err := rdb.XPending(context.Background(), stream, "g").Result()
		require.NoError(t, err)
		return p.Count
	}

	// Run 1: stored and committed, then killed before the acknowledgement.
	first, err := redisstream.New(cfg)
	require.NoError(t, err)
	ctx, kill := context.WithCancel(t.Context())
	crashed := sinkFunc(func(ctx context.Context, id string, msgs []adapter.Message) error {
		if err := store.Store(ctx, id, msgs); err != nil {
			return err
		}
		kill()
		return context.Canceled // never acknowledged, as if the process died here
	})
	require.NoError(t, first.Run(ctx, crashed))
	require.Equal(t, 5, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.EqualValues(t, 5, pending(), "stored but not acknowledged")

	// Run 2: the same consumer after a restart.
	second, err := redisstream.New(cfg)
	require.NoError(t, err)
	ctx2, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx2, store) }()
	require.Eventually(t, func() bool { return pending() == 0 }, time.Minute, 20*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	require.Equal(t, 5, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND source = 'adapter:' || (SELECT id FROM adapters LIMIT 1)`))
	require.Equal(t, 5, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'orders' AND kind = 'adapter'`))
	require.Equal(t, 5, e.count(t, `SELECT count(DISTINCT delivery_id) FROM events WHERE human_id = $1 AND adapter_id IS NOT NULL`))
}
