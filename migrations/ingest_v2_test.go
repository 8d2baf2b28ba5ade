//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestIngestV2CarriesSecretsOverAndBack: 00010 moves a v1 endpoint's single
// sealed secret into endpoint_secrets and renames hmac_sha256 to hmac; its
// Down puts both back, and refuses an endpoint v1 cannot express.
func TestIngestV2CarriesSecretsOverAndBack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 9))
	humanID := insertHuman(t, db)
	var endpointID string
	require.NoError(t, db.QueryRowContext(ctx, `
		INSERT INTO endpoints (human_id, slug, queue, verification, secret_ciphertext, secret_key_id, signature_header)
		VALUES ($1, 'abcdefghijklmnop', 'hooks', 'hmac_sha256', '\xdeadbeef', 'k1', 'X-Sig') RETURNING id`, humanID).Scan(&endpointID))

	require.NoError(t, migrations.UpTo(ctx, db, 10))
	var kind, keyID, verification string
	var sealed []byte
	require.NoError(t, db.QueryRowContext(ctx, `
		SELECT s.kind, s.key_id, s.sealed, e.verification
		FROM endpoint_secrets AS s JOIN endpoints AS e ON e.id = s.endpoint_id
		WHERE e.id = $1`, endpointID).Scan(&kind, &keyID, &sealed, &verification))
	require.Equal(t, "sealed", kind)
	require.Equal(t, "k1", keyID)
	require.Equal(t, []byte{0xde, 0xad, 0xbe, 0xef}, sealed)
	require.Equal(t, "hmac", verification)

	// A hashed secret must be a SHA-256 digest, and sealed/hashed are exclusive.
	for name, q := range map[string]string{
		"short hash":    `INSERT INTO endpoint_secrets (endpoint_id, kind, hash) VALUES ($1, 'hashed', '\x00')`,
		"sealed no key": `INSERT INTO endpoint_secrets (endpoint_id, kind, sealed) VALUES ($1, 'sealed', '\x00')`,
		"both":          `INSERT INTO endpoint_secrets (endpoint_id, kind, key_id, sealed, hash) VALUES ($1, 'sealed', 'k', '\x00', sha256('x'))`,
	} {
		_, err := db.ExecContext(ctx, q, endpointID)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "endpoint_secrets_material_check", pgErr.ConstraintName, name)
	}

	_, err := migrations.DownTo(ctx, db, 9)
	require.NoError(t, err)
	var ciphertext []byte
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT verification, secret_ciphertext, secret_key_id FROM endpoints WHERE id = $1`, endpointID).
		Scan(&verification, &ciphertext, &keyID))
	require.Equal(t, "hmac_sha256", verification)
	require.Equal(t, []byte{0xde, 0xad, 0xbe, 0xef}, ciphertext)
	require.Equal(t, "k1", keyID)

	// An endpoint only v2 can express makes the downgrade refuse.
	require.NoError(t, migrations.UpTo(ctx, db, 10))
	_, err = db.ExecContext(ctx, `
		INSERT INTO endpoints (human_id, slug, queue, verification) VALUES ($1, 'qrstuvwxyzabcdef', 'hooks', 'shopify')`, humanID)
	require.NoError(t, err)
	_, err = migrations.DownTo(ctx, db, 9)
	require.Error(t, err)
}
