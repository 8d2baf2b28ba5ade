//go:build integration

package realtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/realtime"
)

// commitTogether inserts one durable event per channel name, in order, in
// one transaction (as a publish does: under the publishers' lock), so the
// reader finds them all in one read; it returns their ids.
func (e *env) commitTogether(channels ...string) []int64 {
	e.t.Helper()
	rows, err := e.pool.Query(e.t.Context(), `
		WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(21314, 21076) AS locked)
		INSERT INTO realtime_events (human_id, channel, kind, payload, published_by)
		SELECT $1, c.name, 'message', jsonb_build_object('i', c.ord - 1), 'test'
		FROM l, unnest($2::text[]) WITH ORDINALITY AS c (name, ord)
		ORDER BY c.ord
		RETURNING id`, e.human, channels)
	require.NoError(e.t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(e.t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(e.t, rows.Err())
	return ids
}

func ids(evs []*realtimev1.RealtimeEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.GetId()
	}
	return out
}

// messages reads messages until n events have arrived: their ids, and how
// many each message carried.
func (s *stream) messages(t *testing.T, n int) (got []int64, sizes []int) {
	t.Helper()
	for len(got) < n {
		m := s.nextMessage(t)
		sizes = append(sizes, len(m))
		got = append(got, ids(m)...)
	}
	return got, sizes
}

func repeat(channel string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = channel
	}
	return out
}

// TestEventsReadTogetherArriveAsBatchesOfMaxBatch: thirty events the reader
// finds in one read reach a max_batch 8 subscriber as messages of 8, 8, 8
// and 6 events in id order, and a subscriber that did not ask for batches as
// thirty single events.
func TestEventsReadTogetherArriveAsBatchesOfMaxBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	batched := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"burst"}, MaxBatch: 8})
	single := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"burst"}})
	e.subscribed(2)
	want := e.commitTogether(repeat("burst", 30)...)

	got, sizes := batched.messages(t, len(want))
	require.Equal(t, want, got)
	require.Equal(t, []int{8, 8, 8, 6}, sizes)

	got = got[:0]
	for len(got) < len(want) {
		m := single.nextMessage(t)
		require.Len(t, m, 1, "max_batch 0: one event per message")
		got = append(got, m[0].GetId())
	}
	require.Equal(t, want, got)
}

// TestBatchAcrossChannelsKeepsIDOrder: a subscriber of two channels gets
// events committed together on both as one message, interleaved in id
// order (not channel by channel), and only its own channels' events.
func TestBatchAcrossChannelsKeepsIDOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"a", "b"}, MaxBatch: 100})
	e.subscribed(1)
	all := e.commitTogether("a", "b", "c", "a", "b", "b", "a", "c", "a")
	want := []int64{all[0], all[1], all[3], all[4], all[5], all[6], all[8]}
	m := s.nextMessage(t)
	require.Equal(t, want, ids(m))
	for _, ev := range m {
		require.Contains(t, []string{"a", "b"}, ev.GetChannel())
	}
}

// TestResumeAheadOfTheNodeSkipsTheSentPartOfABatch: a client resuming from
// an id the node has not reached yet gets, of the batch that crosses it,
// only the events after it: no duplicate, no gap.
func TestResumeAheadOfTheNodeSkipsTheSentPartOfABatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	first := e.publish(t.Context(), "resume", true, map[string]any{"i": -1.0}).GetId()
	// Ids are allocated one by one (no other writer here): the ten below
	// are first+1 … first+10, and the client claims to have seen five.
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"resume"}, AfterId: first + 5, MaxBatch: 100})
	e.subscribed(1)
	all := e.commitTogether(repeat("resume", 10)...)
	require.Equal(t, first+1, all[0])
	require.Equal(t, all[5:], ids(s.nextMessage(t)))
}

// TestReplayIsBatched: a resume replays stored events in messages of up to
// max_batch, page by page, then continues live.
func TestReplayIsBatched(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{ReplayPage: 7})
	sentinel := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"replay"}})
	e.subscribed(1)
	from := e.publish(t.Context(), "replay", true, map[string]any{"i": -1.0}).GetId()
	stored := e.commitTogether(repeat("replay", 12)...)
	stored = append(stored, e.publish(t.Context(), "replay", true, map[string]any{"i": 12.0}).GetId())
	// Once the sentinel has the last one, the node's cursor is past them
	// all: the next subscriber replays them from the table.
	for got := int64(0); got != stored[len(stored)-1]; {
		got = sentinel.next(t).GetId()
	}
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"replay"}, AfterId: from, MaxBatch: 5})
	got, sizes := s.messages(t, len(stored))
	require.Equal(t, stored, got)
	require.Equal(t, []int{5, 2, 5, 1}, sizes, "pages of 7 and 6, messages of at most 5")
	live := e.publish(t.Context(), "replay", true, map[string]any{"live": true}).GetId()
	require.Equal(t, []int64{live}, ids(s.nextMessage(t)))
}

// TestBigBatchIsNotACutOff: one read holding more events than a
// subscriber's buffer is taken whole by a subscriber that is keeping up;
// only one that has not taken earlier events is behind.
func TestBigBatchIsNotACutOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{Buffer: 4})
	s := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"big"}, MaxBatch: 1000})
	e.subscribed(1)
	want := e.commitTogether(repeat("big", 20)...)
	var got []int64
	for len(got) < len(want) {
		got = append(got, s.next(t).GetId())
	}
	require.Equal(t, want, got)
}

// TestMaxBatchIsValidated: over 1,000 is INVALID_ARGUMENT.
func TestMaxBatchIsValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, realtime.Options{})
	ctx, cancel := context.WithCancel(as(t.Context(), e.human))
	defer cancel()
	st, err := e.client.Subscribe(ctx, &realtimev1.SubscribeRequest{Channels: []string{"x"}, MaxBatch: 1001})
	require.NoError(t, err)
	_, err = st.Recv()
	require.Equal(t, "InvalidArgument", statusCode(err))
}
