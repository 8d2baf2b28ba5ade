//go:build integration

package redisstream

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

const waitFor, tick = 60 * time.Second, 20 * time.Millisecond // waitFor: a safety net

func TestStoresOnceAndAcks(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	cfg.BatchSize = 4 // several batches
	ids := addEntries(t, rdb, cfg.Stream, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	sink := newSink()
	start(t, cfg, sink)

	require.Eventually(t, func() bool { return sink.storedCount() == len(ids) }, waitFor, tick)
	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	for _, id := range ids {
		assert.Equal(t, 1, sink.seenCount(id), "entry %s presented once", id)
	}
	// Entries added while running are picked up too.
	more := addEntries(t, rdb, cfg.Stream, "k")
	require.Eventually(t, func() bool { return sink.storedCount() == len(ids)+1 }, waitFor, tick)
	assert.Equal(t, "k", sink.storedBodies()[more[0]])
}

func TestCrashBetweenStoreAndAck(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	ids := addEntries(t, rdb, cfg.Stream, "a", "b", "c")
	sink := newSink()

	// First instance: the store succeeds, then the process "dies" before XACK.
	var cancel func()
	assigned := make(chan struct{})
	sink.after = func([]adapter.Message) { <-assigned; cancel() }
	cancel, wait := start(t, cfg, sink)
	close(assigned)
	require.NoError(t, wait())
	require.Equal(t, len(ids), sink.storedCount())
	require.Equal(t, int64(len(ids)), pendingCount(t, rdb, cfg), "entries must stay pending after the crash")

	// Second instance, same consumer name: re-reads its PEL, the sink dedups.
	sink.mu.Lock()
	sink.after = nil
	sink.mu.Unlock()
	start(t, cfg, sink)
	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	assert.Equal(t, len(ids), sink.storedCount(), "nothing stored twice")
	for _, id := range ids {
		assert.Equal(t, 2, sink.seenCount(id), "entry %s presented again after the crash", id)
	}
}

func TestSinkFailureRetried(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	ids := addEntries(t, rdb, cfg.Stream, "a", "b", "c")
	sink := newSink()
	sink.fail = func(call int, _ []adapter.Message) error {
		if call <= 2 {
			return fmt.Errorf("database down (call %d)", call)
		}
		return nil
	}
	start(t, cfg, sink)

	// Stored first: an empty pending list alone also holds before anything
	// was read.
	require.Eventually(t, func() bool { return sink.storedCount() == len(ids) }, waitFor, tick)
	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	assert.Equal(t, len(ids), sink.storedCount())
	n, err := rdb.XLen(t.Context(), cfg.Stream+DeadLetterSuffix).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a transient failure must not dead-letter")
}

func TestSinkUnavailableNeverDeadLetters(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	cfg.MaxDeliveries = 2
	addEntries(t, rdb, cfg.Stream, "a", "b")
	sink := newSink()
	sink.fail = func(call int, _ []adapter.Message) error {
		if call <= 6 {
			return fmt.Errorf("connect: %w", adapter.ErrSinkUnavailable)
		}
		return nil
	}
	start(t, cfg, sink)

	require.Eventually(t, func() bool { return sink.storedCount() == 2 }, waitFor, tick)
	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	assert.Equal(t, 2, sink.storedCount())
	n, err := rdb.XLen(t.Context(), cfg.Stream+DeadLetterSuffix).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestReclaimsAbandonedEntries(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	require.NoError(t, rdb.XGroupCreateMkStream(t.Context(), cfg.Stream, cfg.Group, "0").Err())
	ids := addEntries(t, rdb, cfg.Stream, "a", "b", "c")
	// Consumer A reads and dies without acking.
	got, err := rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{
		Group: cfg.Group, Consumer: "A", Streams: []string{cfg.Stream, ">"}, Count: 10, Block: -1,
	}).Result()
	require.NoError(t, err)
	require.Len(t, got[0].Messages, len(ids))

	cfg.Consumer = "B"
	cfg.ClaimIdle = 200 * time.Millisecond
	cfg.ClaimInterval = 50 * time.Millisecond
	sink := newSink()
	start(t, cfg, sink)

	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	assert.Equal(t, len(ids), sink.storedCount())
}

func TestPoisonEntryDeadLettered(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	cfg.MaxDeliveries = 3
	ids := addEntries(t, rdb, cfg.Stream, "ok1", "poison", "ok2", "ok3")
	sink := newSink()
	sink.fail = func(_ int, msgs []adapter.Message) error {
		for _, m := range msgs {
			if string(m.Body) == "poison" {
				return errors.New("cannot parse poison")
			}
		}
		return nil
	}
	start(t, cfg, sink)

	dead := cfg.Stream + DeadLetterSuffix
	require.Eventually(t, func() bool { return rdb.XLen(t.Context(), dead).Val() == 1 }, waitFor, tick)
	require.Eventually(t, func() bool { return pendingCount(t, rdb, cfg) == 0 }, waitFor, tick)
	assert.Equal(t, map[string]string{ids[0]: "ok1", ids[2]: "ok2", ids[3]: "ok3"}, sink.storedBodies())
	entries, err := rdb.XRange(t.Context(), dead, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	v := entries[0].Values
	assert.Equal(t, ids[1], v[DeadFieldOriginalID])
	assert.Equal(t, "poison", v["body"])
	assert.Equal(t, "test", v["kind"])
	assert.Contains(t, v[DeadFieldReason], "cannot parse poison")
	assert.Equal(t, "3", v[DeadFieldDeliveries])
	assert.Equal(t, cfg.Stream, v[DeadFieldStream])
}

func TestShutdownWhileBlocked(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	cfg := testConfig(t, rdb)
	// Blocked far longer than the test may take: Run returning at all
	// (within stopGuard) shows it did not wait the read out, however slow
	// the machine is; no wall-clock bound on the stop is needed.
	cfg.Block = time.Hour
	cancel, wait := start(t, cfg, newSink())
	// Wait until the consumer exists, i.e. it has issued XREADGROUP.
	require.Eventually(t, func() bool {
		cs, err := rdb.XInfoConsumers(t.Context(), cfg.Stream, cfg.Group).Result()
		return err == nil && len(cs) == 1
	}, waitFor, tick)
	// ... and that its connection is now blocked in the read with ">".
	require.Eventually(t, func() bool {
		list, err := rdb.ClientList(t.Context()).Result()
		if err != nil {
			return false
		}
		for line := range strings.SplitSeq(list, "\n") {
			if strings.Contains(line, " name="+clientName(cfg)+" ") && strings.Contains(line, " flags=b ") {
				return true
			}
		}
		return false
	}, waitFor, tick)

	cancel()
	require.NoError(t, wait(), "Run must return when cancelled, not when the read times out")
}
