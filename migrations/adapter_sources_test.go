//go:build integration

package migrations_test

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestAdapterSourcesOneOwner: 00013 keys every redis_stream adapter by the
// stream it reads; where two humans already shared one (the attack it
// closes), the oldest adapter keeps it and the others are disabled with a
// reason and no key. From then on the database refuses a second owner.
func TestAdapterSourcesOneOwner(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 12))
	var ann, bob string
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO humans (email) VALUES ('ann@example.com') RETURNING id`).Scan(&ann))
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO humans (email) VALUES ('bob@example.com') RETURNING id`).Scan(&bob))
	insert := func(human, name, config string) string {
		var id string
		require.NoError(t, db.QueryRowContext(ctx, `
			INSERT INTO adapters (human_id, name, kind, queue, config, created_at)
			VALUES ($1, $2, 'redis_stream', 'q', $3, clock_timestamp()) RETURNING id`, human, name, config).Scan(&id))
		return id
	}
	owner := insert(ann, "orders", `{"addr":"Redis:6379","stream":"orders","group":"switchboard","db":0}`)
	thief := insert(bob, "orders", `{"addr":"redis:6379","stream":"orders","group":"mine","db":0}`)
	twin := insert(ann, "orders-again", `{"addr":"redis:6379","stream":"orders","group":"switchboard","db":0}`)
	audit := insert(ann, "audit", `{"addr":"redis:6379","stream":"orders","group":"audit","db":0}`)
	otherDB := insert(bob, "orders-db1", `{"addr":"redis:6379","stream":"orders","group":"switchboard","db":1}`)

	require.NoError(t, migrations.UpTo(ctx, db, 13))
	state := func(id string) (key sql.NullString, enabled bool, lastError sql.NullString) {
		require.NoError(t, db.QueryRowContext(ctx, `SELECT source_key, enabled, last_error FROM adapters WHERE id = $1`, id).
			Scan(&key, &enabled, &lastError))
		return key, enabled, lastError
	}
	for id, want := range map[string]string{owner: "redis:6379/0/orders", audit: "redis:6379/0/orders", otherDB: "redis:6379/1/orders"} {
		key, enabled, lastError := state(id)
		require.Equal(t, want, key.String)
		require.True(t, enabled)
		require.False(t, lastError.Valid)
	}
	for _, id := range []string{thief, twin} {
		key, enabled, lastError := state(id)
		require.False(t, key.Valid)
		require.False(t, enabled)
		require.Contains(t, lastError.String, "an older adapter already reads this Redis stream")
	}

	_, err := db.ExecContext(ctx, `UPDATE adapters SET source_key = 'redis:6379/0/orders' WHERE id = $1`, thief)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapters_source_owner_excl", pgErr.ConstraintName)
	_, err = db.ExecContext(ctx, `UPDATE adapters SET source_key = 'redis:6379/0/orders' WHERE id = $1`, twin)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapters_source_group_key", pgErr.ConstraintName)
	_, err = db.ExecContext(ctx, `UPDATE adapters SET kind = 'webhook' WHERE id = $1`, owner)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapters_source_key_check", pgErr.ConstraintName)

	_, err = migrations.DownTo(ctx, db, 12)
	require.NoError(t, err)
	require.NoError(t, migrations.UpTo(ctx, db, 13))
}
