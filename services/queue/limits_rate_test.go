//go:build integration

package queue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/queue"
)

// TestQueueRateLimitHoldsAcrossNodes: a queue limited to 20 claims per
// second (burst 5), drained by 20 long-polling claimers over two servers
// until 45 (two seconds' worth) are claimed: in no second are more than
// rate + burst todos claimed, between the first claim and the last no more
// than the burst plus the rate over that span, and the waiting claimers do
// not busy-loop (a handful of claim statements per claimer per second, not
// hundreds). Those are bounds a loaded machine cannot break, only a limiter
// that lets too much through: a machine that wakes claimers late claims
// less, which says nothing about the limit (how close to the rate a
// limited queue runs is the bench's). The burst lets a claim that a loaded
// machine wakes late still find the tokens that came due meanwhile, as a
// rate's users size it; with burst 1 each late wake-up loses its token.
func TestQueueRateLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const rate, burst, claimers = 20, 5, 20
	const want = burst + 2*rate
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "rated", RatePerSecond: rate, RateBurst: burst})
	require.NoError(t, err)
	e.enqueue(t, "rated", 500)

	claimed := func(ctx context.Context) bool {
		var n int64
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM todos WHERE queue = 'rated' AND attempted_at IS NOT NULL`).Scan(&n)
		return err == nil && n >= want
	}
	elapsed, statements := runClaimers(t, e, "rated", claimers, time.Minute, claimed) // the minute only guards against a hang
	most, total := claimedPerSecond(t, e, "rated", "")
	var span float64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT extract(epoch FROM max(attempted_at) - min(attempted_at))::float8
		FROM todos WHERE queue = 'rated' AND attempted_at IS NOT NULL`).Scan(&span))
	t.Logf("%d claimed in %.2f s, at most %d in one second; %d claim statements in %v", total, span, most, statements, elapsed)
	require.GreaterOrEqual(t, total, int64(want))
	require.LessOrEqual(t, most, int64(rate+burst), "a second with more claims than rate + burst")
	// 10 % and one todo of slack: the bucket refills in fractions of a token.
	require.LessOrEqual(t, float64(total), (burst+rate*span)*1.1+1, "more claims than the burst plus the rate over the span allows")
	require.Less(t, float64(statements)/elapsed.Seconds()/claimers, 10.0, "claim statements per waiting claimer per second")
}

// TestKeyRateLimit: each key of a queue limited to 5 claims per second per
// key gets at most 5 (+ burst) in any second, and both keys are served at
// once. The claimers run until each key has had two seconds' worth claimed,
// not for a fixed two seconds: a loaded machine claims less in the same time,
// which says nothing about the limit (the rate itself is the bench's).
func TestKeyRateLimit(t *testing.T) {
	t.Parallel()
	const rate, want = 5, 2*5 + 1
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: "krated", KeyRatePerSecond: rate, KeyRateBurst: 1})
	require.NoError(t, err)
	enqueueKeyed(t, e, "krated", map[string]int{"a": 100, "b": 100})

	served := func(ctx context.Context) bool {
		var a, b int64
		err := e.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE concurrency_key = 'a'), count(*) FILTER (WHERE concurrency_key = 'b')
			FROM todos WHERE queue = 'krated' AND attempted_at IS NOT NULL`).Scan(&a, &b)
		return err == nil && a >= want && b >= want
	}
	runClaimers(t, e, "krated", 6, time.Minute, served) // the minute only guards against a hang
	for _, key := range []string{"a", "b"} {
		most, total := claimedPerSecond(t, e, "krated", key)
		require.LessOrEqual(t, most, int64(rate+1), "key %s: a second with more claims than rate + burst", key)
		require.GreaterOrEqual(t, total, int64(want), "key %s is served", key)
	}
	var overlap bool
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		SELECT min(attempted_at) FILTER (WHERE concurrency_key = 'a') < max(attempted_at) FILTER (WHERE concurrency_key = 'b')
		   AND min(attempted_at) FILTER (WHERE concurrency_key = 'b') < max(attempted_at) FILTER (WHERE concurrency_key = 'a')
		FROM todos WHERE queue = 'krated' AND attempted_at IS NOT NULL`).Scan(&overlap))
	require.True(t, overlap, "both keys are served at once, neither after the other")
}

// runClaimers runs n long-polling claimers, half on e.srv and half on a
// second server over its own pools, completing what they claim, for d or,
// with until, until it holds (checked every 20 ms; d then bounds the wait);
// it returns how long they ran and how many claim statements they made.
func runClaimers(t *testing.T, e *env, q string, n int, d time.Duration, until func(context.Context) bool) (time.Duration, int64) {
	t.Helper()
	other := queue.New(zap.NewNop(), pgtest.OpenPool(t, e.url, func(c *pgxpool.Config) { c.MaxConns = 4 }),
		queue.Options{HotPool: pgtest.OpenPool(t, e.url, func(c *pgxpool.Config) {
			c.MaxConns = 8
			c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		})})
	var statements atomic.Int64
	nodes := []*queue.Server{e.srv, other}
	for _, s := range nodes {
		queue.OnClaimAttempt(s, func() { statements.Add(1) })
	}
	ctx, cancel := context.WithTimeout(e.worker(t), d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	if until != nil {
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for !until(ctx) {
				select {
				case <-ctx.Done():
					t.Errorf("gave up after %v: the condition never held", d)
					return
				case <-tick.C:
				}
			}
			cancel()
		})
	}
	for i := range n {
		srv := nodes[i%len(nodes)]
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := srv.Claim(ctx, &queuev1.ClaimRequest{
					Queue: q, WorkerId: fmt.Sprintf("w%d", i), MaxTodos: 5, Wait: durationpb.New(time.Second),
				})
				if ctx.Err() != nil {
					return
				}
				if !assertNoError(t, err) {
					return
				}
				for _, td := range res.GetTodos() {
					_, err := srv.Complete(context.WithoutCancel(ctx), &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()}) // past the deadline too
					assertNoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), statements.Load()
}

// claimedPerSecond returns, for the todos of q (of one key, unless key is
// ""), the most claimed within any one second (a sliding window starting at
// each claim, by the database's attempted_at) and how many were claimed.
func claimedPerSecond(t *testing.T, e *env, q, key string) (most, total int64) {
	t.Helper()
	require.NoError(t, e.pool.QueryRow(t.Context(), `
		WITH c AS (SELECT attempted_at AS at FROM todos
		           WHERE queue = $1 AND attempted_at IS NOT NULL AND ($2 = '' OR concurrency_key = $2))
		SELECT coalesce(max(w.n), 0), (SELECT count(*) FROM c)
		FROM c AS c1
		CROSS JOIN LATERAL (SELECT count(*) AS n FROM c AS c2
		                    WHERE c2.at >= c1.at AND c2.at < c1.at + interval '1 second') AS w`, q, key).Scan(&most, &total))
	require.Positive(t, total)
	return most, total
}
