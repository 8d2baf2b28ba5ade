//go:build integration

package ingest_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/services/ingest"
)

// retentionEnv is a tenant's ingest service with retention.events set.
type retentionEnv struct {
	*env
	srv *ingest.Server
}

func newRetentionEnv(t *testing.T, value string) *retentionEnv {
	t.Helper()
	e := &retentionEnv{env: newEnv(t)}
	e.srv = ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = $1 WHERE key = 'retention.events'`, value)
	require.NoError(t, err)
	return e
}

// tenant adds a tenant.
func (e *retentionEnv) tenant(t *testing.T) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&id))
	return id
}

// publish stores n events of human (into queue: each with a pending todo;
// "": none) and returns their ids, oldest first.
func (e *retentionEnv) publish(t *testing.T, human uuid.UUID, queue string, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		res, err := e.srv.PublishEvent(asHuman(t, human, nil), &ingestv1.PublishEventRequest{Topic: "t", Queue: queue})
		require.NoError(t, err)
		ids[i] = res.GetEvent().GetId()
	}
	return ids
}

// left lists human's events, oldest first.
func (e *retentionEnv) left(t *testing.T, human uuid.UUID) []int64 {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT id FROM events WHERE human_id = $1 ORDER BY id`, human)
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// TestRetentionByAgeAndCapKeepsLiveTodosEvents: old events go, a tenant's
// oldest beyond its cap go, and an event whose todo is still pending stays
// past both (it counts toward the cap all the same).
func TestRetentionByAgeAndCapKeepsLiveTodosEvents(t *testing.T) {
	t.Parallel()
	e := newRetentionEnv(t, `{"max_age_seconds": 86400, "max_rows": 1000, "max_rows_per_tenant": 3}`)
	live := e.publish(t, e.human, "work", 1)[0] // its todo stays pending
	ids := e.publish(t, e.human, "", 6)
	// Age: the live one and the two oldest others are a year old.
	_, err := e.pool.Exec(t.Context(), `UPDATE events SET received_at = now() - interval '365 days' WHERE id = ANY($1)`,
		[]int64{live, ids[0], ids[1]})
	require.NoError(t, err)

	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	// By age: ids[0], ids[1]. Over the tenant's cap of its 3 newest (ids[3..5]): ids[2].
	require.EqualValues(t, 3, n)
	require.Equal(t, []int64{live, ids[3], ids[4], ids[5]}, e.left(t, e.human), "the live todo's event survives age and cap")

	n, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing more to prune")
}

// TestRetentionTenantCapEvictsOnlyTheWritersEvents reproduces the attack of
// issue 31: a tenant publishing far past the cap erased every other tenant's
// oldest events (the cap was the table's). Now it evicts only its own: it
// keeps exactly its newest max_rows_per_tenant (and its live todos' events),
// and the other tenant keeps everything, its oldest included.
func TestRetentionTenantCapEvictsOnlyTheWritersEvents(t *testing.T) {
	t.Parallel()
	e := newRetentionEnv(t, `{"max_age_seconds": 86400, "max_rows": 1000, "max_rows_per_tenant": 5}`)
	victim := e.publish(t, e.human, "", 4)
	attacker := e.tenant(t)
	liveOld := e.publish(t, attacker, "work", 1)[0]
	flood := e.publish(t, attacker, "", 20)

	_, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, victim, e.left(t, e.human), "the other tenant keeps all its events")
	require.Equal(t, append([]int64{liveOld}, flood[15:]...), e.left(t, attacker),
		"the writer keeps exactly its newest 5, and its live todo's event")

	// More of the same later: the next pass finds it from what was written.
	more := e.publish(t, attacker, "", 3)
	_, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, victim, e.left(t, e.human))
	require.Equal(t, append([]int64{liveOld}, append(flood[18:], more...)...), e.left(t, attacker))
}

// TestRetentionSafetyNetCutsTheLargestTenantFirst: when the tenants
// together hold more than max_rows (each within its own cap), the largest
// tenant's oldest go first, down to the level at which the table fits; the
// smallest keeps all of its events.
func TestRetentionSafetyNetCutsTheLargestTenantFirst(t *testing.T) {
	t.Parallel()
	e := newRetentionEnv(t, `{"max_age_seconds": 86400, "max_rows": 10, "max_rows_per_tenant": 50}`)
	large, medium, small := e.tenant(t), e.tenant(t), e.human
	smallIDs := e.publish(t, small, "", 1)
	largeIDs := e.publish(t, large, "", 8)
	mediumIDs := e.publish(t, medium, "", 5)

	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	// 14 rows, 10 allowed: the largest cut to 4; the medium keeps its 5
	// (the table then holds exactly 10), the small its 1.
	require.EqualValues(t, 4, n)
	require.Equal(t, largeIDs[4:], e.left(t, large), "the largest loses its oldest first")
	require.Equal(t, mediumIDs, e.left(t, medium))
	require.Equal(t, smallIDs, e.left(t, small))
}
