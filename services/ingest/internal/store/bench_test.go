//go:build integration

package store_test

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/queue"
)

// BenchmarkIngestBatch measures the database's side of the webhook edge
// alone: the one transaction (the events, then their todos through the
// queue's writer; one commit) the group commit runs, in batches of n from
// ONE connection, as the group commit does, on a generic-plan session like
// the node's. Each op is one batch;
// events/s is the ceiling of the HTTP path at concurrency n, before HTTP,
// verification or the load generator take their share of the CPU.
//
//	go test -tags integration -run '^$' -bench Ingest -benchtime 3s ./services/ingest/internal/store/
func BenchmarkIngestBatch(b *testing.B) {
	pool := pgtest.OpenPool(b, pgtest.NewDatabase(b), func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	})
	var human, endpoint uuid.UUID
	require.NoError(b, pool.QueryRow(b.Context(), `INSERT INTO humans (email) VALUES ('bench@example.test') RETURNING id`).Scan(&human))
	require.NoError(b, pool.QueryRow(b.Context(), `INSERT INTO endpoints (human_id, slug, queue, verification)
		VALUES ($1, 'bench-endpoint-0001', 'bench', 'standard_webhooks') RETURNING id`, human).Scan(&endpoint))
	st := store.New(pool, nil, queue.NewTodos(pool, nil, queue.TodosOptions{}))
	ip := netip.MustParseAddr("127.0.0.1")
	body := []byte(`{"run":"bench","n":1,"pad":"` + strings.Repeat("x", 192) + `"}`)
	var seq atomic.Int64
	for _, n := range []int{1, 8, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			events := make([]store.Event, n)
			for b.Loop() {
				for i := range events {
					id := "msg_" + strconv.FormatInt(seq.Add(1), 10)
					events[i] = store.Event{
						HumanID: human, Source: "endpoint:" + endpoint.String(), EndpointID: &endpoint, DeliveryID: id,
						ContentType: "application/json", Payload: body, VerifiedScheme: "standard_webhooks", SourceIP: &ip,
						Headers: map[string]string{
							"content-type": "application/json", "webhook-id": id, "webhook-timestamp": "1700000000",
							"webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "user-agent": "bench",
						},
					}
				}
				res, err := st.Ingest(b.Context(), events, store.Target{Queue: "bench", Kind: "webhook"})
				require.NoError(b, err)
				require.False(b, res[n-1].Duplicate)
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
