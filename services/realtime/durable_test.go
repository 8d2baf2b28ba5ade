//go:build integration

package realtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/realtime"
)

// TestDurableDeliveredLiveThenResumedAfterReconnect: a subscriber receives
// durable events in id order; after it disconnects, what was published
// meanwhile is replayed from after_id, then live events follow.
func TestDurableDeliveredLiveThenResumedAfterReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"room/1"}})
	e.subscribed(1)
	var ids []int64
	for i := range 3 {
		ids = append(ids, e.publish(t.Context(), "room/1", true, map[string]any{"n": float64(i)}).GetId())
	}
	for i, id := range ids {
		ev := s.next(t)
		require.True(t, ev.GetDurable())
		require.Equal(t, id, ev.GetId())
		require.InDelta(t, float64(i), ev.GetPayload().GetFields()["n"].GetNumberValue(), 0)
		require.Equal(t, "room/1", ev.GetChannel())
		require.Equal(t, "human:"+e.human.String(), ev.GetPublishedBy())
	}
	s.cancel()
	e.subscribed(0)

	missed := []int64{e.publish(t.Context(), "room/1", true, map[string]any{"n": 3.0}).GetId(), e.publish(t.Context(), "room/1", true, map[string]any{"n": 4.0}).GetId()}
	e.publish(t.Context(), "room/2", true, map[string]any{"other": true}) // another channel: not replayed
	r := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"room/1"}, AfterId: ids[2]})
	for _, id := range missed {
		require.Equal(t, id, r.next(t).GetId())
	}
	e.subscribed(1)
	live := e.publish(t.Context(), "room/1", true, map[string]any{"n": 5.0}).GetId()
	require.Equal(t, live, r.next(t).GetId())
}

