//go:build integration

package migrations_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestTwilioEndpoints: 00017 admits the 'twilio' scheme (and the rest of
// issue 16's) and an endpoint's public_url, an http(s) URL of at most 2048
// characters; Down removes both, and refuses while an endpoint verifies
// with 'twilio'.
func TestTwilioEndpoints(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 17))
	human := insertHuman(t, db)
	insert := func(slug, scheme string, publicURL any) error {
		_, err := db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification, public_url) VALUES ($1, $2, 'q', $3, $4)`,
			human, slug, scheme, publicURL)
		return err
	}
	require.NoError(t, insert("twilio0000000000", "twilio", "https://hooks.example.com/hooks/twilio0000000000"))
	require.NoError(t, insert("plainhttp0000000", "github", "http://10.0.0.7:8080/hooks/plainhttp0000000"))
	require.NoError(t, insert("nourl00000000000", "none", nil))
	for i, scheme := range []string{"zoom", "x", "msgraph"} {
		require.NoError(t, insert("handshake"+strings.Repeat("0", 7)+string(rune('a'+i)), scheme, nil), scheme)
	}
	_, metaErr := db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification, verify_token_sha256)
		VALUES ($1, 'handshake0000000m', 'q', 'meta', sha256('verify-token'::bytea))`, human)
	require.NoError(t, metaErr, "meta, with the verify token 00016 requires of it")
	bad := map[string][2]any{
		"unknown scheme": {"svix", nil},
		"too long":       {"none", "https://h.example/" + strings.Repeat("p", 2048-len("https://h.example/")+1)},
		"not http":       {"none", "ftp://h.example/hooks/x"},
		"relative":       {"none", "/hooks/x"},
		"no host":        {"none", "https:///hooks/x"},
		"empty":          {"none", ""},
	}
	for name, row := range bad {
		err := insert("bad0000000000000", row[0].(string), row[1])
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, name)
		require.Equal(t, "23514", pgErr.Code, "%s is refused by a CHECK", name)
	}
	require.NoError(t, insert("longest000000000", "none", "https://h.example/"+strings.Repeat("p", 2048-len("https://h.example/"))))

	_, err := migrations.DownTo(ctx, db, 16)
	require.Error(t, err, "an endpoint still verifies with twilio")
	_, err = db.ExecContext(ctx, `DELETE FROM endpoints WHERE verification = 'twilio'`)
	require.NoError(t, err)
	_, err = migrations.DownTo(ctx, db, 16)
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT count(*) FROM information_schema.columns WHERE table_name = 'endpoints' AND column_name = 'public_url'`).Scan(&n))
	require.Zero(t, n, "Down removes public_url")
	_, err = db.ExecContext(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification) VALUES ($1, 'twilio1111111111', 'q', 'twilio')`, human)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23514", pgErr.Code, "nor is 'twilio' a scheme any more")
}
