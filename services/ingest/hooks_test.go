//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/pkg/secretbox"
	"github.com/switchboard/switchboard/services/ingest"
	"github.com/switchboard/switchboard/services/ingest/sources"
	"github.com/switchboard/switchboard/services/queue"
)

// env is a database with one tenant, the webhook edge over it and a queue
// service to claim what the edge stores.
type env struct {
	pool  *pgxpool.Pool
	keys  *secretbox.Keyring
	human uuid.UUID
	url   string
	queue *queue.Server
	hook  http.Handler // the edge itself, for requests no HTTP client would send
}

func newEnv(t testing.TB) *env {
	t.Helper()
	keys, err := secretbox.ParseKeyring("t1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	require.NoError(t, err)
	return newEnvOn(t, pgtest.NewPool(t), keys)
}

// newEnvOn is newEnv over a pool the test opened itself.
func newEnvOn(t testing.TB, pool *pgxpool.Pool, keys *secretbox.Keyring) *env {
	t.Helper()
	e := &env{pool: pool, keys: keys}
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&e.human))
	e.queue = queue.New(zap.NewNop(), e.pool)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: keys, Todos: e.queue.Todos()})
	e.hook = srv.HookHandler()
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, e.hook)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// endpoint creates an endpoint of scheme with one sealed secret (or a
// hashed one for bearer) and returns its slug.
func (e *env) endpoint(t testing.TB, scheme string, secret []byte, extra string) string {
	t.Helper()
	slug := strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`INSERT INTO endpoints (human_id, slug, queue, verification, max_body_bytes) VALUES ($1, $2, 'hooks', $3, 1024) RETURNING id`,
		e.human, slug, scheme).Scan(&id))
	if extra != "" {
		_, err := e.pool.Exec(t.Context(), `UPDATE endpoints SET `+extra+` WHERE id = $1`, id)
		require.NoError(t, err)
	}
	if secret != nil {
		sid := uuid.New()
		keyID, sealed, err := e.keys.Seal(secret, sources.SecretAAD(sid))
		require.NoError(t, err)
		_, err = e.pool.Exec(t.Context(),
			`INSERT INTO endpoint_secrets (id, endpoint_id, kind, key_id, sealed) VALUES ($1, $2, 'sealed', $3, $4)`, sid, id, keyID, sealed)
		require.NoError(t, err)
	}
	return slug
}

func (e *env) post(t testing.TB, slug string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/hooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (e *env) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	require.NoError(t, e.pool.QueryRow(t.Context(), q, e.human).Scan(&n))
	return n
}

const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// standardHeaders signs body the Standard Webhooks way (v1, HMAC-SHA256 of
// id.timestamp.body with the decoded secret).
func standardHeaders(t *testing.T, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	return signStandard(t, whsec, id, ts, body)
}

