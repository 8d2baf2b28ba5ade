package worker_test

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/worker"
)

func dial(t *testing.T, targets []string, opts worker.DialOptions) *grpc.ClientConn {
	t.Helper()
	conn, err := worker.Dial(targets, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestDialFailsOverWhenANodeDies: a worker connected to two nodes goes on
// through the survivor when one is stopped, and keeps the leases it holds
// (they live in the shared queue, as in Postgres): every todo is completed
// exactly once.
func TestDialFailsOverWhenANodeDies(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	n1, n2 := f.node(t), f.node(t)
	conn := dial(t, []string{n1.addr, n2.addr}, worker.DialOptions{Token: "sbt_failover", AllowInsecure: true})
	first := f.add(4)

	gate := make(chan struct{})
	var entered atomic.Int32
	rec := newAcks()
	w := worker.New(conn, "q", func(ctx context.Context, _ *queuev1.Todo) error {
		entered.Add(1)
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, worker.Options{
		Concurrency: 4, HeartbeatInterval: 20 * time.Millisecond, Wait: 200 * time.Millisecond,
		BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond, OnAck: rec.hook,
	})
	stop := start(t, w)

	// Both nodes serve the worker while it holds four leases.
	require.Eventually(t, func() bool { return entered.Load() == 4 && n1.served() > 0 && n2.served() > 0 }, waitFor, tick)
	n1.srv.Stop() // closes its listener and connections; in-flight calls fail
	beats := f.record().heartbeats[first[0]]
	require.Eventually(t, func() bool { return f.record().heartbeats[first[0]] >= beats+3 }, waitFor, tick,
		"the held leases are renewed through the surviving node")

	close(gate)
	rest := f.add(40)
	all := slices.Concat(first, rest)
	require.Eventually(t, func() bool { return rec.count() == len(all) }, waitFor, tick)
	require.NoError(t, stop())

	r := f.record()
	require.ElementsMatch(t, all, r.completed, "each todo completed once")
	for _, id := range all {
		require.Equal(t, []worker.Outcome{worker.Completed}, outcomes(rec.of(id)), "todo %d", id)
	}
	s := w.Stats()
	require.Equal(t, int64(len(all)), s.Completed)
	require.Zero(t, s.AcksAbandoned+s.LeaseLost+s.Failed)
}

// TestDialSendsTheBearerToken: every RPC carries the token as the server
// expects it (pkg/auth reads "authorization: Bearer <token>").
func TestDialSendsTheBearerToken(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	n := f.node(t)
	conn := dial(t, []string{n.addr}, worker.DialOptions{Token: "sbt_secret", AllowInsecure: true})
	f.add(3)
	w := worker.New(conn, "q", succeed, worker.Options{Wait: time.Second, HeartbeatInterval: 5 * time.Millisecond})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 3 }, waitFor, tick)
	require.NoError(t, stop())
	r := f.record()
	require.NotEmpty(t, r.auth)
	for _, a := range r.auth {
		require.Equal(t, "Bearer sbt_secret", a)
	}
}

// TestDialResolvesANameWithAScheme: a dns:/// target is one gRPC target
// (every address of the name, balanced).
func TestDialResolvesANameWithAScheme(t *testing.T) {
	t.Parallel()
	f := newFakeQueue()
	n := f.node(t)
	_, port, err := net.SplitHostPort(n.addr)
	require.NoError(t, err)
	conn := dial(t, []string{"dns:///127.0.0.1:" + port}, worker.DialOptions{HealthCheck: true})
	f.add(2)
	w := worker.New(conn, "q", succeed, worker.Options{Wait: time.Second})
	stop := start(t, w)
	require.Eventually(t, func() bool { return w.Stats().Completed == 2 }, waitFor, tick)
	require.NoError(t, stop())
	require.Equal(t, []string{"", ""}, f.record().auth[:2], "no token, no authorization")
}

func TestDialRejects(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		targets []string
		opts    worker.DialOptions
	}{
		"no target":            {nil, worker.DialOptions{}},
		"token in plaintext":   {[]string{"127.0.0.1:1"}, worker.DialOptions{Token: "sbt_x"}},
		"not host:port":        {[]string{"127.0.0.1:1", "nohost"}, worker.DialOptions{}},
		"scheme among several": {[]string{"127.0.0.1:1", "dns:///x:1"}, worker.DialOptions{}},
	} {
		_, err := worker.Dial(tc.targets, tc.opts)
		require.Error(t, err, name)
	}
	conn, err := worker.Dial([]string{"127.0.0.1:1"}, worker.DialOptions{Token: "sbt_x", TLS: &tls.Config{MinVersion: tls.VersionTLS13}})
	require.NoError(t, err, "a token over TLS")
	require.NoError(t, conn.Close())
}
