//go:build integration

package pgtest_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

func TestNewPoolIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	a, b := pgtest.NewPool(t), pgtest.NewPool(t)

	var version int64
	require.NoError(t, a.QueryRow(t.Context(),
		"SELECT max(version_id) FROM goose_db_version WHERE is_applied").Scan(&version))
	require.Equal(t, migrations.Latest(), version)

	_, err := a.Exec(t.Context(), "INSERT INTO settings (key, value) VALUES ('pgtest.marker', '1')")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.QueryRow(t.Context(), "SELECT count(*) FROM settings WHERE key = 'pgtest.marker'").Scan(&n))
	require.Zero(t, n, "databases must not share rows")
}

func TestNewEmptyDatabaseHasNoSchema(t *testing.T) {
	t.Parallel()
	conn, err := pgx.Connect(t.Context(), pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(t.Context()) })
	var n int
	require.NoError(t, conn.QueryRow(t.Context(),
		"SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n))
	require.Zero(t, n)
}
