//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// auditSQL installs the completion audit in a scenario's database, after
// the nodes migrated it. The trigger records every transition of a todo to
// completed, and a completed row completed again (a new finished_at), so a
// todo completed twice leaves two rows whatever path did it. The audit is
// the test's own: no server code knows about it.
const auditSQL = `
CREATE TABLE chaos_completions (
    todo_id bigint      NOT NULL,
    attempt integer     NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON chaos_completions (at);
CREATE FUNCTION chaos_record_completion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chaos_completions (todo_id, attempt) VALUES (NEW.id, NEW.attempt);
    RETURN NULL;
END $$;
CREATE TRIGGER chaos_completions AFTER UPDATE ON todos FOR EACH ROW
    WHEN (NEW.state = 'completed' AND (OLD.state <> 'completed' OR OLD.finished_at IS DISTINCT FROM NEW.finished_at))
    EXECUTE FUNCTION chaos_record_completion();
`

// dbCounts is what the database says about one queue.
type dbCounts struct {
	rows, completed, dead, pending, running int64
	redelivered                             int64 // todos claimed more than once (attempt > 1)
	extraAttempts                           int64 // claims beyond the first, over all todos
	completions                             int64 // rows in chaos_completions
	doubles                                 int64 // completions beyond the first per todo
}

func countQueue(ctx context.Context, db *pgxpool.Pool, queue string) (dbCounts, error) {
	var c dbCounts
	err := db.QueryRow(ctx, `
SELECT count(*),
       count(*) FILTER (WHERE state = 'completed'),
       count(*) FILTER (WHERE state = 'dead'),
       count(*) FILTER (WHERE state = 'pending'),
       count(*) FILTER (WHERE state = 'running'),
       count(*) FILTER (WHERE attempt > 1),
       coalesce(sum(greatest(attempt - 1, 0)), 0)
FROM todos WHERE queue = $1`, queue).Scan(&c.rows, &c.completed, &c.dead, &c.pending, &c.running, &c.redelivered, &c.extraAttempts)
	if err != nil {
		return c, err
	}
	err = db.QueryRow(ctx, `
SELECT count(*), count(*) - count(DISTINCT a.todo_id)
FROM chaos_completions a JOIN todos t ON t.id = a.todo_id WHERE t.queue = $1`, queue).Scan(&c.completions, &c.doubles)
	return c, err
}

// firstCompletionAfter is how long after at the first completion of queue
// was recorded (-1 when none was).
func firstCompletionAfter(ctx context.Context, db *pgxpool.Pool, queue string, at time.Time) (time.Duration, error) {
	var first *time.Time
	err := db.QueryRow(ctx, `
SELECT min(a.at) FROM chaos_completions a JOIN todos t ON t.id = a.todo_id
WHERE t.queue = $1 AND a.at >= $2`, queue, at).Scan(&first)
	if err != nil || first == nil {
		return -1, err
	}
	return first.Sub(at), nil
}

// longestStall is the longest time without a completion of queue in the
// window [from, to], counting from from itself: how long completions stopped
// around a fault. Gaps at the edges count (from → first, last → to).
func longestStall(ctx context.Context, db *pgxpool.Pool, queue string, from, to time.Time) (time.Duration, error) {
	var gap *time.Duration
	err := db.QueryRow(ctx, `
WITH points AS (
    SELECT $2::timestamptz AS at
    UNION ALL
    SELECT a.at FROM chaos_completions a JOIN todos t ON t.id = a.todo_id
    WHERE t.queue = $1 AND a.at > $2 AND a.at < $3
    UNION ALL
    SELECT $3::timestamptz
)
SELECT max(gap) FROM (SELECT at - lag(at) OVER (ORDER BY at) AS gap FROM points) g`, queue, from, to).Scan(&gap)
	if err != nil || gap == nil {
		return -1, err
	}
	return *gap, nil
}

// notCompleted describes up to 10 todos of queue that are not completed,
// for the failure message of a lost todo.
func notCompleted(ctx context.Context, db *pgxpool.Pool, queue string) string {
	rows, err := db.Query(ctx, `
SELECT id, state, attempt, coalesce(lease_owner, ''), coalesce(last_error, '')
FROM todos WHERE queue = $1 AND state <> 'completed' ORDER BY id LIMIT 10`, queue)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	s := ""
	for rows.Next() {
		var id int64
		var attempt int32
		var state, owner, last string
		if err := rows.Scan(&id, &state, &attempt, &owner, &last); err != nil {
			return err.Error()
		}
		s += fmt.Sprintf("  todo %d: %s, attempt %d, owner %q, last error %q\n", id, state, attempt, owner, last)
	}
	return s
}

// sdkTally is what the workers' OnAck lines and Stats say, over every run
// of every worker of a scenario.
type sdkTally struct {
	outcomes     map[string]int64
	doubles      int64    // todos more than one OnAck reported Completed for
	unconfirmed  []string // the errors of the first Unconfirmed outcomes
	retried      int64    // Stats.AcksRetried
	recovered    int64    // Stats.AcksRecovered
	already      int64    // Stats.AcksAlready
	abandoned    int64    // Stats.AcksAbandoned
	claimErrors  int64    // Stats.ClaimErrors
	runs, finals int      // worker runs, and those that ended gracefully
}

func tallyWorkers(ws []*workerProc) (sdkTally, error) {
	s := sdkTally{outcomes: map[string]int64{}}
	completed := map[int64]int{}
	for _, w := range ws {
		for _, path := range w.outs {
			s.runs++
			var last *ackLine
			if err := eachLine(path, func(l ackLine) {
				switch l.Kind {
				case "ack":
					s.outcomes[l.Outcome]++
					if l.Outcome == "completed" {
						completed[l.ID]++
					}
					if l.Outcome == "unconfirmed" && len(s.unconfirmed) < 5 {
						s.unconfirmed = append(s.unconfirmed, fmt.Sprintf("todo %d: %s", l.ID, l.Err))
					}
				case "stats":
					last = &l
				}
			}); err != nil {
				return s, err
			}
			if last != nil {
				s.retried += last.Stats.AcksRetried
				s.recovered += last.Stats.AcksRecovered
				s.already += last.Stats.AcksAlready
				s.abandoned += last.Stats.AcksAbandoned
				s.claimErrors += last.Stats.ClaimErrors
				if last.Final {
					s.finals++
				}
			}
		}
	}
	for _, n := range completed {
		if n > 1 {
			s.doubles++
		}
	}
	// A killed run's last stats line may predate an Unconfirmed it then
	// reported: the OnAck lines are exact, so take the larger.
	s.abandoned = max(s.abandoned, s.outcomes["unconfirmed"])
	return s, nil
}

func eachLine(path string, f func(ackLine)) error {
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // the run was killed before it wrote anything
	}
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l ackLine
		if json.Unmarshal(sc.Bytes(), &l) == nil { // a SIGKILL can cut the last line short
			f(l)
		}
	}
	return sc.Err()
}

// outcomeList renders outcome counts in a stable order.
func outcomeList(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf("%s=%d ", k, m[k])
	}
	return s
}