// TestReplaySwitchesToLiveWithoutGapOrDuplicate races the switch: while
// publishers write continuously, subscribers join at different moments with
// the same after_id; each must see every id after its after_id exactly
// once, in order, up to the last one published.
func TestReplaySwitchesToLiveWithoutGapOrDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{ReplayPage: 7}) // small pages: the switch lands mid-replay too
	const publishers, each = 4, 60
	first := e.publish(t.Context(), "race", true, map[string]any{"start": true}).GetId()

	var wg sync.WaitGroup
	start := make(chan struct{})
	for p := range publishers {
		wg.Go(func() {
			<-start
			for i := range each {
				e.publish(context.Background(), "race", true, map[string]any{"p": float64(p), "i": float64(i)})
			}
		})
	}
	close(start)
	// Join at five points of the publishing: after 0, 40, 80, 120 and 160
	// of its 240 events are stored.
	stored := func() int {
		var n int
		require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events WHERE channel = 'race' AND id > $1`, first).Scan(&n))
		return n
	}
	var subs []*stream
	for i := range 5 {
		require.Eventually(t, func() bool { return stored() >= i*40 }, waitFor, time.Millisecond)
		subs = append(subs, e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"race"}, AfterId: first}))
	}
	wg.Wait()
	var want []int64
	rows, err := e.pool.Query(t.Context(), `SELECT id FROM realtime_events WHERE channel = 'race' AND id > $1 ORDER BY id`, first)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		want = append(want, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, want, publishers*each)
	for i, s := range subs {
		got := make([]int64, 0, len(want))
		for len(got) < len(want) {
			got = append(got, s.next(t).GetId())
		}
		require.Equal(t, want, got, "subscriber %d", i)
	}
}

// TestIDsCommittedOutOfOrderAreDeliveredInOrder holds a publish open after
// its id was allocated: the next publish commits first, but subscribers get
// both in id order once the first commits; a publish that rolls back leaves
// a hole that does not stop delivery.
func TestIDsCommittedOutOfOrderAreDeliveredInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"order"}})
	e.subscribed(1)
	insert := `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(21314, 21076) AS locked)
		INSERT INTO realtime_events (human_id, channel, kind, payload, published_by)
		SELECT $1, 'order', 'held', '{"held": true}', 'test' FROM l RETURNING id`

	tx, err := e.pool.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // a failed check must not hold the pool
	var held int64
	require.NoError(t, tx.QueryRow(t.Context(), insert, e.human).Scan(&held))
	after := e.publish(t.Context(), "order", true, map[string]any{"after": true}).GetId()
	require.Greater(t, after, held)
	select {
	case m := <-s.events:
		t.Fatalf("event %d delivered while id %d was still uncommitted", m.GetEvent().GetId(), held)
	case <-time.After(100 * time.Millisecond): // a negative check: nothing may arrive while the hole can fill
	}
	require.NoError(t, tx.Commit(t.Context()))
	require.Equal(t, held, s.next(t).GetId())
	require.Equal(t, after, s.next(t).GetId())

	tx2, err := e.pool.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx2.Rollback(context.Background()) })
	var aborted int64
	require.NoError(t, tx2.QueryRow(t.Context(), insert, e.human).Scan(&aborted))
	later := e.publish(t.Context(), "order", true, map[string]any{"later": true}).GetId()
	require.NoError(t, tx2.Rollback(t.Context()))
	require.Equal(t, later, s.next(t).GetId(), "the rolled-back id %d is skipped", aborted)
}

// TestSlowSubscriberIsCutOffWithoutDelayingAFastOne: a subscriber that
// does not read is ended with RESOURCE_EXHAUSTED naming where to resume; a
// reading one receives everything.
func TestSlowSubscriberIsCutOffWithoutDelayingAFastOne(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	e := newEnv(t, realtime.Options{Buffer: 64, Metrics: r})
	fast := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"firehose"}})
	// The slow reader has its own connection with fixed 64 KiB windows (no
	// BDP growth), so it stops taking data after a few events and its
	// server-side buffer fills; the fast one shares nothing with it.
	conn, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithCancel(as(t.Context(), e.human))
	defer cancel()
	slow, err := realtimev1.NewRealtimeServiceClient(conn).Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: []string{"firehose"}})
	require.NoError(t, err)
	e.subscribed(2)
	big := make([]byte, 16<<10) // a few events fill the slow stream's window
	for i := range big {
		big[i] = 'x'
	}
	const n = 200
	for i := range n {
		e.publish(t.Context(), "firehose", true, map[string]any{"i": float64(i), "pad": string(big)})
	}
	for i := range n {
		require.InDelta(t, float64(i), fast.next(t).GetPayload().GetFields()["i"].GetNumberValue(), 0)
	}
	var last error
	for {
		if _, last = slow.Recv(); last != nil {
			break
		}
	}
	require.Equal(t, "ResourceExhausted", statusCode(last))
	require.Contains(t, last.Error(), "after_id=")
	require.InDelta(t, 1.0, gauge(t, r, "switchboard_realtime_slow_subscriber_cutoffs_total"), 0, "the slow one, once")
	require.GreaterOrEqual(t, gauge(t, r, "switchboard_realtime_events_dropped_total"), 1.0)
	require.GreaterOrEqual(t, gauge(t, r, "switchboard_realtime_events_delivered_total"), float64(n), "all to the fast one")
}

// TestRetentionByAgeAndCap prunes durable events by row cap and by age. It
// checks what is left, not how many this call deleted: the service's own
// retention loop (its first pass runs on a goroutine right after Start, late
// on a loaded machine) may prune some of the same rows at the same time.
func TestRetentionByAgeAndCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{RetentionBatch: 3})
	for i := range 10 {
		e.publish(t.Context(), "keep", true, map[string]any{"i": float64(i)})
	}
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"max_age_seconds": 3600, "max_rows": 1000, "max_rows_per_tenant": 6}' WHERE key = 'retention.realtime_events'`)
	require.NoError(t, err)
	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.LessOrEqual(t, n, int64(4))
	var left, oldest int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*), min(i) FROM (SELECT (payload->>'i')::bigint AS i FROM realtime_events) x`).Scan(&left, &oldest))
	require.Equal(t, int64(6), left)
	require.Equal(t, int64(4), oldest, "the oldest go first")

	_, err = e.pool.Exec(t.Context(), `UPDATE realtime_events SET created_at = now() - interval '2 hours' WHERE (payload->>'i')::int < 7`)
	require.NoError(t, err)
	n, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.LessOrEqual(t, n, int64(3))
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events`).Scan(&left))
	require.Equal(t, int64(3), left)
}

func statusCode(err error) string { return status.Code(err).String() }
