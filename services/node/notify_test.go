//go:build integration

package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// TestOneListenConnectionPerNode: the queue and realtime share the node's
// notifier, so the node holds one listen connection, listening to both
// services' channels (each used to run its own).
func TestOneListenConnectionPerNode(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	pool, err := pgxpool.New(t.Context(), b.db)
	require.NoError(t, err)
	defer pool.Close()
	// A listen connection's last statement is its LISTENs: it runs nothing
	// else while it waits for notifications.
	require.Eventually(t, func() bool {
		rows, err := pool.Query(t.Context(), `SELECT query FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %'`)
		if err != nil {
			return false
		}
		listeners, err := pgx.CollectRows(rows, pgx.RowTo[string])
		return err == nil && len(listeners) == 1 &&
			strings.Contains(listeners[0], `"switchboard_queue"`) &&
			strings.Contains(listeners[0], `"switchboard_realtime"`) &&
			strings.Contains(listeners[0], `"switchboard_realtime_ephemeral"`)
	}, time.Minute, 10*time.Millisecond, "one connection listening to every channel")
}
