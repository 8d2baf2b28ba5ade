//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestTraceContextColumns: 00015 lets todos and events carry a W3C
// traceparent, NULL or of the one shape the writers produce; anything else
// is refused by the CHECK (the writers never send it: a malformed header is
// dropped where it arrives).
func TestTraceContextColumns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 15))
	human := insertHuman(t, db)
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tp := range []any{nil, valid} {
		_, err := db.ExecContext(ctx, `INSERT INTO todos (human_id, queue, trace_parent) VALUES ($1, 'q', $2)`, human, tp)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `INSERT INTO events (human_id, source, payload, trace_parent) VALUES ($1, 'publish', '', $2)`, human, tp)
		require.NoError(t, err)
	}
	for _, bad := range []string{"", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", valid + "-x", "ff" + valid[2:], "garbage"} {
		_, err := db.ExecContext(ctx, `INSERT INTO todos (human_id, queue, trace_parent) VALUES ($1, 'q', $2)`, human, bad)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, bad)
		require.Equal(t, "23514", pgErr.Code, "%q is refused by the CHECK", bad)
		_, err = db.ExecContext(ctx, `INSERT INTO events (human_id, source, payload, trace_parent) VALUES ($1, 'publish', '', $2)`, human, bad)
		require.ErrorAs(t, err, &pgErr, bad)
		require.Equal(t, "23514", pgErr.Code, "%q is refused by the CHECK", bad)
	}
	_, err := migrations.DownTo(ctx, db, 14)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.columns WHERE column_name = 'trace_parent' AND table_name IN ('todos', 'events')`).Scan(&n))
	require.Zero(t, n, "Down removes both columns")
}
