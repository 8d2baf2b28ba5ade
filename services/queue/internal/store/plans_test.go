//go:build integration

package store

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// hotStatements are the statements Store runs on the hot pool.
var hotStatements = []string{
	"TodoClaim", "TodoHeartbeatBatch", "TodoSettle", "TodoGetMany", "TodoAckStates", "TodoGet",
	"TodoClaimLimited", "QueueLimitedGet", "QueueClaimHint",
}

// TestHotStatementsGenericPlans pins the generic plans of the worker
// statements, which the node's hot pool forces (plan_cache_mode =
// force_generic_plan): on a table of realistic size every access to todos
// goes through an index, and nothing hashes or merges whole relations. A
// statement whose generic plan depends on a parameter's value (such as
// joining a CTE whose LIMIT is a parameter) fails here.
func TestHotStatementsGenericPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	hot := pgtest.GenericPlanPool(t)
	s := New(hot, hot)

	var human uuid.UUID
	require.NoError(t, hot.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('plans@example.test') RETURNING id`).Scan(&human))
	_, err := hot.Exec(ctx, `INSERT INTO todos (human_id, queue) SELECT $1, 'q' FROM generate_series(1, 20000)`, human)
	require.NoError(t, err)
	_, err = hot.Exec(ctx, `ANALYZE todos`)
	require.NoError(t, err)

	// Run every hot statement once, so the session prepares it.
	c := Caller{HumanID: human}
	claimed, err := s.Claim(ctx, c, ClaimArgs{Queue: "q", Worker: "w", Max: 5})
	require.NoError(t, err)
	require.Len(t, claimed, 5)
	lease := func(i int) Lease { return Lease{ID: claimed[i].ID, Token: *claimed[i].LeaseToken} }
	_, err = s.Heartbeat(ctx, c, []HeartbeatItem{{Lease: lease(0)}})
	require.NoError(t, err)
	res, err := s.Complete(ctx, c, []CompleteItem{{Lease: lease(1)}, {Lease: Lease{ID: claimed[1].ID, Token: 99}}})
	require.NoError(t, err)
	require.Equal(t, []Outcome{OK, Stale}, []Outcome{res[0].Outcome, res[1].Outcome}, "the stale item runs TodoAckStates")
	_, err = s.CompleteTodos(ctx, c, []CompleteItem{{Lease: lease(2)}})
	require.NoError(t, err)
	_, _, err = s.Fail(ctx, c, FailArgs{Lease: lease(3), Error: "boom", Backoff: Backoff{Base: time.Second, Cap: time.Hour}})
	require.NoError(t, err)
	_, _, err = s.Release(ctx, c, lease(4), 0)
	require.NoError(t, err)

	// A limited queue with keyed todos: its claim, and the probe an empty
	// claim makes (the hint flips on the first empty fast claim).
	_, err = hot.Exec(ctx, `INSERT INTO todos (human_id, queue, concurrency_key)
		SELECT $1, 'lim', 'k' || (i % 100) FROM generate_series(1, 20000) AS i`, human)
	require.NoError(t, err)
	_, err = hot.Exec(ctx, `ANALYZE todos`)
	require.NoError(t, err)
	_, err = s.SetLimits(ctx, c, "lim", Limits{MaxRunning: 50, KeyMaxRunning: 2})
	require.NoError(t, err)
	limited, err := s.Claim(ctx, c, ClaimArgs{Queue: "lim", Worker: "w", Max: 10})
	require.NoError(t, err)
	require.Len(t, limited, 10)
	_, err = s.Complete(ctx, c, []CompleteItem{{Lease: Lease{ID: limited[0].ID, Token: *limited[0].LeaseToken}}})
	require.NoError(t, err)
	s.limited.Clear() // a node that has not learnt it yet: the fast claim finds nothing, the probe runs
	_, err = s.NextToken(ctx, c, "lim")
	require.NoError(t, err)
	limited, err = s.Claim(ctx, c, ClaimArgs{Queue: "lim", Worker: "w", Max: 10})
	require.NoError(t, err)
	require.Len(t, limited, 10)

	byQuery := preparedStatements(t, hot)
	for _, q := range hotStatements {
		plan, raw := genericPlan(t, hot, byQuery, q)
		require.NoError(t, plan.check(), "%s's generic plan:\n%s", q, raw)
		if q == "TodoClaimLimited" {
			// Every read of pending todos is a per-key (or keyless) probe of
			// idx_todos_pending_key: none walks the queue's whole pending set.
			for _, n := range plan.find("todos") {
				if n.NodeType != "ModifyTable" && n.Index != "todos_pkey" {
					require.Equal(t, "idx_todos_pending_key", n.Index, "%s", raw)
					require.Contains(t, n.IndexCond, "concurrency_key", "%s", raw)
				}
			}
		}
		if q == "TodoClaim" {
			// The pause probe: one primary-key lookup of queue_controls per
			// statement, not a scan.
			probes := plan.find("queue_controls")
			require.Len(t, probes, 1, "TodoClaim reads queue_controls once:\n%s", raw)
			require.Contains(t, []string{"Index Scan", "Index Only Scan"}, probes[0].NodeType, "%s", raw)
		}
	}
}

type prepared struct {
	name   string
	params int
}

// preparedStatements are the queue statements pool's connection prepared,
// by query name (the sessions of a one-connection pool).
func preparedStatements(t *testing.T, pool *pgxpool.Pool) map[string]prepared {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT name, statement, cardinality(parameter_types) FROM pg_prepared_statements`)
	require.NoError(t, err)
	byQuery := map[string]prepared{}
	queryName := regexp.MustCompile(`^-- name: (\w+)`)
	for rows.Next() {
		var p prepared
		var text string
		require.NoError(t, rows.Scan(&p.name, &text, &p.params))
		if m := queryName.FindStringSubmatch(text); m != nil {
			byQuery[m[1]] = p
		}
	}
	require.NoError(t, rows.Err())
	return byQuery
}

