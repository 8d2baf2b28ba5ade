//go:build integration

package migrations_test

import (
	"crypto/sha256"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestProviderHandshakeSchemes: 00016 allows the zoom, meta, x, msgraph and
// twilio schemes, and a verify token digest exactly on meta endpoints. Down
// refuses while an endpoint uses a new scheme, and otherwise restores the
// old list.
func TestProviderHandshakeSchemes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 16))
	human := insertHuman(t, db)
	sum := sha256.Sum256([]byte("meatyhamhock"))
	insert := func(slug, scheme string, token []byte) error {
		_, err := db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification, verify_token_sha256) VALUES ($1, $2, 'q', $3, $4)`,
			human, slug, scheme, token)
		return err
	}
	requireCheck := func(err error, constraint string) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23514", pgErr.Code)
		require.Equal(t, constraint, pgErr.ConstraintName)
	}
	for _, scheme := range []string{"zoom", "x", "msgraph", "twilio", "slack"} {
		require.NoError(t, insert("scheme-"+scheme+"-aaaaaaaaaaaaaaaa", scheme, nil), scheme)
	}
	require.NoError(t, insert("meta-endpoint-aaaaaaaa", "meta", sum[:]))
	requireCheck(insert("meta-without-token-aaa", "meta", nil), "endpoints_verify_token_check")
	requireCheck(insert("meta-short-digest-aaaa", "meta", []byte("meatyhamhock")), "endpoints_verify_token_check")
	requireCheck(insert("github-with-token-aaaa", "github", sum[:]), "endpoints_verify_token_check")
	requireCheck(insert("unknown-scheme-aaaaaaa", "svix", nil), "endpoints_verification_check")

	_, err := migrations.DownTo(ctx, db, 15)
	require.Error(t, err, "endpoints of the new schemes exist")
	_, err = db.ExecContext(ctx, `DELETE FROM endpoints WHERE verification NOT IN ('slack')`)
	require.NoError(t, err)
	_, err = migrations.DownTo(ctx, db, 15)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification) VALUES ($1, 'zoom-after-down-aaaaaa', 'q', 'zoom')`, human)
	requireCheck(err, "endpoints_verification_check")
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.columns WHERE table_name = 'endpoints' AND column_name = 'verify_token_sha256'`).Scan(&n))
	require.Zero(t, n, "Down removes the column")
}
