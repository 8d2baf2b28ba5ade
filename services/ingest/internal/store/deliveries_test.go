//go:build integration

package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/ingest/internal/store"
	"github.com/switchboard/switchboard/services/queue"
)

// TestRecordDeliveriesRingUnderConcurrentWriters: batches from several
// writers (nodes) for the same endpoints at once number their deliveries
// disjointly, so each endpoint ends with exactly its last 100, distinct;
// a batch for a deleted endpoint writes nothing for it and does not fail;
// deleting an endpoint takes its log with it.
func TestRecordDeliveriesRingUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	var human uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO humans (email) VALUES ('ring@example.test') RETURNING id`).Scan(&human))
	endpoints := make([]uuid.UUID, 2)
	for i := range endpoints {
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO endpoints (human_id, slug, queue, verification)
			VALUES ($1, $2, 'unused', 'none') RETURNING id`, human, fmt.Sprintf("ring-endpoint-%04d", i)).Scan(&endpoints[i]))
	}
	st := store.New(pool, nil, queue.NewTodos(pool, nil, queue.TodosOptions{}))

	const writers, batches, perBatch = 4, 5, 20 // 400 deliveries per endpoint
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				var ds []store.Delivery
				for i := range perBatch {
					for _, ep := range endpoints { // interleaved: the store sorts them into its lock order
						ds = append(ds, store.Delivery{
							EndpointID: ep, HumanID: human, ReceivedAt: time.Now(), Outcome: "accepted", HTTPStatus: 200,
							DeliveryID: fmt.Sprintf("w%d-b%d-%d", w, b, i),
						})
					}
				}
				errs <- st.RecordDeliveries(ctx, ds)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, ep := range endpoints {
		var rows, distinct int
		var maxSeq, counter int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT delivery_id), max(seq) FROM endpoint_deliveries WHERE endpoint_id = $1`, ep).
			Scan(&rows, &distinct, &maxSeq))
		require.NoError(t, pool.QueryRow(ctx, `SELECT seq FROM endpoint_delivery_seqs WHERE endpoint_id = $1`, ep).Scan(&counter))
		require.Equal(t, 100, rows, "bounded")
		require.Equal(t, 100, distinct, "no delivery numbered twice")
		require.Equal(t, int64(writers*batches*perBatch), counter)
		require.Equal(t, counter, maxSeq)
		logged, found, err := st.ListDeliveries(ctx, human, ep, 100)
		require.NoError(t, err)
		require.True(t, found)
		require.Len(t, logged, 100)
	}

	_, err := pool.Exec(ctx, `DELETE FROM endpoints WHERE id = $1`, endpoints[0])
	require.NoError(t, err)
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM endpoint_deliveries WHERE endpoint_id = $1`, endpoints[0]).Scan(&left))
	require.Zero(t, left, "the log goes with its endpoint")
	require.NoError(t, st.RecordDeliveries(ctx, []store.Delivery{
		{EndpointID: endpoints[0], HumanID: human, ReceivedAt: time.Now(), Outcome: "accepted", HTTPStatus: 200},
		{EndpointID: endpoints[1], HumanID: human, ReceivedAt: time.Now(), Outcome: "duplicate", HTTPStatus: 200, DeliveryID: "after"},
	}), "a deleted endpoint's delivery is left out, the rest written")
	logged, _, err := st.ListDeliveries(ctx, human, endpoints[1], 1)
	require.NoError(t, err)
	require.Equal(t, "after", logged[0].DeliveryID)
	_, found, err := st.ListDeliveries(ctx, human, endpoints[0], 1)
	require.NoError(t, err)
	require.False(t, found)
}
