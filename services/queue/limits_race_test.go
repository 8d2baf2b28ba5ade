//go:build integration

package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestLimitsHoldUnderRacingClaimers: 50 claimers over two queue servers
// ("nodes", each on its own pools) drain 800 keyed todos over 10 keys plus
// 100 keyless ones from a queue limited to 3 running per key and 20
// overall, completing most, and releasing, failing (retry), cancelling and
// abandoning (expired, then reaped) some. A monitor counting RUNNING todos
// from the database never sees a limit exceeded; at the end every todo is
// completed exactly once or cancelled, every counter equals the recount
// (0), and no statement failed (no deadlock).
//
// The claimers outnumber the limits' 20 slots from the first claim to the
// last, so every claim races others for the same keys however many todos
// there are; the count sets only how long the race lasts. At 2,200 todos it
// was the suite's longest test (60-80 s, 43 s of CPU with the race detector,
// on the 2-core CI machine), and every CI run repeats it.
func TestLimitsHoldUnderRacingClaimers(t *testing.T) {
	t.Parallel()
	const (
		keys, perKey, keyless = 10, 80, 100
		keyMax, queueMax      = 3, 20
		claimers              = 50
		q                     = "lim"
	)
	e := newEnv(t)
	small := func(c *pgxpool.Config) { c.MaxConns = 8 }
	hot := func(c *pgxpool.Config) {
		c.MaxConns = 12
		c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	other := queue.New(zap.NewNop(), pgtest.OpenPool(t, e.url, small), queue.Options{HotPool: pgtest.OpenPool(t, e.url, hot)})
	nodes := []*queue.Server{e.srv, other}

	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{Queue: q, MaxRunning: queueMax, KeyMaxRunning: keyMax})
	require.NoError(t, err)
	var reqs []*queuev1.EnqueueRequest
	for i := range keys * perKey {
		reqs = append(reqs, &queuev1.EnqueueRequest{Kind: "keyed", ConcurrencyKey: fmt.Sprintf("key-%d", i%keys)})
	}
	for range keyless {
		reqs = append(reqs, &queuev1.EnqueueRequest{Kind: "keyless"})
	}
	for i := 0; i < len(reqs); i += 1000 {
		_, err := e.srv.EnqueueBatch(e.owner(t), &queuev1.EnqueueBatchRequest{Queue: q, Requests: reqs[i:min(i+1000, len(reqs))]})
		require.NoError(t, err)
	}
	total := int64(len(reqs))

	var deadlocksBefore int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&deadlocksBefore))

	// The monitor: RUNNING todos per key and overall, as the database has
	// them, sampled every millisecond (back to back, it took a core's worth
	// of Postgres from the claimers it watches: ~8,000 samples a second).
	done := make(chan struct{})
	var maxKey, maxAll, samples atomic.Int64
	var monitor sync.WaitGroup
	monitor.Go(func() {
		sample := time.NewTicker(time.Millisecond)
		defer sample.Stop()
		for {
			select {
			case <-done:
				return
			case <-sample.C:
			}
			rows, err := e.pool.Query(t.Context(), `SELECT coalesce(concurrency_key, ''), count(*) FROM todos
				WHERE queue = $1 AND state = 'running' GROUP BY 1`, q)
			if !assertNoError(t, err) {
				return
			}
			var all int64
			for rows.Next() {
				var k string
				var n int64
				if !assertNoError(t, rows.Scan(&k, &n)) {
					return
				}
				all += n
				if k != "" && n > maxKey.Load() {
					maxKey.Store(n)
				}
			}
			if rows.Err() != nil || all > maxAll.Load() {
				maxAll.Store(all)
			}
			samples.Add(1)
		}
	})

	var finished, completedOK, doubles atomic.Int64
	var completedIDs sync.Map
	var wg sync.WaitGroup
	// A drain that stops making progress (a leaked counter holding a key
	// shut, a todo no reaper returns) fails with the state that explains it
	// instead of spinning until the package's timeout hides which test hung;
	// so does a claimer's error (the todos it holds would never finish).
	drain := watchProgress(t, e, q, &finished, total)
	for w := range claimers {
		srv := nodes[w%len(nodes)]
		wg.Go(func() {
			ctx, owner := e.worker(t), e.owner(t)
			rnd := rand.New(rand.NewPCG(uint64(w), 17)) //nolint:gosec // test randomness
			for finished.Load() < total && drain.err() == nil {
				res, err := srv.Claim(ctx, &queuev1.ClaimRequest{
					Queue: q, WorkerId: fmt.Sprintf("w%d", w), MaxTodos: 1 + rnd.Int32N(4), LeaseSeconds: 600,
					Wait: durationpb.New(100 * time.Millisecond),
				})
				if !assertNoError(t, err) {
					drain.stop(err)
					return
				}
				for _, td := range res.GetTodos() {
					time.Sleep(time.Duration(rnd.IntN(1000)) * time.Microsecond) // the work
					switch p := rnd.IntN(100); {
					case p < 4: // retried later
						_, err = srv.Release(ctx, &queuev1.ReleaseRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
					case p < 8:
						_, err = srv.Fail(ctx, &queuev1.FailRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken(), Error: "x", RetryAfter: durationpb.New(0)})
					case p < 10:
						_, err = srv.Cancel(owner, &queuev1.CancelRequest{Id: td.GetId()})
						finished.Add(1)
					case p < 12: // the worker dies: its lease expires and a reaper returns the todo
						if _, err = e.pool.Exec(ctx, `UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, td.GetId()); err == nil {
							err = reapUntilReturned(ctx, e, nodes[rnd.IntN(len(nodes))], td, drain)
						}
					default:
						_, err = srv.Complete(ctx, &queuev1.CompleteRequest{Id: td.GetId(), LeaseToken: td.GetLeaseToken()})
						if err == nil {
							completedOK.Add(1)
							finished.Add(1)
							if _, dup := completedIDs.LoadOrStore(td.GetId(), true); dup {
								doubles.Add(1)
							}
						}
					}
					if !assertNoError(t, err) {
						drain.stop(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	monitor.Wait()
	require.NoError(t, drain.err(), "the drain stopped")

	t.Logf("%d monitor samples; most running per key %d, overall %d", samples.Load(), maxKey.Load(), maxAll.Load())
	require.Positive(t, samples.Load())
	require.LessOrEqual(t, maxKey.Load(), int64(keyMax), "a key ran more than key_max_running todos at once")
	require.LessOrEqual(t, maxAll.Load(), int64(queueMax), "the queue ran more than max_running todos at once")
	require.EqualValues(t, 0, doubles.Load(), "a todo was completed twice")
	require.Equal(t, completedOK.Load(), e.count(t, `SELECT count(*) FROM todos WHERE queue = $1 AND state = 'completed'`, q))
	require.Equal(t, total, e.count(t, `SELECT count(*) FROM todos WHERE queue = $1 AND state IN ('completed', 'cancelled')`, q))
	require.EqualValues(t, 0, e.count(t, `SELECT coalesce(sum(running), 0) FROM queue_keys WHERE queue = $1`, q), "key counters = recount = 0")
	require.EqualValues(t, 0, e.count(t, `SELECT running FROM queue_controls WHERE queue = $1`, q), "queue counter = recount = 0")
	require.EqualValues(t, keys, e.count(t, `SELECT count(*) FROM queue_keys WHERE queue = $1`, q))
	repaired, err := e.srv.RepairOnce(t.Context())
	require.NoError(t, err)
	require.Zero(t, repaired, "the repair pass found nothing to fix")
	var deadlocksAfter int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&deadlocksAfter))
	require.Equal(t, deadlocksBefore, deadlocksAfter, "deadlocks (40P01) in the test's database")
}

// reapUntilReturned runs reaper passes until td's expired lease has ended,
// as the node's reaper loop would on its next ticks: a pass skips a row
// another statement holds locked, however briefly (SKIP LOCKED; a claim
// whose snapshot still saw td pending may lock it to re-check it), so one
// pass may miss it, and in this test no later pass would come. A run that
// relied on one pass left its last todo leased for good (1 of 6 runs next
// to a saturated CI run).
func reapUntilReturned(ctx context.Context, e *env, srv *queue.Server, td *queuev1.Todo, drain drainGuard) error {
	for drain.err() == nil {
		if _, err := srv.ReapOnce(ctx); err != nil {
			return err
		}
		var held bool
		if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM todos WHERE id = $1 AND lease_token = $2 AND state = 'running')`,
			td.GetId(), td.GetLeaseToken()).Scan(&held); err != nil || !held {
			return err
		}
	}
	return nil
}

// stallAfter is how long the race test's drain may go without finishing a
// todo before it is declared stuck.
const stallAfter = 90 * time.Second

// drainGuard ends a drain early: on a claimer's error or on a stall.
type drainGuard struct {
	ctx    context.Context //nolint:containedctx // the guard is a cancellation with a cause, nothing else
	cancel context.CancelCauseFunc
}

// stop ends the drain with why; the first cause wins.
func (g drainGuard) stop(why error) { g.cancel(why) }

// err is why the drain was stopped, or nil.
func (g drainGuard) err() error { return context.Cause(g.ctx) }

// watchProgress returns a guard that stops the drain when finished has not
// moved for stallAfter, after logging the queue's todos by state and key
// and its counter rows, so a stuck drain says why.
func watchProgress(t *testing.T, e *env, q string, finished *atomic.Int64, total int64) drainGuard {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(t.Context()))
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); cancel(nil) })
	go func() {
		last, since := finished.Load(), time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			n := finished.Load()
			if n >= total {
				return
			}
			if n != last {
				last, since = n, time.Now()
				continue
			}
			if time.Since(since) < stallAfter {
				continue
			}
			for _, sql := range []string{
				`SELECT state || ' ' || coalesce(concurrency_key, '-') || ' ' || count(*) || ' expired=' || count(*) FILTER (WHERE lease_expires_at < now())
				   FROM todos WHERE queue = $1 GROUP BY state, concurrency_key ORDER BY 1`,
				`SELECT 'key ' || key || ' running=' || running || ' max=' || coalesce(max_running::text, '-') FROM queue_keys WHERE queue = $1 ORDER BY key`,
				`SELECT 'queue running=' || running || ' paused=' || paused FROM queue_controls WHERE queue = $1`,
			} {
				rows, err := e.pool.Query(context.WithoutCancel(ctx), sql, q)
				if err != nil {
					t.Logf("diagnostic query failed: %v", err)
					continue
				}
				for rows.Next() {
					var line string
					if rows.Scan(&line) == nil {
						t.Log(line)
					}
				}
				rows.Close()
			}
			cancel(fmt.Errorf("no todo finished for %s at %d of %d", stallAfter, n, total))
			return
		}
	}()
	return drainGuard{ctx: ctx, cancel: cancel}
}
