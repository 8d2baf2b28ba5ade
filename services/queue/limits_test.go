//go:build integration

package queue_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// TestSetQueueLimitsRejectsBadInput: limits out of range and an overlong
// concurrency key are INVALID_ARGUMENT naming the field.
func TestSetQueueLimitsRejectsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		req   *queuev1.SetQueueLimitsRequest
		field string
	}{
		{&queuev1.SetQueueLimitsRequest{Queue: "q", MaxRunning: -1}, "max_running"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", MaxRunning: 1_000_001}, "max_running"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", KeyMaxRunning: -5}, "key_max_running"},
		{&queuev1.SetQueueLimitsRequest{Queue: "Bad Name", KeyMaxRunning: 1}, "queue"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", RatePerSecond: -0.5}, "rate_per_second"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", RatePerSecond: math.NaN()}, "rate_per_second"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", RatePerSecond: 1, RateBurst: -1}, "rate_burst"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", KeyRatePerSecond: 2e6}, "key_rate_per_second"},
		{&queuev1.SetQueueLimitsRequest{Queue: "q", KeyRatePerSecond: 1, KeyRateBurst: 1_000_001}, "key_rate_burst"},
	} {
		_, err := e.srv.SetQueueLimits(e.owner(t), tc.req)
		require.Equal(t, codes.InvalidArgument, code(err), "%v", tc.req)
		require.Equal(t, tc.field, onlyViolatedField(t, err), "%v", tc.req)
	}
	_, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", ConcurrencyKey: strings.Repeat("k", 256)})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "concurrency_key", onlyViolatedField(t, err))
	_, err = e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: "q", Requests: []*queuev1.EnqueueRequest{
		{}, {ConcurrencyKey: "bad\x00key"},
	}})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "requests[1].concurrency_key", onlyViolatedField(t, err))
	require.Zero(t, e.count(t, `SELECT count(*) FROM queue_controls`), "nothing was written")
}

// TestKeyLimitsCountRunningTodosAndShowInStats: limits set while keyed todos
// are already running count them (the repair recounts), claims stop at the
// limit and go on when a slot frees; QueueStats and ListQueues show the
// limits; removing them puts the queue back on the fast path.
func TestKeyLimitsCountRunningTodosAndShowInStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	enqueueKeyed(t, e, "lq", map[string]int{"a": 5, "b": 1})
	early := e.claim(t, "lq", 2) // unlimited yet: the fast path
	require.Len(t, early, 2)
	require.Equal(t, "a", early[0].GetConcurrencyKey())

	res, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "lq", KeyMaxRunning: 2, MaxRunning: 3})
	require.NoError(t, err)
	require.Equal(t, int32(2), res.GetControl().GetLimits().GetKeyMaxRunning())
	require.Equal(t, int32(2), res.GetControl().GetLimits().GetRunning(), "the running todos are counted")
	require.EqualValues(t, 2, e.count(t, `SELECT running FROM queue_keys WHERE key = 'a'`))

	// a is full: only b's todo comes, then nothing (the queue's 3 are running).
	got := e.claim(t, "lq", 5)
	require.Len(t, got, 1)
	require.Equal(t, "b", got[0].GetConcurrencyKey())
	enqueueKeyed(t, e, "lq", map[string]int{"c": 1})
	require.Empty(t, e.claim(t, "lq", 5), "max_running 3 reached")

	_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: early[0].GetId(), LeaseToken: early[0].GetLeaseToken()})
	require.NoError(t, err)
	got = e.claim(t, "lq", 5)
	require.Len(t, got, 1, "one slot freed")

	st, err := e.srv.QueueStats(e.owner(t), &queuev1.QueueStatsRequest{Queue: "lq"})
	require.NoError(t, err)
	require.Equal(t, int32(3), st.GetLimits().GetMaxRunning())
	require.Equal(t, int32(3), st.GetLimits().GetRunning())
	list, err := e.srv.ListQueues(e.owner(t), &queuev1.ListQueuesRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetQueues(), 1)
	require.Equal(t, int32(2), list.GetQueues()[0].GetLimits().GetKeyMaxRunning())

	// No limits: the fast path again, and the key rows are gone.
	res, err = e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "lq"})
	require.NoError(t, err)
	require.Nil(t, res.GetControl().GetLimits())
	require.Zero(t, e.count(t, `SELECT count(*) FROM queue_keys`))
	require.Len(t, e.claim(t, "lq", 10), 3, "a's other three, unlimited")
}

