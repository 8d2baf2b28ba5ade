//go:build integration

package postgres_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// TestConfigurePoolJSON pins what the JSON fast path must keep: RawMessage
// targets get the server's bytes (SQL NULL as nil, JSON null as "null"), in
// both json and jsonb, and other targets still decode.
func TestConfigurePoolJSON(t *testing.T) {
	t.Parallel()
	pc, err := pgxpool.ParseConfig(pgtest.NewEmptyDatabase(t))
	require.NoError(t, err)
	postgres.ConfigurePool(pc)
	pool, err := pgxpool.NewWithConfig(t.Context(), pc)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	for _, typ := range []string{"json", "jsonb"} {
		var obj, null, sqlNull json.RawMessage
		err := pool.QueryRow(t.Context(),
			`SELECT '{"a": [1, "x"]}'::`+typ+`, 'null'::`+typ+`, NULL::`+typ).Scan(&obj, &null, &sqlNull)
		require.NoError(t, err, typ)
		require.JSONEq(t, `{"a": [1, "x"]}`, string(obj), typ)
		require.Equal(t, "null", string(null), typ)
		require.Nil(t, sqlNull, typ)

		var m map[string]any
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT '{"n": 2}'::`+typ).Scan(&m), typ)
		require.Equal(t, map[string]any{"n": float64(2)}, m, typ)
	}

	// The bytes are copied: a second row must not overwrite the first.
	rows, err := pool.Query(t.Context(), `SELECT v::jsonb FROM (VALUES ('{"i": 1}'), ('{"i": 2}')) AS t (v)`)
	require.NoError(t, err)
	var got []json.RawMessage
	for rows.Next() {
		var r json.RawMessage
		require.NoError(t, rows.Scan(&r))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Len(t, got, 2)
	require.JSONEq(t, `{"i": 1}`, string(got[0]))
	require.JSONEq(t, `{"i": 2}`, string(got[1]))
}