// genericPlan explains query q's generic plan (it does not depend on the
// values: NULLs will do).
func genericPlan(t *testing.T, pool *pgxpool.Pool, byQuery map[string]prepared, q string) (planNode, []byte) {
	t.Helper()
	p, ok := byQuery[q]
	require.True(t, ok, "%s was not prepared", q)
	args := strings.TrimSuffix(strings.Repeat("NULL, ", p.params), ", ")
	var plan []struct{ Plan planNode }
	var raw []byte
	require.NoError(t, pool.QueryRow(t.Context(), fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE %q (%s)`, p.name, args)).Scan(&raw))
	require.NoError(t, json.Unmarshal(raw, &plan))
	require.Len(t, plan, 1)
	return plan[0].Plan, raw
}

// find returns the nodes of the plan that read relation rel.
func (n planNode) find(rel string) []planNode {
	var out []planNode
	if n.Relation == rel {
		out = append(out, n)
	}
	for _, c := range n.Plans {
		out = append(out, c.find(rel)...)
	}
	return out
}

type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

// check walks the plan: todos is only ever read through an index, and no
// node joins by hashing or merging.
func (n planNode) check() error {
	switch {
	case n.NodeType == "Hash Join" || n.NodeType == "Merge Join" || n.NodeType == "Hash":
		return fmt.Errorf("%s node", n.NodeType)
	case n.Relation == "todos" && n.NodeType != "Index Scan" && n.NodeType != "Index Only Scan" &&
		n.NodeType != "Bitmap Heap Scan" && n.NodeType != "ModifyTable":
		return fmt.Errorf("todos read by %s", n.NodeType)
	}
	for _, c := range n.Plans {
		if err := c.check(); err != nil {
			return err
		}
	}
	return nil
}
