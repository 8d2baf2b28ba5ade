//go:build integration

package migrations_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestCredentialLineageLeavesExistingRowsUnknown: 00030 cannot know who
// minted a credential stored before it, so every existing row gets
// minted_by NULL (outside every tree) and keeps working; Down drops the
// column and its indexes.
func TestCredentialLineageLeavesExistingRowsUnknown(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 29))
	_, err := db.ExecContext(ctx, `
		WITH h AS (INSERT INTO humans (email) VALUES ('old@example.com') RETURNING id)
		INSERT INTO credentials (human_id, token_prefix, token_hash, scopes)
		SELECT id, 'sbt_old', decode(repeat('ab', 32), 'hex'), '{admin}' FROM h`)
	require.NoError(t, err)
	require.NoError(t, migrations.UpTo(ctx, db, 30))

	var unknown int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM credentials WHERE minted_by IS NULL AND revoked_at IS NULL`).Scan(&unknown))
	require.Equal(t, 1, unknown)

	_, err = migrations.DownTo(ctx, db, 29)
	require.NoError(t, err)
	var columns int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'credentials' AND column_name = 'minted_by'`).Scan(&columns))
	require.Zero(t, columns)
}
