//go:build integration

package node_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/config"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestScheduleOneTodoPerTickAcrossThreeNodes is the schedules' headline: an
// "@every 1s" schedule on three queue nodes, no leader among them, makes
// exactly one todo per tick for 20 ticks and more in a row (no gap, no
// duplicate) while the nodes are stopped (SIGTERM's drain) and replaced one
// after the other. Every node's ticker races for every tick; a trigger of
// the test's own records each applied mark, so a tick marked twice fails
// the test even though the tick's dedupe key would still keep its todo
// unique. Each step waits for ticks to arrive, never for a time.
func TestScheduleOneTodoPerTickAcrossThreeNodes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, db, func(c *pgxpool.Config) { c.MaxConns = 2 })
	incarnation := 0
	start := func(slot int) *testBundle {
		incarnation++
		id := fmt.Sprintf("sched-%d-%d", slot, incarnation)
		return setupFull(t, "queue", db, func(c *config.Config) { named(id)(c); steadyHeartbeat(c) })
	}
	nodes := []*testBundle{start(0), start(1), start(2)}

	res, err := queuev1.NewQueueServiceClient(nodes[0].conn).CreateSchedule(t.Context(), &queuev1.CreateScheduleRequest{
		Name: "every-second", Cron: "@every 1s", Template: &queuev1.EnqueueRequest{Queue: "ticks", Kind: "tick"},
	})
	require.NoError(t, err)
	id := res.GetSchedule().GetId()
	_, err = pool.Exec(t.Context(), `
		CREATE TABLE marks (expected timestamptz);
		CREATE FUNCTION record_mark() RETURNS trigger LANGUAGE plpgsql AS
		  $$BEGIN INSERT INTO marks VALUES (OLD.next_run_at); RETURN NEW; END$$;
		CREATE TRIGGER record_mark AFTER UPDATE OF next_run_at ON schedules FOR EACH ROW EXECUTE FUNCTION record_mark();`)
	require.NoError(t, err)

	ticks := func() []int64 {
		rows, err := pool.Query(t.Context(),
			`SELECT split_part(dedupe_key, ':', 3)::bigint FROM todos WHERE dedupe_key LIKE 'schedule:' || $1 || ':%' ORDER BY 1`, id)
		require.NoError(t, err)
		var out []int64
		for rows.Next() {
			var n int64
			require.NoError(t, rows.Scan(&n))
			out = append(out, n)
		}
		require.NoError(t, rows.Err())
		return out
	}
	// waitTicks waits until n more ticks than now have made their todo.
	waitTicks := func(n int) {
		t.Helper()
		have := len(ticks())
		require.Eventually(t, func() bool { return len(ticks()) >= have+n }, time.Minute, 50*time.Millisecond,
			"the schedule stopped ticking at %d todos", have)
	}

	waitTicks(2)
	for round := range 6 { // each node stopped and replaced twice, one at a time
		slot := round % 3
		require.NoError(t, nodes[slot].stop(), "node %d did not drain cleanly", slot)
		waitTicks(2) // the two others keep ticking
		nodes[slot] = start(slot)
		waitTicks(2)
	}
	waitTicks(2)

	got := ticks()
	require.GreaterOrEqual(t, len(got), 20)
	for i := range got {
		require.Equal(t, got[0]+int64(i), got[i], "tick %d of %d: a gap or a duplicate", i, len(got))
	}
	var marks, twice int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM marks`).Scan(&marks))
	require.NoError(t, pool.QueryRow(t.Context(),
		`SELECT count(*) FROM (SELECT 1 FROM marks GROUP BY expected HAVING count(*) > 1) AS d`).Scan(&twice))
	require.Zero(t, twice, "a tick marked by two nodes")
	// Ticks made after the last count are marked too; none is marked without its todo.
	require.GreaterOrEqual(t, marks, int64(len(got)))
	var orphans int64
	require.NoError(t, pool.QueryRow(t.Context(), `
		SELECT count(*) FROM marks AS m
		WHERE NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.dedupe_key = 'schedule:' || $1 || ':' || extract(epoch FROM m.expected)::bigint)`,
		id).Scan(&orphans))
	require.Zero(t, orphans, "a mark that made no todo")
}