// TestKeysAreServedRoundRobin: one key's 10,000 todos do not starve
// another's 10 enqueued after them: claims serve the keys least recently
// served first, so the small key's todos all run within the first claims.
func TestKeysAreServedRoundRobin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "fair", KeyMaxRunning: 100})
	require.NoError(t, err)
	enqueueKeyed(t, e, "fair", map[string]int{"big": 10_000})
	enqueueKeyed(t, e, "fair", map[string]int{"small": 10})
	small, claims := 0, 0
	for small < 10 {
		claims++
		require.LessOrEqual(t, claims, 5, "the small key starves")
		got := e.claim(t, "fair", 4)
		require.Len(t, got, 4)
		for _, td := range got {
			if td.GetConcurrencyKey() == "small" {
				small++
			}
			_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
			require.NoError(t, err)
		}
	}
	t.Logf("the small key's 10 todos ran within %d claims of 4", claims)
}

// enqueueKeyed adds n[key] todos with each key to q, in key order.
func enqueueKeyed(t *testing.T, e *env, q string, n map[string]int) {
	t.Helper()
	var reqs []*queuev1.EnqueueRequest
	for _, k := range slices.Sorted(maps.Keys(n)) {
		for i := range n[k] {
			reqs = append(reqs, &queuev1.EnqueueRequest{Kind: fmt.Sprintf("%s-%d", k, i), ConcurrencyKey: k})
		}
	}
	for i := 0; i < len(reqs); i += 1000 {
		_, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: q, Requests: reqs[i:min(i+1000, len(reqs))]})
		require.NoError(t, err)
	}
}

// TestKeyPatternsOverrideKeyLimits: a key takes the limits of the first
// pattern it matches (* any run, every other character literal, _ and %
// too), resolved both for keys already there when the limits are set and
// for keys enqueued after; other keys keep the default.
func TestKeyPatternsOverrideKeyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	enqueueKeyed(t, e, "pq", map[string]int{"vip-1": 5, "other": 5, "axb": 3, "a_b": 3})
	res, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "pq", KeyMaxRunning: 1, KeyPatterns: []*queuev1.KeyPattern{
		{Pattern: "vip-*", MaxRunning: 3}, {Pattern: "vip-1", MaxRunning: 1}, {Pattern: "a_b", MaxRunning: 2},
	}})
	require.NoError(t, err)
	require.Len(t, res.GetControl().GetLimits().GetKeyPatterns(), 3)
	require.Equal(t, "vip-*", res.GetControl().GetLimits().GetKeyPatterns()[0].GetPattern())
	enqueueKeyed(t, e, "pq", map[string]int{"vip-2": 5})

	running := map[string]int{}
	for _, td := range e.claim(t, "pq", 100) {
		running[td.GetConcurrencyKey()]++
	}
	require.Equal(t, map[string]int{"vip-1": 3, "vip-2": 3, "other": 1, "axb": 1, "a_b": 2}, running)

	_, err = e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "pq", KeyPatterns: []*queuev1.KeyPattern{{Pattern: ""}}})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "key_patterns[0].pattern", onlyViolatedField(t, err))
	_, err = e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "pq", KeyPatterns: []*queuev1.KeyPattern{{Pattern: "x", MaxRunning: -1}}})
	require.Equal(t, "key_patterns[0].max_running", onlyViolatedField(t, err))
}

