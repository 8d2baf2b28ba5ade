//go:build integration

package queue_test

import (
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// finishedAs completes n todos of human's queue q, acting as human, and
// stamps them finished minutesAgo, minutesAgo-1, … minutes ago (oldest
// first), so the cap's order is the test's.
func (e *env) finishedAs(t *testing.T, human uuid.UUID, q string, n, minutesAgo int) []int64 {
	t.Helper()
	ctx := asHuman(t, human)
	reqs := make([]*queuev1.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = &queuev1.EnqueueRequest{}
	}
	_, err := e.srv.EnqueueBatch(ctx, &queuev1.EnqueueBatchRequest{Queue: q, Requests: reqs})
	require.NoError(t, err)
	res, err := e.srv.Claim(ctx, &queuev1.ClaimRequest{Queue: q, WorkerId: "w", MaxTodos: int32(n)}) //nolint:gosec // small
	require.NoError(t, err)
	require.Len(t, res.GetTodos(), n)
	ids := make([]int64, n)
	for i, td := range res.GetTodos() {
		_, err := e.srv.Complete(ctx, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
		require.NoError(t, err)
		ids[i] = td.GetId()
		_, err = e.pool.Exec(t.Context(), `UPDATE todos SET finished_at = now() - make_interval(mins => $2) WHERE id = $1`,
			td.GetId(), minutesAgo-i)
		require.NoError(t, err)
	}
	return ids
}

// finishedLeft lists human's finished todos, oldest finished first.
func (e *env) finishedLeft(t *testing.T, human uuid.UUID) []int64 {
	t.Helper()
	rows, err := e.pool.Query(t.Context(),
		`SELECT id FROM todos WHERE human_id = $1 AND finished_at IS NOT NULL ORDER BY finished_at, id`, human)
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

// TestRetentionTenantCapEvictsOnlyTheWritersTodos reproduces the attack of
// issue 31 on finished todos: a tenant finishing todos far past the cap
// erased every other tenant's history (the cap was the table's). Now only
// its own oldest go: it keeps exactly its newest max_rows_per_tenant, the
// other tenant keeps all of its finished todos, and live work stays.
func TestRetentionTenantCapEvictsOnlyTheWritersTodos(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{RetentionBatch: 4}) // several batches
	e.setRetention(t, `{"max_age_seconds": 604800, "max_rows": 1000, "max_rows_per_tenant": 5}`)
	victim := e.finishedAs(t, e.human, "q", 3, 600) // finished long before the flood
	attacker := seedHuman(t, e.pool)
	flood := e.finishedAs(t, attacker, "q", 20, 60)
	live := e.enqueue(t, "q", 2)

	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 15, n)
	require.Equal(t, victim, e.finishedLeft(t, e.human), "the other tenant keeps all its finished todos")
	require.Equal(t, flood[15:], e.finishedLeft(t, attacker), "the writer keeps exactly its newest 5")
	require.EqualValues(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE id = ANY($1) AND state = 'pending'`, live))

	// A todo finished now is its newest: its oldest kept one goes.
	more := e.finishedAs(t, attacker, "q", 1, 0)
	n, err = e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, append(flood[16:], more...), e.finishedLeft(t, attacker))
	require.Equal(t, victim, e.finishedLeft(t, e.human))
}

// TestRetentionSafetyNetCutsTheLargestTenantFirst: when the tenants
// together hold more finished todos than max_rows (each within its own
// cap), the largest tenant's oldest go first, down to the level at which the
// table fits; the smallest keeps everything.
func TestRetentionSafetyNetCutsTheLargestTenantFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setRetention(t, `{"max_age_seconds": 604800, "max_rows": 10, "max_rows_per_tenant": 50}`)
	large, medium := seedHuman(t, e.pool), seedHuman(t, e.pool)
	largeIDs := e.finishedAs(t, large, "q", 9, 30)
	mediumIDs := e.finishedAs(t, medium, "q", 6, 20)
	smallIDs := e.finishedAs(t, e.human, "q", 2, 900) // the oldest of all

	n, err := e.srv.PruneOnce(t.Context())
	require.NoError(t, err)
	// 17 finished, 10 allowed: the two largest are cut to 4 each, so the
	// table holds exactly 10.
	require.EqualValues(t, 7, n)
	require.Equal(t, largeIDs[5:], e.finishedLeft(t, large), "the largest loses its oldest first")
	require.Equal(t, mediumIDs[2:], e.finishedLeft(t, medium))
	require.Equal(t, smallIDs, e.finishedLeft(t, e.human), "the smallest keeps all, its oldest included")
}

// TestRetentionTenantCapOnTwoNodesAtOnce: every node prunes; two passes at
// once (each its own pruner, as two nodes are) skip each other's rows and
// together leave the writer exactly its newest max_rows_per_tenant, the
// other tenant untouched.
func TestRetentionTenantCapOnTwoNodesAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, queue.Options{RetentionBatch: 3})
	e.setRetention(t, `{"max_age_seconds": 604800, "max_rows": 10000, "max_rows_per_tenant": 7}`)
	other := queue.New(zap.NewNop(), e.pool, queue.Options{RetentionBatch: 3})
	victim := e.finishedAs(t, e.human, "q", 4, 900)
	attacker := seedHuman(t, e.pool)
	flood := e.finishedAs(t, attacker, "q", 60, 120)

	var wg sync.WaitGroup
	for _, s := range []*queue.Server{e.srv, other} {
		wg.Go(func() {
			_, err := s.PruneOnce(t.Context())
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, flood[53:], e.finishedLeft(t, attacker))
	require.Equal(t, victim, e.finishedLeft(t, e.human))
}
