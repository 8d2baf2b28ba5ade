//go:build integration

package store

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestPayloadPruneReadsOnlyUnprunedEvents pins the plan of a payload
// retention batch: the events due are found through idx_events_payload_unpruned
// (which holds no pruned row) and locked by primary key, never a scan of the
// table or of all the unpruned events, so a pass reads about a batch of rows
// and never rereads the events it pruned before.
func TestPayloadPruneReadsOnlyUnprunedEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t), func(c *pgxpool.Config) {
		c.MaxConns = 1 // one session, whose prepared statement is explained below
	})
	s := New(pool, nil, nil)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('payloads@example.test') RETURNING id`).Scan(&human))
	// 20,000 old events, all but the last 500 already pruned, then 20,000
	// recent ones, not due.
	_, err := pool.Exec(ctx, `
		INSERT INTO events (human_id, source, payload, size_bytes, received_at, payload_pruned_at)
		SELECT $1, 'publish', CASE WHEN g > 19500 THEN 'x'::bytea ELSE ''::bytea END, 1,
		       CASE WHEN g > 20000 THEN now() ELSE now() - interval '30 days' + g * interval '1 second' END,
		       CASE WHEN g > 19500 THEN NULL ELSE now() END
		FROM generate_series(1, 40000) AS g`, human)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE events`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE settings SET value = '{"max_age_seconds": 86400}' WHERE key = 'retention.event_payloads'`)
	require.NoError(t, err)
	n, err := s.PrunePayloadsOnce(ctx, 100, 1)
	require.NoError(t, err)
	require.EqualValues(t, 100, n)

	var name string
	require.NoError(t, pool.QueryRow(ctx, `SELECT name FROM pg_prepared_statements
		WHERE statement LIKE '-- name: EventPayloadsLockForPrune %'`).Scan(&name))
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE %q (86400, 1000)`, name)).Scan(&raw))
	var plan []struct{ Plan scanNode }
	require.NoError(t, json.Unmarshal(raw, &plan))
	require.Len(t, plan, 1)
	indexes := map[string]bool{}
	require.NoError(t, plan[0].Plan.walk(indexes), "the plan:\n%s", raw)
	require.Equal(t, map[string]bool{"idx_events_payload_unpruned": true, "events_pkey": true}, indexes, "the plan:\n%s", raw)
}

type scanNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Plans    []scanNode `json:"Plans"`
}

// walk collects the indexes the plan reads events through and refuses a
// sequential scan of events.
func (n scanNode) walk(indexes map[string]bool) error {
	if n.Relation == "events" && n.NodeType == "Seq Scan" {
		return fmt.Errorf("events read by %s", n.NodeType)
	}
	if n.Relation == "events" && n.Index != "" {
		indexes[n.Index] = true
	}
	for _, c := range n.Plans {
		if err := c.walk(indexes); err != nil {
			return err
		}
	}
	return nil
}