func signStandard(t *testing.T, secret, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	stamp := strconv.FormatInt(ts.Unix(), 10)
	_, _ = fmt.Fprintf(mac, "%s.%s.%s", id, stamp, body)
	return http.Header{
		"Webhook-Id": {id}, "Webhook-Timestamp": {stamp}, "Content-Type": {"application/json"},
		"Webhook-Signature": {"v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))},
	}
}

// TestHookStoresEventAndTodoThenAWorkerClaimsIt: a real POST with a real
// signature → one event row and one todo row, answered after the commit;
// the same delivery again writes nothing; a worker claims the todo.
func TestHookStoresEventAndTodoThenAWorkerClaimsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"type":"invoice.paid","id":42}`)
	h := standardHeaders(t, "msg_1", time.Now(), body)

	code, resp := e.post(t, slug, body, h)
	require.Equal(t, http.StatusOK, code, resp)
	require.Contains(t, resp, `"accepted"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = 'msg_1' AND verified_scheme = 'standard_webhooks'`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1 AND queue = 'hooks' AND event_id IS NOT NULL`))

	code, resp = e.post(t, slug, body, h)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, resp, `"duplicate"`)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))

	ctx := auth.NewContext(context.Background(), auth.Principal{CredentialID: uuid.New(), HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAgent}})
	res, err := e.queue.Claim(ctx, &queuev1.ClaimRequest{Queue: "hooks", WorkerId: "w", MaxTodos: 10})
	require.NoError(t, err)
	require.Len(t, res.GetTodos(), 1)
	td := res.GetTodos()[0]
	require.Equal(t, "invoice.paid", td.GetKind(), "the todo's kind is the event's topic")
	require.NotZero(t, td.GetEventId())
	require.Equal(t, td.GetEventId(), int64(td.GetPayload().GetFields()["event_id"].GetNumberValue()))
	var stored []byte
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT payload FROM events WHERE id = $1`, td.GetEventId()).Scan(&stored))
	require.Equal(t, body, stored, "the raw bytes, exactly")
}

func TestHookRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	disabled := e.endpoint(t, "standard_webhooks", []byte(whsec), "enabled = false")
	body := []byte(`{"n":1}`)
	good := standardHeaders(t, "msg_r", time.Now(), body)

	bad := standardHeaders(t, "msg_r", time.Now(), body)
	bad.Set("Webhook-Signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
	skewed := standardHeaders(t, "msg_r", time.Now().Add(-time.Hour), body)

	for name, c := range map[string]struct {
		slug   string
		body   []byte
		header http.Header
		want   int
	}{
		"bad signature":  {slug, body, bad, http.StatusUnauthorized},
		"old timestamp":  {slug, body, skewed, http.StatusUnauthorized},
		"no signature":   {slug, body, http.Header{}, http.StatusUnauthorized},
		"unknown slug":   {"nosuchendpoint000000000", body, good, http.StatusNotFound},
		"malformed slug": {"x", body, good, http.StatusNotFound},
		"disabled":       {disabled, body, good, http.StatusNotFound},
		"body over cap":  {slug, bytes.Repeat([]byte("a"), 2048), good, http.StatusRequestEntityTooLarge},
	} {
		code, resp := e.post(t, c.slug, c.body, c.header)
		require.Equal(t, c.want, code, "%s: %s", name, resp)
		require.NotContains(t, resp, whsec, name)
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`), "nothing stored for a refusal")
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
}

// TestHookUnsignedIDReplayIsADuplicate: GitHub's delivery id is not signed,
// so the same body under a fresh id is a replay, caught by its hash (the
// endpoint's body dedup, on by default for github).
func TestHookUnsignedIDReplayIsADuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	secret := []byte("It's a Secret to Everybody")
	slug := e.endpoint(t, "github", secret, "body_dedup_window_seconds = 3600")
	body := []byte("Hello, World!")
	mac := hmac.New(sha256.New, secret)
	_, _ = mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for i, id := range []string{"d-1", "d-2"} {
		code, resp := e.post(t, slug, body, http.Header{"X-Hub-Signature-256": {sig}, "X-Github-Delivery": {id}})
		require.Equal(t, http.StatusOK, code, resp)
		if i == 1 {
			require.Contains(t, resp, `"duplicate"`)
		}
	}
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
}

// TestHookConcurrentDuplicates: many copies of one delivery at once make
// exactly one event and one todo.
func TestHookConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"burst":true}`)
	h := standardHeaders(t, "msg_burst", time.Now(), body)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/hooks/"+slug, bytes.NewReader(body))
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
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))
}

// TestHookRateLimit: past the endpoint's rate, 429 with Retry-After, and
// nothing stored for the refused request.
func TestHookRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "rate_limit_per_second = 1")
	first := []byte(`{"n":1}`)
	code, _ := e.post(t, slug, first, standardHeaders(t, "msg_a", time.Now(), first))
	require.Equal(t, http.StatusOK, code)

	second := []byte(`{"n":2}`)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/hooks/"+slug, bytes.NewReader(second))
	require.NoError(t, err)
	req.Header = standardHeaders(t, "msg_b", time.Now(), second)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
}
