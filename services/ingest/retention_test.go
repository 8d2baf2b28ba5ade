//go:build integration

package ingest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/services/ingest"
)

// TestRetentionByAgeAndCapKeepsLiveTodosEvents: old events go, the oldest
// beyond the cap go, and an event whose todo is still pending stays past
// both.
func TestRetentionByAgeAndCapKeepsLiveTodosEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	ctx := asHuman(t, e.human, nil)
	publish := func(queue string) int64 {
		res, err := srv.PublishEvent(ctx, &ingestv1.PublishEventRequest{Topic: "t", Queue: queue})
		require.NoError(t, err)
		return res.GetEvent().GetId()
	}
	live := publish("work") // its todo stays pending
	var ids []int64
	for range 6 {
		ids = append(ids, publish(""))
	}
	// Age: the live one and the two oldest others are a year old.
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET received_at = now() - interval '365 days' WHERE id = ANY($1)`,
		[]int64{live, ids[0], ids[1]})
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"max_age_seconds": 86400, "max_rows": 3}' WHERE key = 'retention.events'`)
	require.NoError(t, err)

	n, err := srv.PruneOnce(t.Context())
	require.NoError(t, err)
	// By age: ids[0], ids[1]. Over the cap of 3 newest (ids[3..5]): ids[2].
	require.EqualValues(t, 3, n)
	var left []int64
	rows, err := e.pool.Query(t.Context(), `SELECT id FROM events WHERE human_id = $1 ORDER BY id`, e.human)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int64{live, ids[3], ids[4], ids[5]}, left, "the live todo's event survives age and cap")

	n, err = srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing more to prune")
}
