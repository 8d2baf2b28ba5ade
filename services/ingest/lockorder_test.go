//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/ingest"
)

// TestOverlappingBatchesDoNotDeadlock: four ingest servers (four nodes'
// group-commit batchers) over one database each receive the same 100
// deliveries at once, in their own shuffled orders, so their batches name
// overlapping delivery ids in different orders. Every delivery is answered
// 200 and stored exactly once: the batches take their keys in one order
// instead of deadlocking.
func TestOverlappingBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	big := pgtest.OpenPool(t, e.pool.Config().ConnString(), func(c *pgxpool.Config) { c.MaxConns = 16 })
	const nodes, deliveries, rounds = 4, 100, 3
	urls := make([]string, nodes)
	for i := range urls {
		srv := ingest.New(zap.NewNop(), big, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos()})
		for _, c := range srv.Components() {
			require.NoError(t, c.Start(t.Context()))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, c.Stop(ctx))
			})
		}
		mux := http.NewServeMux()
		mux.Handle(ingest.HookPattern, srv.HookHandler())
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		urls[i] = hs.URL
	}
	for round := range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		got := make(chan int, nodes*deliveries)
		for n, u := range urls {
			for _, d := range rand.New(rand.NewPCG(uint64(round), uint64(n))).Perm(deliveries) { //nolint:gosec // test order
				body := fmt.Appendf(nil, `{"round":%d,"d":%d}`, round, d)
				h := standardHeaders(t, fmt.Sprintf("msg_%d_%d", round, d), time.Now(), body)
				wg.Go(func() {
					<-start
					req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u+"/hooks/"+slug, bytes.NewReader(body))
					if err != nil {
						got <- 0
						return
					}
					req.Header = h.Clone()
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						got <- 0
						return
					}
					_ = resp.Body.Close()
					got <- resp.StatusCode
				})
			}
		}
		close(start)
		wg.Wait()
		close(got)
		for c := range got {
			require.Equal(t, http.StatusOK, c, "round %d", round)
		}
	}
	require.Equal(t, rounds*deliveries, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, rounds*deliveries, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND event_id IS NOT NULL`))
}
