//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// Dedupe scenario sizes: each round, 3 clients (one per node) × 4 calls in
// flight each send EnqueueBatch with the same 100 new dedupe keys, every
// call in its own shuffled order. Unordered inserts of the same keys are the
// classic deadlock (each statement holds some keys' index entries and waits
// for the others'); the server must resolve it without the caller seeing it.
const (
	dedupeRounds   = 20
	dedupeKeys     = 100
	dedupeClients  = 3
	dedupeInFlight = 4
)

// TestChaosDedupe: every call succeeds the first time (no INTERNAL, no
// ABORTED reaching the caller), each key is stored once (exactly 100 rows a
// round), and every call agrees on each key's todo, with exactly one of the
// calls having created it.
func TestChaosDedupe(t *testing.T) { //nolint:paralleltest // one at a time: TestChaosMain crash-restarts the Postgres every scenario shares
	began := time.Now()
	c := newCluster(t, "chaos_dedupe")
	clients := make([]queuev1.QueueServiceClient, dedupeClients)
	for i := range clients {
		conn, err := worker.Dial([]string{c.nodes[i%len(c.nodes)].grpc}, worker.DialOptions{Token: c.token, AllowInsecure: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		clients[i] = queuev1.NewQueueServiceClient(conn)
	}
	calls, failed := 0, map[codes.Code]int{}
	var firstErrs []string
	var lost, double, disagree int64
	for round := range dedupeRounds {
		keys := make([]string, dedupeKeys)
		for k := range keys {
			keys[k] = fmt.Sprintf("dd-%02d-%03d", round, k)
		}
		type answer struct {
			resp *queuev1.EnqueueBatchResponse
			err  error
		}
		answers := make([]answer, dedupeClients*dedupeInFlight)
		var wg sync.WaitGroup
		gate := make(chan struct{}) // released at once: maximum overlap
		for i := range answers {
			order := append([]string(nil), keys...)
			rand.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			req := &queuev1.EnqueueBatchRequest{Queue: queueName}
			for _, k := range order {
				req.Requests = append(req.Requests, &queuev1.EnqueueRequest{DedupeKey: k})
			}
			wg.Go(func() {
				<-gate
				resp, err := clients[i%dedupeClients].EnqueueBatch(t.Context(), req)
				answers[i] = answer{resp, err}
			})
		}
		close(gate)
		wg.Wait()

		ids := map[string]int64{}
		created := map[string]int{}
		for _, a := range answers {
			calls++
			if a.err != nil {
				failed[status.Code(a.err)]++
				if len(firstErrs) < 3 {
					firstErrs = append(firstErrs, a.err.Error())
				}
				continue
			}
			for _, r := range a.resp.GetResponses() {
				k := r.GetTodo().GetDedupeKey()
				if id, seen := ids[k]; seen && id != r.GetTodo().GetId() {
					disagree++
				}
				ids[k] = r.GetTodo().GetId()
				if !r.GetDuplicate() {
					created[k]++
				}
			}
		}
		for _, k := range keys {
			if len(firstErrs) == 0 && created[k] != 1 {
				disagree++ // with every call answered, exactly one created each key
			}
		}
		var rows, distinct int64
		require.NoError(t, c.db.QueryRow(t.Context(), `
SELECT count(*), count(DISTINCT dedupe_key) FROM todos WHERE queue = $1 AND dedupe_key LIKE $2`,
			queueName, fmt.Sprintf("dd-%02d-%%", round)).Scan(&rows, &distinct))
		lost += dedupeKeys - distinct
		double += rows - distinct
	}

	r := row{scenario: "dedupe", todos: dedupeRounds * dedupeKeys, lost: lost, double: double, took: time.Since(began)}
	r.notes = append(r.notes, fmt.Sprintf("%d EnqueueBatch calls of %d keys (%d rounds × %d clients × %d in flight, one client per node): %d failed %v %q; %d answers disagreeing on a key's todo or its creator",
		calls, dedupeKeys, dedupeRounds, dedupeClients, dedupeInFlight, sum(failed), failed, firstErrs, disagree))
	addRow(t, r)
	require.Empty(t, failed, "calls that failed: %q", firstErrs)
	require.Zero(t, lost, "keys without a row")
	require.Zero(t, double, "keys stored twice")
	require.Zero(t, disagree, "answers disagreeing on a key's todo, or a key not created exactly once")
}

func sum(m map[codes.Code]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
