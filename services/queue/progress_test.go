//go:build integration

package queue_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// progressEvents records the todo.progress events a server emits.
type progressEvents struct {
	mu  sync.Mutex
	evs []queue.TodoEvent
}

func (p *progressEvents) hook(ev queue.TodoEvent) {
	if ev.Kind != queue.EventProgress {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, ev)
}

func (p *progressEvents) all() []queue.TodoEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]queue.TodoEvent(nil), p.evs...)
}

// TestHeartbeatProgress: progress sent with a heartbeat through the merged
// path (the merger components run) is stored, returned by GetTodo and
// ListTodos with its time, and emitted as todo.progress after the commit; a
// heartbeat without progress keeps it; a newer report replaces it whole.
func TestHeartbeatProgress(t *testing.T) {
	t.Parallel()
	var got progressEvents
	e := newEnv(t)
	s, _ := startMerging(t, e, queue.Options{OnChange: got.hook, MergeWindow: time.Millisecond})
	e.enqueue(t, "p", 1)
	td := e.claimOne(t, "p")
	require.Nil(t, td.GetProgress(), "a fresh claim has no progress")

	before := e.dbNow(t)
	_, err := s.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{
		Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: payload(t, map[string]any{"done": 40, "total": 100}),
	})
	require.NoError(t, err)
	stored := e.get(t, td.GetId())
	require.Equal(t, map[string]any{"done": 40.0, "total": 100.0}, stored.GetProgress().AsMap())
	require.False(t, stored.GetProgressAt().AsTime().Before(before), "progress_at is the heartbeat's database time")

	evs := got.all()
	require.Len(t, evs, 1)
	require.Equal(t, td.GetId(), evs[0].TodoID)
	require.Equal(t, "p", evs[0].Queue)
	require.Equal(t, e.human, evs[0].HumanID)
	require.Equal(t, "running", evs[0].State)
	require.JSONEq(t, `{"done":40,"total":100}`, string(evs[0].Progress))
	require.True(t, evs[0].ProgressAt.Equal(stored.GetProgressAt().AsTime()))

	// Without progress: the lease is renewed, the progress and its time stay,
	// and nothing is emitted.
	_, err = s.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), LeaseSeconds: 600})
	require.NoError(t, err)
	kept := e.get(t, td.GetId())
	require.Equal(t, stored.GetProgress().AsMap(), kept.GetProgress().AsMap())
	require.True(t, kept.GetProgressAt().AsTime().Equal(stored.GetProgressAt().AsTime()))
	require.True(t, kept.GetLeaseExpiresAt().AsTime().After(stored.GetLeaseExpiresAt().AsTime()), "the lease was renewed")
	require.Len(t, got.all(), 1)

	// A newer report replaces the object whole (no merge of keys).
	_, err = s.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{
		Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: payload(t, map[string]any{"stage": "upload"}),
	})
	require.NoError(t, err)
	list, err := e.srv.ListTodos(e.owner(t), &queuev1.ListTodosRequest{Queue: "p"})
	require.NoError(t, err)
	require.Len(t, list.GetTodos(), 1)
	require.Equal(t, map[string]any{"stage": "upload"}, list.GetTodos()[0].GetProgress().AsMap())
	require.Len(t, got.all(), 2)
}

// TestFencedHeartbeatWritesNoProgress: a heartbeat with a stale lease token
// (an earlier claim's) is FAILED_PRECONDITION and stores no progress, alone
// or in a batch next to a valid item, and emits nothing for it.
func TestFencedHeartbeatWritesNoProgress(t *testing.T) {
	t.Parallel()
	var got progressEvents
	e := newEnv(t, queue.Options{OnChange: got.hook})
	e.enqueue(t, "p", 1)
	first := e.claimOne(t, "p")
	e.expire(t, first.GetId())
	_, err := e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	e.makeDue(t, first.GetId())
	second := e.claimOne(t, "p")
	require.Equal(t, first.GetId(), second.GetId(), "the same todo, claimed again")
	e.enqueue(t, "p", 1)
	other := e.claimOne(t, "p")

	stale := payload(t, map[string]any{"from": "the old lease"})
	_, err = e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: first.GetId(), LeaseToken: first.GetLeaseToken(), Progress: stale})
	require.Equal(t, codes.FailedPrecondition, code(err))
	require.Nil(t, e.get(t, first.GetId()).GetProgress())

	res, err := e.srv.HeartbeatBatch(e.worker(t), &queuev1.HeartbeatBatchRequest{Items: []*queuev1.HeartbeatRequest{
		{Id: first.GetId(), LeaseToken: first.GetLeaseToken(), Progress: stale},
		{Id: other.GetId(), LeaseToken: other.GetLeaseToken(), Progress: payload(t, map[string]any{"ok": true})},
	}})
	require.NoError(t, err)
	require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_STALE_LEASE, res.GetResults()[0].GetOutcome())
	require.Equal(t, queuev1.BatchOutcome_BATCH_OUTCOME_OK, res.GetResults()[1].GetOutcome())
	require.Nil(t, e.get(t, first.GetId()).GetProgress(), "the fenced item wrote nothing")
	require.Equal(t, map[string]any{"ok": true}, e.get(t, other.GetId()).GetProgress().AsMap())
	evs := got.all()
	require.Len(t, evs, 1)
	require.Equal(t, other.GetId(), evs[0].TodoID)
}

