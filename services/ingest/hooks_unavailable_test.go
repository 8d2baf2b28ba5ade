//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/secretbox"
)

// TestHookDatabaseDownIs503ThenTheRetryStoresOnce: while the database
// refuses connections the edge answers 503 with Retry-After (so the sender
// retries) and stores nothing; the sender's retry after it is back is stored
// exactly once.
func TestHookDatabaseDownIs503ThenTheRetryStoresOnce(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	dbName := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	allow := func(ctx context.Context, on bool) error {
		_, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{dbName}.Sanitize()+` ALLOW_CONNECTIONS `+map[bool]string{true: "true", false: "false"}[on])
		return err
	}
	// Registered after NewDatabase, so it runs before the database is dropped.
	t.Cleanup(func() { _ = allow(context.Background(), true) })

	keys, err := secretbox.ParseKeyring("t1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	require.NoError(t, err)
	e := newEnvOn(t, pgtest.OpenPool(t, dbURL, nil), keys)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"n":"down"}`)
	warm := []byte(`{"n":"warm"}`)
	code, resp := e.post(t, slug, warm, standardHeaders(t, "msg_warm", time.Now(), warm))
	require.Equal(t, http.StatusOK, code, resp)

	require.NoError(t, allow(t.Context(), false))
	_, err = admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, dbName)
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/hooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range standardHeaders(t, "msg_down", time.Now(), body) {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Retry-After"))

	require.NoError(t, allow(t.Context(), true))
	code, resp = e.post(t, slug, body, standardHeaders(t, "msg_down", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	code, resp = e.post(t, slug, body, standardHeaders(t, "msg_down", time.Now(), body))
	require.Equal(t, http.StatusOK, code, "a duplicate delivery is answered 2xx: %s", resp)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = 'msg_down'`))
	require.Equal(t, 2, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`), "one todo per stored delivery")
}
