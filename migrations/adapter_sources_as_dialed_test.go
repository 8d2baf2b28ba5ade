//go:build integration

package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/migrations"
)

// TestAdapterSourcesAsDialed: 00031 gives every adapter whose addr is an
// IP address the key of that address (every loopback address alike), the
// oldest adapter keeping a key two humans' rows share; named addrs get
// theirs when a node dials them. From then on the database refuses a
// second owner of an address, and of a server's run_id.
func TestAdapterSourcesAsDialed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := open(t, newDatabase(t))
	require.NoError(t, migrations.UpTo(ctx, db, 29))
	var ann, bob string
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO humans (email) VALUES ('ann@example.com') RETURNING id`).Scan(&ann))
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO humans (email) VALUES ('bob@example.com') RETURNING id`).Scan(&bob))
	insert := func(human, name, addr, db_, stream string) string {
		var id string
		require.NoError(t, db.QueryRowContext(ctx, `
			INSERT INTO adapters (human_id, name, kind, queue, config, source_key, created_at)
			VALUES ($1, $2, 'redis_stream', 'q', jsonb_build_object('addr', $3::text, 'db', $4::int, 'stream', $5::text),
			        $3 || '/' || $4 || '/' || $5, clock_timestamp())
			RETURNING id`, human, name, addr, db_, stream).Scan(&id))
		return id
	}
	owner := insert(ann, "orders", "127.0.0.1:6379", "0", "orders")
	alias := insert(bob, "orders", "[::1]:6379", "0", "orders") // the same server, younger
	v6 := insert(ann, "v6", "[2001:db8::1]:6379", "0", "y")
	private := insert(bob, "other", "10.0.0.1:6380", "2", "x")
	named := insert(ann, "named", "redis.internal:6379", "0", "orders")

	require.NoError(t, migrations.UpTo(ctx, db, 31))
	keys := func(id string) []string {
		rows, err := db.QueryContext(ctx, `SELECT addr_key FROM adapter_source_addrs WHERE adapter_id = $1 ORDER BY addr_key`, id)
		require.NoError(t, err)
		defer func() { _ = rows.Close() }()
		out := []string{}
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			out = append(out, k)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, []string{"loopback:6379/0/orders"}, keys(owner))
	require.Empty(t, keys(alias), "the younger adapter of a shared address gets no key: its node refuses it")
	require.Equal(t, []string{"[2001:db8::1]:6379/0/y"}, keys(v6))
	require.Equal(t, []string{"10.0.0.1:6380/2/x"}, keys(private))
	require.Empty(t, keys(named), "a name gets its keys when dialed")
	var sinceIsCreated bool
	require.NoError(t, db.QueryRowContext(ctx, `SELECT bool_and(source_since = created_at) FROM adapters`).Scan(&sinceIsCreated))
	require.True(t, sinceIsCreated)

	var pgErr *pgconn.PgError
	_, err := db.ExecContext(ctx, `INSERT INTO adapter_source_addrs (adapter_id, human_id, addr_key) VALUES ($1, $2, 'loopback:6379/0/orders')`, alias, bob)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapter_source_addrs_owner_excl", pgErr.ConstraintName)
	_, err = db.ExecContext(ctx, `INSERT INTO adapter_source_addrs (adapter_id, human_id, addr_key) VALUES ($1, $2, 'x')`, alias, ann)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapter_source_addrs_adapter_id_human_id_fkey", pgErr.ConstraintName, "a key is its adapter's human's")

	server := `UPDATE adapters SET server_key = 'r/0/orders', server_addr_key = 'a', server_since = now() WHERE id = $1`
	_, err = db.ExecContext(ctx, server, owner)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, server, alias)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapters_server_owner_excl", pgErr.ConstraintName)
	_, err = db.ExecContext(ctx, `UPDATE adapters SET server_key = 'k' WHERE id = $1`, private)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "adapters_server_check", pgErr.ConstraintName)

	_, err = db.ExecContext(ctx, `DELETE FROM adapters WHERE id = $1`, owner)
	require.NoError(t, err)
	require.Empty(t, keys(owner), "an adapter's keys go with it")

	_, err = migrations.DownTo(ctx, db, 29)
	require.NoError(t, err)
	require.NoError(t, migrations.UpTo(ctx, db, 31))
}
