//go:build integration

package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestAgentListReadsAboutAPage pins the plan of an agent's ListEvents under
// a generic plan (what a pooled session settles on after a few calls): it
// merges ordered index scans of idx_events_agent, idx_events_shared and
// idx_events_published_by by id, with no sort and no scan of the tenant's
// other events, so a page costs about a page of rows however few of the
// tenant's events are the agent's.
func TestAgentListReadsAboutAPage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.GenericPlanPool(t)
	s := New(pool, nil, nil)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('plans@example.test') RETURNING id`).Scan(&human))
	// 20,000 events over 100 agents; agent 0 has one in a thousand, and one
	// in 2,500 is shared.
	_, err := pool.Exec(ctx, `
		WITH a AS (INSERT INTO agents (human_id, name) SELECT $1, 'a' || g FROM generate_series(0, 99) AS g RETURNING id, name)
		INSERT INTO events (human_id, source, agent_id, published_by, payload, size_bytes)
		SELECT $1, 'publish',
		       CASE WHEN g % 2500 = 1 THEN NULL
		            ELSE (SELECT id FROM a WHERE name = 'a' || CASE WHEN g % 1000 = 0 THEN 0 ELSE 1 + g % 99 END) END,
		       NULL, ''::bytea, 0
		FROM generate_series(1, 20000) AS g`, human)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE events`)
	require.NoError(t, err)
	var agent uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM agents WHERE human_id = $1 AND name = 'a0'`, human).Scan(&agent))

	rows, err := s.ListEvents(ctx, EventFilter{Reader: Reader{HumanID: human, AgentID: &agent}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 10)

	var name string
	var params int
	require.NoError(t, pool.QueryRow(ctx, `SELECT name, cardinality(parameter_types) FROM pg_prepared_statements
		WHERE statement LIKE '-- name: EventListForAgent %'`).Scan(&name, &params))
	args := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE %q (%s)`, name, args)).Scan(&raw))
	var plan []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal(raw, &plan))
	require.Len(t, plan, 1)
	indexes := map[string]bool{}
	require.NoError(t, plan[0].Plan.check(indexes), "the generic plan:\n%s", raw)
	require.Equal(t, map[string]bool{"idx_events_agent": true, "idx_events_shared": true, "idx_events_published_by": true}, indexes,
		"the generic plan:\n%s", raw)
}

type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []planNode `json:"Plans"`
}

// check walks the plan: events is read only by ordered index scans (their
// indexes collected), and nothing sorts.
func (n planNode) check(indexes map[string]bool) error {
	switch {
	case n.NodeType == "Sort" || n.NodeType == "Incremental Sort":
		return fmt.Errorf("%s node", n.NodeType)
	case n.Relation == "events" && n.NodeType != "Index Scan":
		return fmt.Errorf("events read by %s", n.NodeType)
	case n.Relation == "events":
		indexes[n.Index] = true
	}
	for _, c := range n.Plans {
		if err := c.check(indexes); err != nil {
			return err
		}
	}
	return nil
}
