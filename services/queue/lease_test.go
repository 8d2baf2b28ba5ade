//go:build integration

package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// staleCalls makes every lease call with (id, token) and returns their codes.
func staleCalls(t *testing.T, e *env, id, token int64) map[string]codes.Code {
	t.Helper()
	ctx := e.worker(t)
	_, hb := e.srv.Heartbeat(ctx, &queuev1.HeartbeatRequest{Id: id, LeaseToken: token})
	_, co := e.srv.Complete(ctx, &queuev1.CompleteRequest{Id: id, LeaseToken: token})
	_, fa := e.srv.Fail(ctx, &queuev1.FailRequest{Id: id, LeaseToken: token, Error: "boom"})
	_, re := e.srv.Release(ctx, &queuev1.ReleaseRequest{Id: id, LeaseToken: token})
	return map[string]codes.Code{"heartbeat": code(hb), "complete": code(co), "fail": code(fa), "release": code(re)}
}

func allCodes(c codes.Code) map[string]codes.Code {
	return map[string]codes.Code{"heartbeat": c, "complete": c, "fail": c, "release": c}
}

func TestFencingAfterExpiryAndReclaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.enqueue(t, "q", 1)[0]
	first := e.claimOne(t, "q")
	e.expire(t, id)
	n, err := e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	second := e.claimOne(t, "q")
	require.Equal(t, id, second.GetId())
	require.EqualValues(t, 2, second.GetAttempt())
	require.NotEqual(t, first.GetLeaseToken(), second.GetLeaseToken(), "a fresh lease token")

	before := e.snapshot(t)
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, id, first.GetLeaseToken()))
	require.Equal(t, before, e.snapshot(t), "a stale token changes nothing")

	// The current holder is unaffected and can finish.
	now := e.dbNow(t)
	hb, err := e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: id, LeaseToken: second.GetLeaseToken(), LeaseSeconds: 600})
	require.NoError(t, err)
	require.WithinDuration(t, now.Add(600*time.Second), hb.GetLeaseExpiresAt().AsTime(), 5*time.Second)
	require.Equal(t, hb.GetLeaseExpiresAt().AsTime(), e.get(t, id).GetLeaseExpiresAt().AsTime())
	res, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: id, LeaseToken: second.GetLeaseToken(), Result: payload(t, map[string]any{"ok": true})})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_COMPLETED, res.GetTodo().GetState())
	require.True(t, res.GetTodo().GetResult().GetFields()["ok"].GetBoolValue())
	require.NotNil(t, res.GetTodo().GetFinishedAt())
	require.Empty(t, res.GetTodo().GetLeaseOwner())

	// After completion every token is stale, except for repeating that very
	// completion (TestAcksAreIdempotent); a guessed token too.
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, id, first.GetLeaseToken()))
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, id, 7))
	require.Equal(t, allCodes(codes.NotFound), staleCalls(t, e, 987654, 1))
}

func TestCrashRedelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.enqueue(t, "q", 3)
	crashed := e.claim(t, "q", 3)
	require.Len(t, crashed, 3)
	// The worker dies: no heartbeat, its leases run out.
	for _, id := range ids {
		e.expire(t, id)
	}
	n, err := e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range ids {
		td := e.get(t, id)
		require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, td.GetState())
		require.EqualValues(t, 1, td.GetAttempt(), "the lost attempt counts")
		require.EqualValues(t, 1, td.GetLeaseExpiries())
		require.Equal(t, "lease expired", td.GetLastError())
		require.Len(t, td.GetErrors(), 1)
		require.Contains(t, td.GetErrors()[0].GetError(), "lease expired (held by w1)")
	}
	again := e.claim(t, "q", 3)
	require.Len(t, again, 3)
	for _, td := range again {
		require.EqualValues(t, 2, td.GetAttempt())
	}
	// Reaping again finds nothing: live leases are left alone.
	n, err = e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestFailBackoffWithinFormula(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.enqueue(t, "q", 1)[0]
	for attempt := int32(1); attempt <= 4; attempt++ {
		td := e.claimOne(t, "q")
		require.Equal(t, attempt, td.GetAttempt())
		before := e.dbNow(t)
		res, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id, LeaseToken: td.GetLeaseToken(), Error: "transient"})
		require.NoError(t, err)
		after := e.dbNow(t)
		require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, res.GetTodo().GetState())
		// delay = min(1h, 1s·2^(attempt-1)) · [0.5, 1)
		full := time.Second << (attempt - 1)
		runAt := res.GetTodo().GetRunAt().AsTime()
		require.False(t, runAt.Before(before.Add(full/2)), "attempt %d: run_at %v too early", attempt, runAt)
		require.False(t, runAt.After(after.Add(full)), "attempt %d: run_at %v too late", attempt, runAt)
		require.Len(t, res.GetTodo().GetErrors(), int(attempt))
		require.Empty(t, e.claim(t, "q", 1), "not claimable while backing off")
		e.makeDue(t, id)
	}

	// retry_after overrides the formula.
	td := e.claimOne(t, "q")
	before := e.dbNow(t)
	res, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id, LeaseToken: td.GetLeaseToken(), Error: "later", RetryAfter: durationpb.New(2 * time.Hour)})
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(2*time.Hour), res.GetTodo().GetRunAt().AsTime(), 5*time.Second)

	// Long error messages are truncated, not rejected.
	e.makeDue(t, id)
	td = e.claimOne(t, "q")
	res, err = e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id, LeaseToken: td.GetLeaseToken(), Error: strings.Repeat("é", 5000)})
	require.NoError(t, err)
	require.Len(t, []rune(res.GetTodo().GetLastError()), 4096)
}

