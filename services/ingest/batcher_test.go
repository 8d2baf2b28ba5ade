//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/ingest"
)

// TestGroupCommitStoresEachDeliveryOnce: with the group commit running,
// concurrent deliveries (distinct ones, and copies of one) share statements,
// and each distinct delivery ends as exactly one event and one todo.
func TestGroupCommitStoresEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys})
	var statements, largest atomic.Int64
	srv.OnBatchStatement(func(n int) {
		statements.Add(1)
		for {
			l := largest.Load()
			if int64(n) <= l || largest.CompareAndSwap(l, int64(n)) {
				break
			}
		}
	})
	for _, c := range srv.Components() {
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { // t.Context() is already cancelled in Cleanup
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, c.Stop(ctx))
		})
	}
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")

	const distinct, copies = 40, 3
	var wg sync.WaitGroup
	codes := make(chan int, distinct*copies)
	for i := range distinct {
		body := fmt.Appendf(nil, `{"i":%d}`, i)
		h := standardHeaders(t, fmt.Sprintf("msg_%d", i), time.Now(), body)
		for range copies {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/hooks/"+slug, bytes.NewReader(body))
				if err != nil {
					codes <- 0
					return
				}
				req.Header = h.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					codes <- 0
					return
				}
				_ = resp.Body.Close()
				codes <- resp.StatusCode
			})
		}
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.Equal(t, distinct, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, distinct, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND event_id IS NOT NULL`))
	require.Positive(t, statements.Load())
	require.Less(t, statements.Load(), int64(distinct*copies), "requests shared statements")
	t.Logf("%d requests in %d statements, largest %d", distinct*copies, statements.Load(), largest.Load())
}
