//go:build integration

package queue_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/queue"
)

// counts reads a queue's counters.
func counts(r *metrics.Registry, q string) map[string]float64 {
	s := r.Queue.For(uuid.Nil, q)
	return map[string]float64{
		"enqueued": testutil.ToFloat64(s.Enqueued), "claimed": testutil.ToFloat64(s.Claimed),
		"completed": testutil.ToFloat64(s.Completed), "failed": testutil.ToFloat64(s.Failed),
		"dead": testutil.ToFloat64(s.Dead), "expired": testutil.ToFloat64(s.LeaseExpired),
	}
}

// Every transition is counted once per todo, however it was batched: a
// batch enqueue with a duplicate, a claim of several, a batch ack retried,
// a retry, a dead letter and a lease expiry.
func TestMetricsCountEachTodoOnce(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	e := newEnv(t, queue.Options{Metrics: r})
	ctx := e.owner(t)
	reqs := []*queuev1.EnqueueRequest{{Kind: "a", DedupeKey: "k1"}, {Kind: "b"}, {Kind: "c"}, {Kind: "d"}}
	_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: "jobs", Requests: reqs})
	require.NoError(t, err)
	_, err = e.srv.Enqueue(ctx, &queuev1.EnqueueRequest{Queue: "jobs", Kind: "a", DedupeKey: "k1"})
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"enqueued": 4, "claimed": 0, "completed": 0, "failed": 0, "dead": 0, "expired": 0}, counts(r, "jobs"),
		"the duplicate is not a new todo")

	todos := e.claim(t, "jobs", 4)
	require.Len(t, todos, 4)
	items := []*queuev1.CompleteRequest{
		{Id: todos[0].GetId(), LeaseToken: todos[0].GetLeaseToken()},
		{Id: todos[1].GetId(), LeaseToken: todos[1].GetLeaseToken()},
	}
	for range 2 { // the second is a retried ack: ALREADY, counted once
		_, err = e.srv.CompleteBatch(e.worker(t), &queuev1.CompleteBatchRequest{Items: items})
		require.NoError(t, err)
	}
	_, err = e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: todos[2].GetId(), LeaseToken: todos[2].GetLeaseToken(), Error: "again"})
	require.NoError(t, err)
	_, err = e.srv.Fail(e.worker(t), &queuev1.FailRequest{Id: todos[3].GetId(), LeaseToken: todos[3].GetLeaseToken(), Error: "no", DeadLetter: true})
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"enqueued": 4, "claimed": 4, "completed": 2, "failed": 1, "dead": 1, "expired": 0}, counts(r, "jobs"))
	require.Equal(t, uint64(4), sample(t, r, "switchboard_queue_todo_wait_seconds", "jobs", "").GetHistogram().GetSampleCount())
	require.Equal(t, uint64(2), sample(t, r, "switchboard_queue_todo_run_seconds", "jobs", "").GetHistogram().GetSampleCount(),
		"one run per completion")

	// A lease that expires: counted by the reaper, once.
	e.enqueue(t, "jobs", 1)
	td := e.claimOne(t, "jobs")
	e.expire(t, td.GetId())
	n, err := e.srv.ReapOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, map[string]float64{"enqueued": 5, "claimed": 5, "completed": 2, "failed": 1, "dead": 1, "expired": 1}, counts(r, "jobs"))
}

// The depth gauges: one query over the live todos, per queue and state, and
// the oldest due pending todo's age.
func TestSampleDepths(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	e := newEnv(t, queue.Options{Metrics: r})
	e.enqueue(t, "mail", 3)
	e.claimOne(t, "mail")
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET run_at = now() - interval '1 minute', created_at = now() - interval '1 minute' WHERE state = 'pending'`)
	require.NoError(t, err)
	groups, err := e.srv.SampleDepths(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, groups)
	require.InDelta(t, 2, sample(t, r, "switchboard_queue_todos", "mail", "pending").GetGauge().GetValue(), 0)
	require.InDelta(t, 1, sample(t, r, "switchboard_queue_todos", "mail", "running").GetGauge().GetValue(), 0)
	age := sample(t, r, "switchboard_queue_oldest_pending_age_seconds", "mail", "").GetGauge().GetValue()
	require.InDelta(t, 60, age, 30)
}

// sample is the series of name for queue (and state, when not empty).
func sample(t *testing.T, r *metrics.Registry, name, q, state string) *dto.Metric {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["queue"] == q && got["state"] == state {
				return m
			}
		}
	}
	t.Fatalf("no %s{queue=%q,state=%q}", name, q, state)
	return nil
}
