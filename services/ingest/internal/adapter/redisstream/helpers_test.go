//go:build integration

package redisstream

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

const redisAddr = "127.0.0.1:6379"

// allowRedis is the allow list the tests run under: the local Redis only
// (the operator's SWITCHBOARD_ADAPTER_ALLOW=127.0.0.1:6379).
var allowRedis = adapter.NewAllowlist([]adapter.AllowRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 6379}}, nil)

// newRedis connects to the real Redis the tests need and fails (never skips)
// when it is not there.
func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                     redisAddr,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a safety net, not a latency bound
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis at %s is unreachable (%v): these tests need a real Redis server", redisAddr, err)
	}
	return rdb
}

// testConfig returns a config for a stream unique to this test, deleted at
// cleanup, with timings short enough for tests.
func testConfig(t *testing.T, rdb *redis.Client) Config {
	t.Helper()
	stream := "sbtest:" + t.Name() + ":" + rand.Text()
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		_ = rdb.Del(context.WithoutCancel(t.Context()), stream, stream+DeadLetterSuffix).Err()
	})
	return Config{
		Addr:     redisAddr,
		Dialer:   allowRedis.DialContext,
		Stream:   stream,
		Group:    "g",
		Consumer: "c1",
		StartID:  "0",
		Block:    100 * time.Millisecond,
		Backoff:  adapter.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Logger:   zaptest.NewLogger(t),
	}
}

// stopGuard bounds the wait for Run to return once cancelled: a safety net
// against a hang, far above how long a stop takes even on a loaded machine.
const stopGuard = time.Minute

// start runs an adapter in the background and returns a function that stops
// it and returns Run's result; cleanup stops it too.
func start(t *testing.T, cfg Config, sink adapter.Sink) (context.CancelFunc, func() error) {
	t.Helper()
	a, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	var once sync.Once
	var runErr error
	wait := func() error {
		once.Do(func() {
			select {
			case runErr = <-done:
			case <-time.After(stopGuard):
				runErr = fmt.Errorf("adapter did not stop within %s", stopGuard)
			}
		})
		return runErr
	}
	t.Cleanup(func() { cancel(); _ = wait() })
	return cancel, wait
}

// memSink is an in-memory idempotent sink keyed by adapter id and SourceID.
type memSink struct {
	mu     sync.Mutex
	stored map[string]adapter.Message
	seen   map[string]int // times each message was presented
	calls  int
	// fail, when set, is asked before storing; an error fails the whole call.
	fail func(call int, msgs []adapter.Message) error
	// after, when set, runs after a successful store.
	after func(msgs []adapter.Message)
}

func newSink() *memSink {
	return &memSink{stored: map[string]adapter.Message{}, seen: map[string]int{}}
}

func (s *memSink) Store(_ context.Context, adapterID string, msgs []adapter.Message) error {
	s.mu.Lock()
	s.calls++
	for _, m := range msgs {
		s.seen[m.SourceID]++
	}
	if s.fail != nil {
		if err := s.fail(s.calls, msgs); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	for _, m := range msgs {
		key := adapterID + "\x00" + m.SourceID
		if _, dup := s.stored[key]; !dup {
			s.stored[key] = m
		}
	}
	after := s.after
	s.mu.Unlock()
	if after != nil {
		after(msgs)
	}
	return nil
}

func (s *memSink) storedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stored)
}

func (s *memSink) seenCount(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id]
}

func (s *memSink) storedBodies() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.stored))
	for _, m := range s.stored {
		out[m.SourceID] = string(m.Body)
	}
	return out
}

func addEntries(t *testing.T, rdb *redis.Client, stream string, bodies ...string) []string {
	t.Helper()
	ids := make([]string, len(bodies))
	for i, b := range bodies {
		id, err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"body": b, "kind": "test"}}).Result()
		require.NoError(t, err)
		ids[i] = id
	}
	return ids
}

// pendingCount is the group's PEL size, -1 while the group does not exist
// yet. It must not fail the test: it runs inside require.Eventually.
func pendingCount(t *testing.T, rdb *redis.Client, cfg Config) int64 {
	t.Helper()
	p, err := rdb.XPending(t.Context(), cfg.Stream, cfg.Group).Result()
	if err != nil {
		return -1
	}
	return p.Count
}
