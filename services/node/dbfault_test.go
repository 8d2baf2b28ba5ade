//go:build integration

package node_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// TestDatabaseDownIsUnavailableNotInternal: while the database refuses
// connections, a call that needs it answers UNAVAILABLE over gRPC and 503
// with Retry-After over REST (retryable, the cause not shown), never
// INTERNAL; once the database is back the same call works.
func TestDatabaseDownIsUnavailableNotInternal(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	u, err := url.Parse(db)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	allow := func(ctx context.Context, on bool) {
		_, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` ALLOW_CONNECTIONS `+map[bool]string{true: "true", false: "false"}[on])
		require.NoError(t, err)
	}
	t.Cleanup(func() { allow(context.Background(), true) })

	b := setupDB(t, "all", db)
	q := queuev1.NewQueueServiceClient(b.conn)
	enqueue := func() error {
		_, err := q.Enqueue(t.Context(), &queuev1.EnqueueRequest{Queue: "down", Kind: "k"})
		return err
	}
	require.NoError(t, enqueue(), "warm: the credential is cached")

	allow(t.Context(), false)
	_, err = admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
	require.NoError(t, err)

	err = enqueue()
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.NotContains(t, status.Convert(err).Message(), "SQLSTATE")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+b.node.HTTPAddr()+"/api/queues/down/todos",
		strings.NewReader(`{"kind":"k"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	allow(t.Context(), true)
	require.Eventually(t, func() bool { return enqueue() == nil }, 30*time.Second, 50*time.Millisecond,
		"the node serves again once the database is back")
}
