//go:build integration

package queue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/services/queue"
)

// A claim whose caller has gone by the time the statement committed must not
// strand its todos until their leases expire: they go straight back to
// pending, claimable at once, with the lease token still counting up.
func TestAbandonedClaimIsReleasedAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.enqueue(t, "jobs", 3)
	ctx, cancel := context.WithCancel(e.worker(t))
	defer cancel()
	queue.AfterClaim(e.srv, cancel) // the caller gives up right after the claim commits

	_, err := e.srv.Claim(ctx, &queuev1.ClaimRequest{Queue: "jobs", WorkerId: "gone", MaxTodos: 3})
	require.Equal(t, codes.Canceled, code(err))

	var pending int
	require.NoError(t, e.pool.QueryRow(t.Context(),
		"SELECT count(*) FROM todos WHERE id = ANY($1) AND state = 'pending' AND attempt = 1", ids).Scan(&pending))
	require.Equal(t, 3, pending, "released, and the abandoned attempt still counted")

	queue.AfterClaim(e.srv, nil)
	got := e.claim(t, "jobs", 3)
	require.Len(t, got, 3, "claimable again without waiting for a lease to expire")
	for _, td := range got {
		require.Equal(t, int32(2), td.GetAttempt(), "a fresh lease token")
	}
}
