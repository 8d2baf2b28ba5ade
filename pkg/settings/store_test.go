//go:build integration

package settings_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/settings"
)

// TestMigrationsSeedTheDefaults: what a fresh database holds is exactly what
// every reader falls back to, key for key.
func TestMigrationsSeedTheDefaults(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	rows, err := settings.List(t.Context(), pool)
	require.NoError(t, err)
	defaults := settings.Defaults()
	require.Len(t, rows, len(defaults))
	for _, r := range rows {
		def, ok := defaults[r.Key]
		require.True(t, ok, "seeded key %s has no default", r.Key)
		want, err := json.Marshal(def)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(r.Value), r.Key)
		require.NotEmpty(t, r.Description, r.Key)
	}
}

// TestReadFallsBack: a deleted row or a missing field reads as the default;
// a stored field wins.
func TestReadFallsBack(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	_, err := pool.Exec(ctx, `UPDATE settings SET value = '{"max_rows": 7}' WHERE key = $1`, settings.RetentionTodos)
	require.NoError(t, err)
	got, err := settings.Read(ctx, pool, settings.RetentionTodos, settings.DefaultRetentionTodos)
	require.NoError(t, err)
	require.Equal(t, settings.Retention{MaxAgeSeconds: settings.DefaultRetentionTodos.MaxAgeSeconds, MaxRows: 7, MaxRowsPerTenant: settings.DefaultRetentionTodos.MaxRowsPerTenant}, got)

	_, err = pool.Exec(ctx, `DELETE FROM settings WHERE key = $1`, settings.QueueDefaults)
	require.NoError(t, err)
	q, err := settings.Read(ctx, pool, settings.QueueDefaults, settings.DefaultQueue)
	require.NoError(t, err)
	require.Equal(t, settings.DefaultQueue, q)
}

// TestUpdateIsForAdministrators: anyone else's update matches no row, and
// an update never creates a key.
func TestUpdateIsForAdministrators(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	desc := "changed"
	_, err := settings.Update(ctx, pool, false, settings.IngestDedup, settings.Patch{Description: &desc})
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.NotFound, st.Code())

	_, err = settings.Update(ctx, pool, true, "no.such.key", settings.Patch{Description: &desc})
	st, _ = apierr.ToStatus(err)
	require.Equal(t, codes.NotFound, st.Code())

	got, err := settings.Update(ctx, pool, true, settings.IngestDedup, settings.Patch{Value: json.RawMessage(`{"window_seconds": 60}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"window_seconds": 60}`, string(got.Value))
}
