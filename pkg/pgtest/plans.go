//go:build integration || e2e

package pgtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// GenericPlanPool opens a pool of one session on a new database whose
// prepared statements are all planned generically (plan_cache_mode =
// force_generic_plan: what the node's hot pool forces, and what any pooled
// session settles on), so GenericPlan explains the plans the statements run
// with.
func GenericPlanPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return OpenPool(tb, NewDatabase(tb), func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		c.MaxConns = 1 // one session, whose prepared statements GenericPlan explains
	})
}

// Plan is a node of a plan as EXPLAIN (FORMAT JSON) shows it.
type Plan struct {
	NodeType string `json:"Node Type"`
	Relation string `json:"Relation Name"`
	Index    string `json:"Index Name"`
	Plans    []Plan `json:"Plans"`
}

// Reads returns the nodes of the plan that read (or write) relation rel.
func (p Plan) Reads(rel string) []Plan {
	var out []Plan
	if p.Relation == rel {
		out = append(out, p)
	}
	for _, c := range p.Plans {
		out = append(out, c.Reads(rel)...)
	}
	return out
}

// GenericPlan explains the plan of the sqlc query called name (its text
// starts "-- name: <name> ") as the one session of pool prepared it: give
// the pool MaxConns 1 and plan_cache_mode force_generic_plan, and run the
// query through it first. The plan does not depend on the values, so every
// parameter is NULL. It returns the plan and the raw EXPLAIN, to show when
// a check fails.
func GenericPlan(tb testing.TB, pool *pgxpool.Pool, name string) (Plan, []byte) {
	tb.Helper()
	var stmt string
	var params int
	err := pool.QueryRow(tb.Context(), `SELECT name, cardinality(parameter_types) FROM pg_prepared_statements
		WHERE statement LIKE '-- name: ' || $1 || ' %'`, name).Scan(&stmt, &params)
	if err != nil {
		tb.Fatalf("pgtest: %s was not prepared: %v", name, err)
	}
	args := ""
	if params > 0 {
		args = "(" + strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ") + ")"
	}
	var raw []byte
	if err := pool.QueryRow(tb.Context(), fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE %q %s`, stmt, args)).Scan(&raw); err != nil {
		tb.Fatalf("pgtest: explain %s: %v", name, err)
	}
	var plan []struct{ Plan Plan }
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		tb.Fatalf("pgtest: explain %s: %v\n%s", name, err, raw)
	}
	return plan[0].Plan, raw
}

// Indexes returns the indexes the plan reads rel through, sorted, or an
// error when a node reads rel otherwise: a sequential scan, or a bitmap scan
// (which reads all of a range before any LIMIT applies).
func (p Plan) Indexes(rel string) ([]string, error) {
	seen := map[string]bool{}
	for _, n := range p.Reads(rel) {
		switch n.NodeType {
		case "Index Scan", "Index Only Scan":
			seen[n.Index] = true
		case "ModifyTable":
		default:
			return nil, fmt.Errorf("%s read by %s", rel, n.NodeType)
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
