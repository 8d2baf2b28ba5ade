//go:build integration

package queue_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

func TestEnqueueDefaultsAndGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{
		Queue: "mail", Kind: "send", Payload: payload(t, map[string]any{"to": "a@b"}), AgentId: e.agent.String(),
	})
	require.NoError(t, err)
	td := res.GetTodo()
	require.False(t, res.GetDuplicate())
	require.Positive(t, td.GetId())
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, td.GetState())
	require.EqualValues(t, 2, td.GetPriority(), "unset priority means 2")
	require.EqualValues(t, 25, td.GetMaxAttempts(), "from the setting queue.defaults")
	require.EqualValues(t, 0, td.GetAttempt())
	require.Equal(t, e.agent.String(), td.GetAgentId())
	require.Equal(t, e.human.String(), td.GetHumanId())
	require.Equal(t, "a@b", td.GetPayload().GetFields()["to"].GetStringValue())
	require.True(t, proto.Equal(td, e.get(t, td.GetId())))

	// priority 0 is explicit, not "unset".
	res, err = e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "mail", Priority: proto.Int32(0), MaxAttempts: 3})
	require.NoError(t, err)
	require.EqualValues(t, 0, res.GetTodo().GetPriority())
	require.EqualValues(t, 3, res.GetTodo().GetMaxAttempts())
	require.Empty(t, res.GetTodo().GetPayload().GetFields(), "payload is {} when unset")
}

func TestEnqueueBatchKeepsOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reqs := make([]*queuev1.EnqueueRequest, 1000)
	for i := range reqs {
		reqs[i] = &queuev1.EnqueueRequest{Kind: strings.Repeat("x", i%7) + "k"}
		if i%3 == 0 {
			reqs[i].DedupeKey = "key" + strings.Repeat("y", i%11) // repeats: later ones are duplicates
		}
	}
	res, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "bulk", Requests: reqs})
	require.NoError(t, err)
	require.Len(t, res.GetResponses(), 1000)
	firstByKey := map[string]int64{}
	created := 0
	for i, r := range res.GetResponses() {
		if k := reqs[i].GetDedupeKey(); k != "" {
			if id, ok := firstByKey[k]; ok {
				require.True(t, r.GetDuplicate(), "entry %d repeats key %s", i, k)
				require.Equal(t, id, r.GetTodo().GetId())
				continue
			}
			firstByKey[k] = r.GetTodo().GetId()
		}
		require.False(t, r.GetDuplicate(), "entry %d", i)
		require.Equal(t, reqs[i].GetKind(), r.GetTodo().GetKind(), "entry %d", i)
		created++
	}
	require.EqualValues(t, created, e.count(t, `SELECT count(*) FROM todos`))
}

func TestDedupe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	first, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", DedupeKey: "once", Kind: "a"})
	require.NoError(t, err)
	before := e.snapshot(t)
	again, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", DedupeKey: "once", Kind: "b"})
	require.NoError(t, err)
	require.True(t, again.GetDuplicate())
	require.Equal(t, first.GetTodo().GetId(), again.GetTodo().GetId())
	require.Equal(t, "a", again.GetTodo().GetKind(), "the existing todo comes back")
	require.Equal(t, before, e.snapshot(t), "a duplicate writes nothing")

	// The same key in another queue is a different todo.
	other, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q2", DedupeKey: "once"})
	require.NoError(t, err)
	require.False(t, other.GetDuplicate())
}

func TestDedupeConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 16
	ids := make([]int64, n)
	dups := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", DedupeKey: "race"})
			if assertNoError(t, err) {
				ids[i], dups[i] = res.GetTodo().GetId(), res.GetDuplicate()
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, e.count(t, `SELECT count(*) FROM todos`))
	fresh := 0
	for i := range n {
		require.Equal(t, ids[0], ids[i])
		if !dups[i] {
			fresh++
		}
	}
	require.Equal(t, 1, fresh, "exactly one caller created it")
}

func TestEnqueueBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	other := seedHuman(t, e.pool)
	foreignAgent := seedAgent(t, e.pool, other, "theirs")
	huge := payload(t, map[string]any{"blob": strings.Repeat("x", 1<<20)})
	before := e.snapshot(t)
	cases := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"empty queue", func() error { _, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{}); return err }, codes.InvalidArgument},
		{"payload over 1 MiB", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", Payload: huge})
			return err
		}, codes.InvalidArgument},
		{"NUL in payload", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", Payload: payload(t, map[string]any{"s": "a\x00b"})})
			return err
		}, codes.InvalidArgument},
		{"priority 9", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", Priority: proto.Int32(9)})
			return err
		}, codes.InvalidArgument},
		{"bad agent id", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", AgentId: "nope"})
			return err
		}, codes.InvalidArgument},
		{"another tenant's agent", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", AgentId: foreignAgent.String()})
			return err
		}, codes.NotFound},
		{"unknown event", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "q", EventId: 424242})
			return err
		}, codes.NotFound},
		{"batch over 1000", func() error {
			_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "q", Requests: make([]*queuev1.EnqueueRequest, 1001)})
			return err
		}, codes.InvalidArgument},
		{"batch with one bad entry stores nothing", func() error {
			_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "q", Requests: []*queuev1.EnqueueRequest{
				{Kind: "fine"}, {AgentId: foreignAgent.String()},
			}})
			return err
		}, codes.NotFound},
		{"batch entry for another queue", func() error {
			_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "q", Requests: []*queuev1.EnqueueRequest{{Queue: "other"}}})
			return err
		}, codes.InvalidArgument},
		{"bad queue name (database check)", func() error {
			_, err := e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "Bad Queue"})
			return err
		}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, code(tc.call()), tc.name)
	}
	require.Equal(t, before, e.snapshot(t), "bad input loses nothing and writes nothing")
}

func TestScheduledNotClaimableBeforeRunAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	later := timestamppb.New(e.dbNow(t).Add(time.Hour))
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", RunAt: later})
	require.NoError(t, err)
	require.Empty(t, e.claim(t, "q", 10))
	st, err := e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "q"})
	require.NoError(t, err)
	require.EqualValues(t, 1, st.GetPendingScheduled())
	require.EqualValues(t, 0, st.GetPendingReady())
	e.makeDue(t, res.GetTodo().GetId())
	require.Equal(t, res.GetTodo().GetId(), e.claimOne(t, "q").GetId())
}

func TestClaimOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var want []int64
	for _, p := range []int32{3, 0, 4, 1, 2} {
		res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", Priority: proto.Int32(p)})
		require.NoError(t, err)
		want = append(want, res.GetTodo().GetId())
	}
	// priority order: 0 (2nd), 1 (4th), 2 (5th), 3 (1st), 4 (3rd)
	order := []int64{want[1], want[3], want[4], want[0], want[2]}
	now := e.dbNow(t)
	todos := e.claim(t, "q", 5)
	got := make([]int64, len(todos))
	for i, td := range todos {
		got[i] = td.GetId()
		require.Equal(t, queuev1.TodoState_TODO_STATE_RUNNING, td.GetState())
		require.EqualValues(t, 1, td.GetAttempt(), "the lease token")
		require.Equal(t, "w1", td.GetLeaseOwner())
		require.WithinDuration(t, now.Add(30*time.Second), td.GetLeaseExpiresAt().AsTime(), 5*time.Second,
			"lease_seconds 0 means queue.defaults.lease_seconds (30)")
	}
	require.Equal(t, order, got, "claim order: priority, run_at, id")
}

// TestPayloadRoundTrip: every JSON kind survives enqueue → store → claim
// unchanged (the stored jsonb is decoded without protojson).
func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := payload(t, map[string]any{
		"s": "héllo ☃", "empty": "", "n": 12.5, "neg": -3.0, "big": 9007199254740992.0, "t": true, "f": false,
		"null": nil, "list": []any{1.0, "two", nil, []any{}, map[string]any{"k": "v"}},
		"obj": map[string]any{"nested": map[string]any{"deep": []any{true}}}, "emptyobj": map[string]any{},
	})
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "rt", Payload: in})
	require.NoError(t, err)
	require.True(t, proto.Equal(in, res.GetTodo().GetPayload()), "Enqueue's answer")
	td := e.claimOne(t, "rt")
	require.True(t, proto.Equal(in, td.GetPayload()), "Claim's answer: %v", td.GetPayload())
}
