//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestDedupeScopesSchema: 00026 rebuilds todos_dedup so it holds RETENTION
// keys (dedupe_scope NULL) always and LIVE keys only while pending or
// running, keeps the keys it held, and adds todo_dedupe_windows. Down
// restores the old index (LIVE and WINDOW todos lose their keys) and drops
// the column and the table; Up runs again.
func TestDedupeScopesSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 23))
	human := insertHuman(t, db)
	insert := func(key, scope, state string) error {
		q := `INSERT INTO todos (human_id, queue, dedupe_key, state, finished_at` + scopeColumn(scope) + `)
			VALUES ($1, 'q', $2, $3, CASE WHEN $3 = 'pending' THEN NULL ELSE now() END` + scopeValue(scope) + `)`
		_, err := db.ExecContext(ctx, q, human, key, state)
		return err
	}
	require.NoError(t, insert("old", "", "completed"))
	require.NoError(t, migrations.UpTo(ctx, db, 26))

	var predicate string
	var valid bool
	require.NoError(t, db.QueryRowContext(ctx, `SELECT pg_get_expr(indpred, indrelid), indisvalid FROM pg_index
		WHERE indexrelid = 'todos_dedup'::regclass`).Scan(&predicate, &valid))
	require.True(t, valid)
	require.Equal(t, "((dedupe_key IS NOT NULL) AND ((dedupe_scope IS NULL) OR ((dedupe_scope = 'live'::text) "+
		"AND (state = ANY (ARRAY['pending'::text, 'running'::text])))))", predicate)
	requireDedupViolation(t, insert("old", "", "pending"), "a RETENTION key stays held after 00026")
	require.NoError(t, insert("l", "live", "pending"))
	requireDedupViolation(t, insert("l", "live", "pending"), "a pending LIVE key is held")
	_, err := db.ExecContext(ctx, `UPDATE todos SET state = 'cancelled', finished_at = now() WHERE dedupe_key = 'l'`)
	require.NoError(t, err)
	require.NoError(t, insert("l", "live", "pending"), "a finished LIVE key is free")
	require.NoError(t, insert("w", "window", "pending"))
	require.NoError(t, insert("w", "window", "pending"), "WINDOW todos are in no unique index")
	_, err = db.ExecContext(ctx, `INSERT INTO todo_dedupe_windows (human_id, queue, key, expires_at) VALUES ($1, 'q', 'w', now())`, human)
	require.NoError(t, err)

	_, err = migrations.DownTo(ctx, db, 23)
	require.NoError(t, err)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT pg_get_expr(indpred, indrelid), indisvalid FROM pg_index
		WHERE indexrelid = 'todos_dedup'::regclass`).Scan(&predicate, &valid))
	require.True(t, valid)
	require.Equal(t, "(dedupe_key IS NOT NULL)", predicate)
	var kept, cleared int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE dedupe_key = 'old'),
		count(*) FILTER (WHERE dedupe_key IS NULL) FROM todos`).Scan(&kept, &cleared))
	require.Equal(t, 1, kept, "RETENTION keys survive Down")
	require.Equal(t, 4, cleared, "LIVE and WINDOW todos lose their keys")
	var tables int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_class WHERE relname = 'todo_dedupe_windows'`).Scan(&tables))
	require.Zero(t, tables)
	require.NoError(t, migrations.UpTo(ctx, db, 26))
}

func scopeColumn(scope string) string {
	if scope == "" {
		return ""
	}
	return ", dedupe_scope"
}

func scopeValue(scope string) string {
	if scope == "" {
		return ""
	}
	return ", '" + scope + "'"
}

func requireDedupViolation(t *testing.T, err error, msg string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, msg)
	require.Equal(t, "todos_dedup", pgErr.ConstraintName, msg)
}
