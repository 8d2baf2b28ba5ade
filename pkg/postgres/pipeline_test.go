//go:build integration

package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// owner queues one statement the way sqlc's :batch code does: on the DBTX
// it was given, with its own pgx.Batch.
func owner(t *testing.T, p *postgres.Pipeline, sql string, args ...any) pgx.BatchResults {
	t.Helper()
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return p.SendBatch(t.Context(), b)
}

// TestPipelineOneTransaction: two owners' statements go in one round trip
// and one implicit transaction; the second sees the first's rows; results
// come back in queue order.
func TestPipelineOneTransaction(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	_, err := pool.Exec(ctx, `CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY REFERENCES a (id))`)
	require.NoError(t, err)

	p := postgres.NewPipeline(pool)
	first := owner(t, p, `INSERT INTO a (id) SELECT generate_series(1, 3) RETURNING id`)
	second := owner(t, p, `INSERT INTO b (id) SELECT id FROM a WHERE xmin = pg_current_xact_id()::xid RETURNING id`)
	_, err = first.Query() //nolint:sqlclosecheck // fails before Send: no rows to close
	require.ErrorContains(t, err, "before Send")
	p.Send(ctx)
	rows, err := first.Query()
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 3}, ids)
	tag, err := second.Exec()
	require.NoError(t, err)
	require.EqualValues(t, 3, tag.RowsAffected(), "the second statement saw the first's rows")
	_, err = second.Exec()
	require.ErrorContains(t, err, "all read")
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is safe twice")

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM b`).Scan(&n))
	require.Equal(t, 3, n)
}

// TestPipelineAllOrNothing: a failing later statement undoes an earlier
// one, and the failure reaches the caller.
func TestPipelineAllOrNothing(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	_, err := pool.Exec(ctx, `CREATE TABLE a (id int PRIMARY KEY)`)
	require.NoError(t, err)

	p := postgres.NewPipeline(pool)
	first := owner(t, p, `INSERT INTO a (id) VALUES (1)`)
	second := owner(t, p, `INSERT INTO a (id) VALUES (1)`) // unique violation
	p.Send(ctx)
	_, err = first.Exec()
	require.NoError(t, err)
	_, err = second.Exec()
	require.ErrorContains(t, err, "23505")
	require.Error(t, p.Close())

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM a`).Scan(&n))
	require.Zero(t, n, "the first insert rolled back with the second")

	_, err = postgres.NewPipeline(pool).Exec(ctx, `SELECT 1`)
	require.Error(t, err, "a pipeline only queues")
	require.NoError(t, postgres.NewPipeline(pool).Close(), "Close before Send sends nothing")
}
