//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestEventPayloadRetentionSchema: 00021 keeps every stored size_bytes,
// makes the writer set it (the CHECK refuses a missing or wrong size while
// the payload is there), lets a pruned event keep its original size with an
// empty payload only, seeds retention.event_payloads off and indexes the
// unpruned events. Down makes size_bytes generated again.
func TestEventPayloadRetentionSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 20))
	human := insertHuman(t, db)
	var old int64
	require.NoError(t, db.QueryRowContext(ctx,
		`INSERT INTO events (human_id, source, payload) VALUES ($1, 'publish', 'abc') RETURNING id`, human).Scan(&old))
	require.NoError(t, migrations.UpTo(ctx, db, 21))

	var size int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT size_bytes FROM events WHERE id = $1`, old).Scan(&size))
	require.Equal(t, 3, size, "a stored size survives")
	for _, bad := range []string{
		`INSERT INTO events (human_id, source, payload) VALUES ($1, 'publish', 'abc')`,
		`INSERT INTO events (human_id, source, payload, size_bytes) VALUES ($1, 'publish', 'abc', 4)`,
		`INSERT INTO events (human_id, source, payload, size_bytes, payload_pruned_at) VALUES ($1, 'publish', 'abc', 3, now())`,
	} {
		_, err := db.ExecContext(ctx, bad, human)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, bad)
		require.Equal(t, "events_size_bytes_check", pgErr.ConstraintName, bad)
	}
	_, err := db.ExecContext(ctx, `UPDATE events SET payload = '', payload_pruned_at = now() WHERE id = $1`, old)
	require.NoError(t, err)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT size_bytes FROM events WHERE id = $1`, old).Scan(&size))
	require.Equal(t, 3, size, "pruning keeps the original size")

	var value string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT value::text FROM settings WHERE key = 'retention.event_payloads'`).Scan(&value))
	require.JSONEq(t, `{"max_age_seconds": 0}`, value)
	var predicate string
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index AS i WHERE i.indexrelid = 'idx_events_payload_unpruned'::regclass`).Scan(&predicate))
	require.Equal(t, "(payload_pruned_at IS NULL)", predicate)

	_, err = migrations.DownTo(ctx, db, 20)
	require.NoError(t, err)
	require.NoError(t, db.QueryRowContext(ctx,
		`INSERT INTO events (human_id, source, payload) VALUES ($1, 'publish', 'abcd') RETURNING size_bytes`, human).Scan(&size))
	require.Equal(t, 4, size, "generated again")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM settings WHERE key = 'retention.event_payloads'`).Scan(&n))
	require.Zero(t, n)
}