func TestDeadLetterAtMaxAttempts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", MaxAttempts: 2})
	require.NoError(t, err)
	id := res.GetTodo().GetId()
	for attempt := int32(1); attempt <= 2; attempt++ {
		td := e.claimOne(t, "q")
		require.Equal(t, attempt, td.GetAttempt())
		f, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id, LeaseToken: td.GetLeaseToken(), Error: "nope", RetryAfter: durationpb.New(0)})
		require.NoError(t, err)
		if attempt < 2 {
			require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, f.GetTodo().GetState())
		} else {
			require.Equal(t, queuev1.TodoState_TODO_STATE_DEAD, f.GetTodo().GetState())
			require.NotNil(t, f.GetTodo().GetFinishedAt())
		}
	}
	require.Empty(t, e.claim(t, "q", 1))

	// dead_letter skips the remaining attempts.
	id2 := e.enqueue(t, "q2", 1)[0]
	td := e.claimOne(t, "q2")
	f, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id2, LeaseToken: td.GetLeaseToken(), Error: "fatal", DeadLetter: true})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_DEAD, f.GetTodo().GetState())
	require.Equal(t, "fatal", f.GetTodo().GetLastError())

	// Lease expiry on the last attempt dead-letters too.
	res, err = e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q3", MaxAttempts: 1})
	require.NoError(t, err)
	e.claimOne(t, "q3")
	e.expire(t, res.GetTodo().GetId())
	_, err = e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_DEAD, e.get(t, res.GetTodo().GetId()).GetState())
}

func TestDeadLetterAtLeaseExpiryCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{MaxLeaseExpiries: 3})
	id := e.enqueue(t, "q", 1)[0]
	for i := 1; i <= 3; i++ {
		e.claimOne(t, "q")
		e.expire(t, id)
		_, err := e.srv.ReapOnce(t.Context())
		require.NoError(t, err)
	}
	td := e.get(t, id)
	require.Equal(t, queuev1.TodoState_TODO_STATE_DEAD, td.GetState(), "3 crashes in a row, though 22 attempts remain")
	require.Contains(t, td.GetLastError(), "expired 3 times in a row")

	// A Fail in between resets the run: expiries must be consecutive.
	id2 := e.enqueue(t, "r", 1)[0]
	for i := 1; i <= 4; i++ {
		td := e.claimOne(t, "r")
		if i == 2 {
			_, err := e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: id2, LeaseToken: td.GetLeaseToken(), Error: "x", RetryAfter: durationpb.New(0)})
			require.NoError(t, err)
			continue
		}
		e.expire(t, id2)
		_, err := e.srv.ReapOnce(t.Context())
		require.NoError(t, err)
	}
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, e.get(t, id2).GetState())
	require.EqualValues(t, 2, e.get(t, id2).GetLeaseExpiries())
}

func TestRelease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := e.srv.Enqueue(e.owner(t), &queuev1.EnqueueRequest{Queue: "q", MaxAttempts: 1})
	require.NoError(t, err)
	id := res.GetTodo().GetId()
	td := e.claimOne(t, "q")
	rel, err := e.srv.Release(e.worker(t), &queuev1.ReleaseRequest{Id: id, LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	require.Equal(t, queuev1.TodoState_TODO_STATE_PENDING, rel.GetTodo().GetState())
	require.EqualValues(t, 1, rel.GetTodo().GetAttempt(), "the claim count never goes down")
	require.EqualValues(t, 2, rel.GetTodo().GetMaxAttempts(), "no penalty: one more allowed")
	require.Empty(t, rel.GetTodo().GetErrors())
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, id, 1))
	again := e.claimOne(t, "q")
	require.EqualValues(t, 2, again.GetAttempt())

	// A delayed release is not claimable until the delay passes.
	_, err = e.srv.Release(e.worker(t), &queuev1.ReleaseRequest{Id: id, LeaseToken: again.GetLeaseToken(), Delay: durationpb.New(time.Hour)})
	require.NoError(t, err)
	require.Empty(t, e.claim(t, "q", 1))
}

func TestBatchLeaseCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(t, "q", 3)
	todos := e.claim(t, "q", 3)
	require.Len(t, todos, 3)
	a, b, c := todos[0], todos[1], todos[2]
	hb, err := e.srv.HeartbeatBatch(e.worker(t), &queuev1.HeartbeatBatchRequest{Items: []*queuev1.HeartbeatRequest{
		{Id: a.GetId(), LeaseToken: a.GetLeaseToken(), LeaseSeconds: 120}, {Id: b.GetId(), LeaseToken: 9}, {Id: 99999, LeaseToken: 1},
	}})
	require.NoError(t, err)
	got := []queuev1.BatchOutcome{}
	for _, r := range hb.GetResults() {
		got = append(got, r.GetOutcome())
	}
	require.Equal(t, []queuev1.BatchOutcome{
		queuev1.BatchOutcome_BATCH_OUTCOME_OK, queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE, queuev1.BatchOutcome_BATCH_OUTCOME_NOT_FOUND,
	}, got)
	require.NotNil(t, hb.GetResults()[0].GetLeaseExpiresAt())
	require.Nil(t, hb.GetResults()[1].GetLeaseExpiresAt())

	co, err := e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: []*queuev1.CompleteRequest{
		{Id: a.GetId(), LeaseToken: a.GetLeaseToken()}, {Id: c.GetId(), LeaseToken: c.GetLeaseToken(), Result: payload(t, map[string]any{"n": 1})},
		{Id: b.GetId(), LeaseToken: b.GetLeaseToken() ^ 1},
	}})
	require.NoError(t, err)
	got = got[:0]
	for _, r := range co.GetResults() {
		got = append(got, r.GetOutcome())
	}
	require.Equal(t, []queuev1.BatchOutcome{
		queuev1.BatchOutcome_BATCH_OUTCOME_OK, queuev1.BatchOutcome_BATCH_OUTCOME_OK, queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE,
	}, got)
	require.EqualValues(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE state = 'completed'`))
	require.InDelta(t, 1.0, e.get(t, c.GetId()).GetResult().GetFields()["n"].GetNumberValue(), 0)

	_, err = e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{})
	require.Equal(t, codes.InvalidArgument, code(err))
}

// TestLeaseTokensOfOneClaim: the tokens of one claim are drawn once per
// statement (TodoClaim), yet each todo's is its own: positive, distinct,
// the one stored, useless for any other todo of the batch, and new at the
// next claim of the same todo.
func TestLeaseTokensOfOneClaim(t *testing.T) {
	t.Parallel()
	// The fast claim (TodoClaim) and a limited queue's (TodoClaimLimited)
	// draw their tokens the same way.
	for name, limited := range map[string]bool{"fast": false, "limited": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			leaseTokensOfOneClaim(t, limited)
		})
	}
}

func leaseTokensOfOneClaim(t *testing.T, limited bool) {
	t.Helper()
	e := newEnv(t)
	if limited {
		_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "q", MaxRunning: 1000})
		require.NoError(t, err)
	}
	e.enqueue(t, "q", 200)
	first := e.claim(t, "q", 200)
	require.Len(t, first, 200)
	seen := map[int64]int64{}
	for _, td := range first {
		tok := td.GetLeaseToken()
		require.Positive(t, tok)
		_, dup := seen[tok]
		require.False(t, dup, "token %d handed out twice in one claim", tok)
		seen[tok] = td.GetId()
		require.Equal(t, tok, e.count(t, `SELECT lease_token FROM todos WHERE id = $1`, td.GetId()))
	}

	// A batch-mate's token fences like a guessed one.
	a, b := first[0], first[1]
	before := e.snapshot(t)
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, a.GetId(), b.GetLeaseToken()))
	require.Equal(t, before, e.snapshot(t), "another todo's token changes nothing")

	// Given back and claimed again (one statement, another draw): no todo
	// gets its old token back, and every old token is stale.
	for _, td := range first {
		_, err := e.srv.Release(e.worker(t), &queuev1.ReleaseRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
		require.NoError(t, err)
	}
	second := e.claim(t, "q", 200)
	require.Len(t, second, 200)
	old := map[int64]int64{}
	for _, td := range first {
		old[td.GetId()] = td.GetLeaseToken()
	}
	for _, td := range second {
		require.NotEqual(t, old[td.GetId()], td.GetLeaseToken(), "todo %d kept its token across claims", td.GetId())
	}
	require.Equal(t, allCodes(codes.FailedPrecondition), staleCalls(t, e, a.GetId(), a.GetLeaseToken()))
}
