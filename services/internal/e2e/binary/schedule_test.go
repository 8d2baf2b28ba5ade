//go:build e2e

package binary_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// TestScheduleOneTodoPerTickAcrossThreeNodes is the schedules' headline: an
// "@every 1s" schedule on three switchboard processes, no leader among
// them, makes exactly one todo per tick for 20 ticks and more in a row (no
// gap, no duplicate) while the processes are killed (SIGKILL) or stopped
// (SIGTERM, which must drain and exit 0) and restarted, one at a time, each
// twice. Every node's ticker races for every tick; a trigger of the test's
// own records each applied mark, so a tick marked by two nodes fails the
// test even though the tick's dedupe key would still keep its todo unique.
// Each step waits for ticks to arrive, never for a time.
func TestScheduleOneTodoPerTickAcrossThreeNodes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, db, func(c *pgxpool.Config) { c.MaxConns = 2 })
	incarnation := 0
	start := func(slot int) *e2etest.Node {
		incarnation++
		return e2etest.StartNode(t, db, fmt.Sprintf("sched-%d-%d", slot, incarnation))
	}
	nodes := []*e2etest.Node{start(0), start(1), start(2)}
	// Every second is below the default minimum interval: the operator
	// allows it (queue.schedules, read on every creation and tick).
	_, err := pool.Exec(t.Context(), `UPDATE settings SET value = '{"min_interval_seconds": 1}' WHERE key = 'queue.schedules'`)
	require.NoError(t, err)

	// Created over REST on one node, in a named zone: the binary carries
	// its own time zone database (time/tzdata).
	body := `{"name":"every-second","cron":"@every 1s","time_zone":"Europe/Berlin","template":{"queue":"ticks","kind":"tick"}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+nodes[0].HTTP+"/api/schedules", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e2etest.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var created struct {
		Schedule struct {
			ID string `json:"id"`
		} `json:"schedule"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	id := created.Schedule.ID
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
	for round := range 6 { // each process stopped and replaced twice, one at a time
		slot := round % 3
		if round%2 == 0 {
			require.NoError(t, nodes[slot].Signal(syscall.SIGKILL))
			<-nodes[slot].Done()
		} else {
			code, _ := nodes[slot].SignalAndWait(t, syscall.SIGTERM, time.Minute)
			require.Equal(t, 0, code, "SIGTERM drains and exits 0:\n%s", nodes[slot].Output())
		}
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
	var twice, orphans int64
	require.NoError(t, pool.QueryRow(t.Context(),
		`SELECT count(*) FROM (SELECT 1 FROM marks GROUP BY expected HAVING count(*) > 1) AS d`).Scan(&twice))
	require.Zero(t, twice, "a tick marked by two nodes")
	require.NoError(t, pool.QueryRow(t.Context(), `
		SELECT count(*) FROM marks AS m
		WHERE NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.dedupe_key = 'schedule:' || $1 || ':' || extract(epoch FROM m.expected)::bigint)`,
		id).Scan(&orphans))
	require.Zero(t, orphans, "a mark that made no todo")
	t.Logf("%d ticks in a row, each one todo, through 6 kills and restarts", len(got))
}
