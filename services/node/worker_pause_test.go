//go:build integration

package node_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

// TestWorkerLongPollsAPausedQueue: an SDK worker on a paused queue does not
// spin. Each of its Claim calls is held by the node for (about) the
// worker's Wait and comes back empty, so an idle worker costs one call per
// Wait, not one per round trip; a resume wakes the waiting call and the
// worker gets the todo that was enqueued while paused.
func TestWorkerLongPollsAPausedQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	q := queuev1.NewQueueServiceClient(b.conn)
	_, err := q.PauseQueue(t.Context(), &queuev1.PauseQueueRequest{Queue: "held"})
	require.NoError(t, err)
	_, err = q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "held", Kind: "k"})
	require.NoError(t, err)

	const wait = 400 * time.Millisecond
	var mu sync.Mutex
	var claims []time.Duration // how long each Claim call took
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
	) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if strings.HasSuffix(method, "/Claim") && err == nil {
			mu.Lock()
			claims = append(claims, time.Since(start))
			mu.Unlock()
		}
		return err
	})
	conn, err := worker.Dial([]string{b.node.GRPCAddr()}, worker.DialOptions{
		Token: b.token, AllowInsecure: true, GRPCOptions: []grpc.DialOption{count},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	handled := make(chan *queuev1.Todo, 1)
	w := worker.New(conn, "held", func(_ context.Context, td *queuev1.Todo) error {
		handled <- td
		return nil
	}, worker.Options{Wait: wait, AckDelay: worker.NoAckDelay})
	stop := start(t, w)

	answered := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), claims...)
	}
	require.Eventually(t, func() bool { return len(answered()) >= 3 }, 30*time.Second, 10*time.Millisecond)
	require.Empty(t, handled, "a paused queue hands out nothing")
	for i, d := range answered() {
		// A lower bound only (a loaded machine makes calls longer, never
		// shorter): the node held the call instead of answering at once.
		require.GreaterOrEqual(t, d, wait/2, "claim %d came back after %v: the worker would spin", i, d)
	}

	_, err = q.ResumeQueue(t.Context(), &queuev1.ResumeQueueRequest{Queue: "held"})
	require.NoError(t, err)
	select {
	case td := <-handled:
		require.Equal(t, "k", td.GetKind())
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed queue's todo never reached the worker")
	}
	require.NoError(t, stop())
}
