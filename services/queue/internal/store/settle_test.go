//go:build integration

package store

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// limitedQueue makes a tenant with n pending todos in a limited queue
// "lim", each under its own key, and claims claim of them.
func limitedQueue(t *testing.T, n, claim int) (*pgxpool.Pool, *Store, Caller, []Todo) {
	t.Helper()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	s := New(pool, pool)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('settle@example.test') RETURNING id`).Scan(&human))
	c := Caller{HumanID: human}
	_, err := s.SetLimits(ctx, c, "lim", Limits{MaxRunning: 100, KeyMaxRunning: 5})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO todos (human_id, queue, concurrency_key) SELECT $1, 'lim', 'k' || i FROM generate_series(1, $2::int) AS i`, human, n)
	require.NoError(t, err)
	_, err = s.Repair(ctx, human, "lim", true) // key rows for the todos inserted behind the enqueue's back
	require.NoError(t, err)
	claimed, err := s.Claim(ctx, c, ClaimArgs{Queue: "lim", Worker: "w", Max: int32(claim)}) //nolint:gosec // small
	require.NoError(t, err)
	require.Len(t, claimed, claim)
	return pool, s, c, claimed
}

// running is the queue's counter and the sum of its keys' counters.
func running(t *testing.T, pool *pgxpool.Pool, human uuid.UUID) (queue, keys int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT c.running, (SELECT coalesce(sum(k.running), 0)::int FROM queue_keys AS k
		WHERE k.human_id = c.human_id AND k.queue = c.queue) FROM queue_controls AS c WHERE c.human_id = $1 AND c.queue = 'lim'`,
		human).Scan(&queue, &keys))
	return queue, keys
}

// TestSettleEndsAMixOfRunsInOneStatement: one TodoSettle completes, fails,
// releases and cancels (a running and a pending todo), each as its own
// statement did, and releases the counters of exactly the runs it ended.
func TestSettleEndsAMixOfRunsInOneStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, s, c, claimed := limitedQueue(t, 5, 4)
	q, k := running(t, pool, c.HumanID)
	require.Equal(t, []int{4, 4}, []int{q, k})
	all, err := s.List(ctx, c, ListFilter{Limit: 10})
	require.NoError(t, err)
	var pending Todo
	for _, td := range all {
		if td.State == "pending" {
			pending = td
		}
	}
	require.NotZero(t, pending.ID)
	lease := func(i int) Lease { return Lease{ID: claimed[i].ID, Token: *claimed[i].LeaseToken} }

	rows, err := s.settle(ctx, pool, settleArgs{Caller: c, backoff: Backoff{Base: time.Second, Cap: time.Hour}}, []settleItem{
		{Lease: lease(0), action: actComplete, result: []byte(`{"ok":true}`)},
		{Lease: lease(1), action: actFail, text: "boom", delay: 60},
		{Lease: lease(2), action: actRelease},
		{Lease: Lease{ID: claimed[3].ID}, action: actCancel, text: "not needed"},
		{Lease: Lease{ID: pending.ID}, action: actCancel},
	})
	require.NoError(t, err)
	require.Len(t, rows, 5)
	freed := map[int64]bool{}
	for _, r := range rows {
		freed[r.ID] = r.Freed
	}
	require.Equal(t, map[int64]bool{claimed[0].ID: true, claimed[1].ID: true, claimed[2].ID: true, claimed[3].ID: true, pending.ID: false},
		freed, "a cancelled pending todo held no slot")

	get := func(id int64) Todo {
		td, err := s.Get(ctx, c, id)
		require.NoError(t, err)
		return td
	}
	done := get(claimed[0].ID)
	require.Equal(t, "completed", done.State)
	require.JSONEq(t, `{"ok":true}`, string(done.Result))
	require.NotNil(t, done.FinishedAt)

	failed := get(claimed[1].ID)
	require.Equal(t, "pending", failed.State)
	require.Equal(t, "failed", *failed.LeaseOutcome)
	require.Equal(t, "boom", *failed.LastError)
	require.WithinDuration(t, time.Now().Add(time.Minute), failed.RunAt, 30*time.Second, "the retry waits the delay given")
	var errs []map[string]any
	require.NoError(t, json.Unmarshal(failed.Errors, &errs))
	require.Len(t, errs, 1)
	require.Equal(t, "boom", errs[0]["error"])

	released := get(claimed[2].ID)
	require.Equal(t, "pending", released.State)
	require.Equal(t, claimed[2].MaxAttempts+1, released.MaxAttempts, "no penalty: one more attempt")
	require.Equal(t, claimed[2].RunAt, released.RunAt, "it keeps its place")
	require.Nil(t, released.FinishedAt)

	cancelled := get(claimed[3].ID)
	require.Equal(t, "cancelled", cancelled.State)
	require.Equal(t, "cancelled", *cancelled.LeaseOutcome)
	require.Equal(t, "not needed", *cancelled.LastError)

	cancelledPending := get(pending.ID)
	require.Equal(t, "cancelled", cancelledPending.State)
	require.Nil(t, cancelledPending.LeaseOutcome, "it had no lease to end")
	require.Nil(t, cancelledPending.LastError)

	q, k = running(t, pool, c.HumanID)
	require.Equal(t, []int{0, 0}, []int{q, k}, "the four runs released their slots, the pending todo none")
}

// TestReapEndsExpiredLeasesThroughSettle: the reaper's expired runs go back
// to pending (dead at the expiry cap) and release their limited queue's
// counters; a live lease is left alone.
func TestReapEndsExpiredLeasesThroughSettle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, s, c, claimed := limitedQueue(t, 3, 3)
	_, err := pool.Exec(ctx, `UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = ANY ($1)`,
		[]int64{claimed[0].ID, claimed[1].ID})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE todos SET lease_expiries = 2 WHERE id = $1`, claimed[1].ID)
	require.NoError(t, err)

	reaped, err := s.Reap(ctx, 10, 3)
	require.NoError(t, err)
	states := map[int64]string{}
	for _, r := range reaped {
		require.Equal(t, c.HumanID, r.HumanID)
		require.Equal(t, "lim", r.Queue)
		states[r.ID] = r.State
	}
	require.Equal(t, map[int64]string{claimed[0].ID: "pending", claimed[1].ID: "dead"}, states)

	back, err := s.Get(ctx, c, claimed[0].ID)
	require.NoError(t, err)
	require.Equal(t, "expired", *back.LeaseOutcome)
	require.EqualValues(t, 1, back.LeaseExpiries)
	require.Equal(t, "lease expired", *back.LastError)
	dead, err := s.Get(ctx, c, claimed[1].ID)
	require.NoError(t, err)
	require.NotNil(t, dead.FinishedAt)
	require.Contains(t, *dead.LastError, "expired 3 times in a row")
	live, err := s.Get(ctx, c, claimed[2].ID)
	require.NoError(t, err)
	require.Equal(t, "running", live.State)

	q, k := running(t, pool, c.HumanID)
	require.Equal(t, []int{1, 1}, []int{q, k}, "the live lease still holds its slot")
	again, err := s.Reap(ctx, 10, 3)
	require.NoError(t, err)
	require.Empty(t, again)
}
