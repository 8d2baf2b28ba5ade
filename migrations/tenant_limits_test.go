//go:build integration

package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestTenantLimitsCarryOperatorsRetention: 00029 gives an untouched
// retention.* value the new defaults (a tenant keeps what the table kept),
// and one the operator changed a per-tenant cap equal to its max_rows, so no
// tenant loses a row it kept before; Down gives both back as they were.
func TestTenantLimitsCarryOperatorsRetention(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 28))
	_, err := db.ExecContext(ctx,
		`UPDATE settings SET value = '{"max_age_seconds": 3600, "max_rows": 500}' WHERE key = 'retention.todos'`)
	require.NoError(t, err)
	require.NoError(t, migrations.UpTo(ctx, db, 29))

	value := func(key string) string {
		t.Helper()
		var v string
		require.NoError(t, db.QueryRowContext(ctx, `SELECT value::text FROM settings WHERE key = $1`, key).Scan(&v))
		return v
	}
	require.JSONEq(t, `{"max_age_seconds": 3600, "max_rows": 500, "max_rows_per_tenant": 500}`, value("retention.todos"))
	require.JSONEq(t, `{"max_age_seconds": 2592000, "max_rows": 10000000, "max_rows_per_tenant": 1000000}`, value("retention.events"))
	var description string
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT description FROM settings WHERE key = 'retention.events'`).Scan(&description))
	require.Contains(t, description, "max_rows_per_tenant")

	_, err = migrations.DownTo(ctx, db, 28)
	require.NoError(t, err)
	require.JSONEq(t, `{"max_age_seconds": 3600, "max_rows": 500}`, value("retention.todos"))
	require.JSONEq(t, `{"max_age_seconds": 2592000, "max_rows": 1000000}`, value("retention.events"))
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT description FROM settings WHERE key = 'retention.events'`).Scan(&description))
	require.NotContains(t, description, "max_rows_per_tenant")
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM settings WHERE key IN ('tenant.limits', 'realtime.limits', 'queue.schedules')`).Scan(&n))
	require.Zero(t, n)
}
