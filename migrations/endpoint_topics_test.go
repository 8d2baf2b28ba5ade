//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestEndpointTopicsAndBodyDedup: 00018 keeps every existing endpoint's
// body-hash dedup as it was (on, with the deployment's window, unless its
// delivery id is signed), and its CHECKs bound the new columns.
func TestEndpointTopicsAndBodyDedup(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 15))
	human := insertHuman(t, db)
	_, err := db.ExecContext(ctx, `UPDATE settings SET value = '{"window_seconds": 3600}' WHERE key = 'ingest.dedup'`)
	require.NoError(t, err)
	for i, scheme := range []string{"github", "standard_webhooks", "none"} {
		_, err := db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification) VALUES ($1, $2, 'q', $3)`,
			human, "slug-endpoint-topics-"+string(rune('a'+i)), scheme)
		require.NoError(t, err)
	}
	require.NoError(t, migrations.UpTo(ctx, db, 18))
	rows, err := db.QueryContext(ctx, `SELECT verification, body_dedup_window_seconds FROM endpoints ORDER BY verification`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var scheme string
		var window int
		require.NoError(t, rows.Scan(&scheme, &window))
		got[scheme] = window
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{"github": 3600, "none": 3600, "standard_webhooks": 0}, got)

	for _, bad := range []string{
		`topic_header = 'X-A', topic_pointer = '/a'`,
		`topic_header = ''`,
		`topic_pointer = 'a'`,
		`body_dedup_window_seconds = 604801`,
		`body_dedup_window_seconds = -1`,
	} {
		_, err := db.ExecContext(ctx, `UPDATE endpoints SET `+bad)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, bad)
		require.Equal(t, "23514", pgErr.Code, "%s is refused by a CHECK", bad)
	}
	_, err = db.ExecContext(ctx, `UPDATE endpoints SET topic_pointer = '/event/type', body_dedup_window_seconds = 604800`)
	require.NoError(t, err)

	_, err = migrations.DownTo(ctx, db, 15)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.columns WHERE table_name = 'endpoints' AND column_name IN ('topic_header', 'topic_pointer', 'body_dedup_window_seconds')`).Scan(&n))
	require.Zero(t, n, "Down removes the columns")
}