// TestRepairDeletesIdleKeyRows: the repair pass deletes the counter row of
// a key that holds nothing (no running or pending todo, a full rate burst,
// not served for a minute), so limited claims stop probing it, and keeps
// every other; the key's next todo brings its row back and is claimed.
func TestRepairDeletesIdleKeyRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	enqueueKeyed(t, e, "idle", map[string]int{"done": 1, "waiting": 1, "busy": 1, "throttled": 1})
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "idle", KeyMaxRunning: 1})
	require.NoError(t, err)
	claimed := map[string]*queuev1.Todo{}
	for _, td := range e.claim(t, "idle", 10) {
		claimed[td.GetConcurrencyKey()] = td
	}
	require.Len(t, claimed, 4)
	for _, k := range []string{"done", "throttled"} {
		_, err = e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: claimed[k].GetId(), LeaseToken: claimed[k].GetLeaseToken()})
		require.NoError(t, err)
	}
	_, err = e.srv.Release(e.worker(t), &queuev1.ReleaseRequest{Id: claimed["waiting"].GetId(), LeaseToken: claimed["waiting"].GetLeaseToken()})
	require.NoError(t, err)
	// Every key last served two minutes ago; throttled still owes its rate
	// (a theoretical arrival time in the future); the repair is due.
	_, err = e.pool.Exec(t.Context(), `UPDATE queue_keys SET served_at = now() - interval '2 minutes',
		tat = CASE WHEN key = 'throttled' THEN now() + interval '1 minute' ELSE tat END WHERE queue = 'idle'`)
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE queue_controls SET repaired_at = NULL WHERE queue = 'idle'`)
	require.NoError(t, err)

	_, err = e.srv.RepairOnce(t.Context())
	require.NoError(t, err)
	var left []string
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT array_agg(key ORDER BY key) FROM queue_keys WHERE queue = 'idle'`).Scan(&left))
	require.Equal(t, []string{"busy", "throttled", "waiting"}, left, "only done, with nothing running or pending and its burst back, is deleted")

	enqueueKeyed(t, e, "idle", map[string]int{"done": 1})
	got := e.claim(t, "idle", 10)
	keys := []string{}
	for _, td := range got {
		keys = append(keys, td.GetConcurrencyKey())
	}
	require.ElementsMatch(t, []string{"done", "waiting"}, keys, "done's new todo has its row back; busy is at its limit")
}

// TestRepairFixesACounterWhileACompletionCommits: the repair sets a drifted
// queue counter (4 where 1 runs) to the recount even when a keyless
// completion holds the queue row as the repair starts (its
// TodoSettle, run here in a transaction the test commits). A recount
// that locked the row inside its own statement counted from a snapshot
// taken before that wait, in which the completed todo still ran: it wrote
// 1, a slot lost for good.
func TestRepairFixesACounterWhileACompletionCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "recount", MaxRunning: 5})
	require.NoError(t, err)
	e.enqueue(t, "recount", 1)
	td := e.claimOne(t, "recount")
	_, err = e.pool.Exec(t.Context(), `UPDATE queue_controls SET running = 4, repaired_at = NULL WHERE queue = 'recount'`)
	require.NoError(t, err)

	completion, err := e.pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = completion.Rollback(t.Context()) }()
	done, err := dbsqlc.New().TodoSettle(t.Context(), completion, dbsqlc.TodoSettleParams{
		HumanID: e.human, Ids: []int64{td.GetId()}, Tokens: []int64{td.GetLeaseToken()}, Actions: []string{"complete"},
		Results: []string{""}, Errors: []string{""}, DeadLetters: []bool{false}, Delays: []float64{0}, Jitters: []float64{0},
	})
	require.NoError(t, err)
	require.Len(t, done, 1)

	repaired := make(chan error, 1)
	go func() {
		_, err := e.srv.RepairOnce(t.Context())
		repaired <- err
	}()
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 30*time.Second, 5*time.Millisecond, "the repair waits for the queue row")
	require.NoError(t, completion.Commit(t.Context()))
	require.NoError(t, <-repaired)

	require.EqualValues(t, 0, e.count(t, `SELECT running FROM queue_controls WHERE queue = 'recount'`), "nothing runs: the drift is repaired")
}