// TestClaimClearsProgress: progress belongs to an attempt; the next claim
// of the todo starts without it.
func TestClaimClearsProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(t, "p", 1)
	td := e.claimOne(t, "p")
	_, err := e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: payload(t, map[string]any{"n": 1})})
	require.NoError(t, err)
	_, err = e.srv.Release(e.worker(t), &queuev1.ReleaseRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
	require.NoError(t, err)
	require.NotNil(t, e.get(t, td.GetId()).GetProgress(), "a finished or released attempt keeps its last progress")
	again := e.claimOne(t, "p")
	require.Nil(t, again.GetProgress())
	require.Nil(t, again.GetProgressAt())
	require.Nil(t, e.get(t, td.GetId()).GetProgress())
}

// TestOversizeProgressRefused: progress over 1 KiB serialized is
// INVALID_ARGUMENT naming the field (items[i].progress in a batch), and the
// heartbeat changes nothing, not even the lease.
func TestOversizeProgressRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.enqueue(t, "p", 1)
	td := e.claimOne(t, "p")
	before := e.snapshot(t)
	// {"s":"…"} is 8 bytes of JSON around the string: 1017 characters is 1025 bytes.
	big := payload(t, map[string]any{"s": strings.Repeat("x", 1017)})
	fits := payload(t, map[string]any{"s": strings.Repeat("x", 1016)})

	_, err := e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: big})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "progress", onlyViolatedField(t, err))
	require.Contains(t, err.Error(), "1 KiB")

	_, err = e.srv.HeartbeatBatch(e.worker(t), &queuev1.HeartbeatBatchRequest{Items: []*queuev1.HeartbeatRequest{
		{Id: td.GetId(), LeaseToken: td.GetLeaseToken()},
		{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: big},
	}})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "items[1].progress", onlyViolatedField(t, err))
	require.Equal(t, before, e.snapshot(t), "a refused heartbeat changes nothing")

	_, err = e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: fits})
	require.NoError(t, err, "exactly 1 KiB is accepted")
	raw, err := json.Marshal(e.get(t, td.GetId()).GetProgress().AsMap())
	require.NoError(t, err)
	require.Len(t, raw, 1024)
}

// onlyViolatedField is the one field an INVALID_ARGUMENT error names (it
// fails unless there is exactly one).
func onlyViolatedField(t *testing.T, err error) string {
	t.Helper()
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Violations, 1)
	return ae.Violations[0].Field
}

// TestProgressHeartbeatsAreHOT: progress is in no index, so a heartbeat
// that carries it is a HOT update (no index entry per heartbeat), as the
// lease columns are. The statistics reach pg_stat_user_tables when the
// writing session flushes them, at the latest when it ends: the worker
// statements run on a pool of the test's own, whose sessions it closes, and
// it waits until every update is counted.
func TestProgressHeartbeatsAreHOT(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hot := pgtest.OpenPool(t, e.url, nil)
	e.srv = queue.New(zap.NewNop(), e.pool, queue.Options{HotPool: hot})
	e.enqueue(t, "p", 1)
	td := e.claimOne(t, "p")
	hot.Reset() // flushes the claim's statistics
	updates := func() (all, hot int64) {
		require.NoError(t, e.pool.QueryRow(t.Context(),
			`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'todos'`).Scan(&all, &hot))
		return all, hot
	}
	var all0, hot0 int64
	require.Eventually(t, func() bool { all0, hot0 = updates(); return all0 == 1 }, time.Minute, 10*time.Millisecond,
		"the claim's update is counted")
	const beats = 10
	for i := range beats {
		_, err := e.srv.Heartbeat(e.worker(t), &queuev1.HeartbeatRequest{
			Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Progress: payload(t, map[string]any{"done": i, "note": strings.Repeat("n", 60)}),
		})
		require.NoError(t, err)
	}
	hot.Reset()
	var all, hots int64
	require.Eventually(t, func() bool { all, hots = updates(); return all == all0+beats }, time.Minute, 10*time.Millisecond)
	require.Equal(t, int64(beats), hots-hot0, "every heartbeat with progress was a HOT update")
}
