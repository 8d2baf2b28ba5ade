//go:build integration

package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/queue"
)

// finish completes n todos of q and returns their ids.
func (e *env) finish(t *testing.T, q string, n int) []int64 {
	t.Helper()
	e.enqueue(t, q, n)
	todos := e.claim(t, q, int32(n)) //nolint:gosec // small
	ids := make([]int64, len(todos))
	for i, td := range todos {
		_, err := e.srv.Complete(e.worker(t), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
		require.NoError(t, err)
		ids[i] = td.GetId()
	}
	return ids
}

func (e *env) setRetention(t *testing.T, value string) {
	t.Helper()
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = $1 WHERE key = 'retention.todos'`, value)
	require.NoError(t, err)
}

func TestRetentionByAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{RetentionBatch: 2}) // several batches
	e.setRetention(t, `{"max_age_seconds": 3600, "max_rows": 1000, "max_rows_per_tenant": 1000}`)
	old := e.finish(t, "q", 5)
	fresh := e.finish(t, "q", 3)
	live := e.enqueue(t, "q", 2)
	_, err := e.pool.Exec(t.Context(), `UPDATE todos SET finished_at = now() - interval '2 hours', created_at = now() - interval '3 hours' WHERE id = ANY($1)`, old)
	require.NoError(t, err)
	// An old pending todo is live work: never pruned.
	_, err = e.pool.Exec(t.Context(), `UPDATE todos SET created_at = now() - interval '30 days' WHERE id = $1`, live[0])
	require.NoError(t, err)

	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE id = ANY($1)`, old))
	require.EqualValues(t, 3, e.count(t, `SELECT count(*) FROM todos WHERE id = ANY($1)`, fresh))
	require.EqualValues(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE state = 'pending'`))
}

func TestRetentionByRowCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{RetentionBatch: 3})
	e.setRetention(t, `{"max_age_seconds": 604800, "max_rows": 1000, "max_rows_per_tenant": 4}`)
	ids := e.finish(t, "q", 10)
	e.enqueue(t, "q", 3) // live
	// Give them distinct finish times: ids[i] finished i minutes after ids[0].
	for i, id := range ids {
		_, err := e.pool.Exec(t.Context(), `UPDATE todos SET finished_at = now() - make_interval(mins => 60 - $2::int) WHERE id = $1`, id, i)
		require.NoError(t, err)
	}
	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 6, n)
	require.EqualValues(t, 4, e.count(t, `SELECT count(*) FROM todos WHERE id = ANY($1)`, ids[6:]), "the newest max_rows_per_tenant stay")
	require.EqualValues(t, 3, e.count(t, `SELECT count(*) FROM todos WHERE state = 'pending'`))
	n, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestComponents: the reaper and the schedule ticker run on their own once
// started; every component starts and stops cleanly, Stop is safe before
// Start and twice.
func TestComponents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{ReapInterval: 10 * time.Millisecond, RetentionInterval: 10 * time.Millisecond})
	comps := e.srv.Components()
	require.Len(t, comps, 7)
	require.Equal(t, queue.Name+"-notifier", comps[0].Name(), "without Options.Notifier its own, first (it stops last)")
	names := map[string]bool{}
	for _, c := range comps {
		names[c.Name()] = true
		require.NoError(t, c.Stop(t.Context()), "stop before start")
	}
	require.Len(t, names, 7)
	shared := queue.New(zap.NewNop(), e.pool, queue.Options{Notifier: pgnotify.New(zap.NewNop(), e.pool, pgnotify.Options{})})
	require.Len(t, shared.Components(), 6, "a shared notifier is the node's to run")

	fresh := queue.New(zap.NewNop(), e.pool, queue.Options{
		ReapInterval: 10 * time.Millisecond, RetentionInterval: 10 * time.Millisecond, ScheduleInterval: 10 * time.Millisecond,
	})
	sched := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "s", Cron: "@every 1h", Template: &queuev1.EnqueueRequest{Queue: "from-schedule"}})
	e.dueAt(t, sched.GetId(), 0)
	id := e.enqueue(t, "q", 1)[0]
	e.claimOne(t, "q")
	e.expire(t, id)
	for _, c := range fresh.Components() {
		require.NoError(t, c.Start(t.Context()))
		require.NoError(t, c.Start(t.Context()), "start twice is a no-op")
	}
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM todos WHERE id = $1 AND state = 'pending'`, id) == 1
	}, 20*time.Second, 5*time.Millisecond, "the reaper redelivers the expired lease")
	require.Eventually(t, func() bool {
		return e.count(t, `SELECT count(*) FROM todos WHERE queue = 'from-schedule'`) == 1
	}, 20*time.Second, 5*time.Millisecond, "the ticker fires the due tick")
	for _, c := range fresh.Components() {
		require.NoError(t, c.Stop(context.Background()))
		require.NoError(t, c.Stop(context.Background()), "stop twice")
	}
}
