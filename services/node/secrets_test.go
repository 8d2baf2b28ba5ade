//go:build integration

package node_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// rest sends a JSON request to the node's REST edge as the bootstrap
// administrator and returns the status and raw answer.
func (b *testBundle) rest(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+b.node.HTTPAddr()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

// hook posts a delivery to /hooks/{slug} with headers h and returns the status.
func (b *testBundle) hook(t *testing.T, slug string, body []byte, h map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+b.node.HTTPAddr()+"/hooks/"+slug, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

func hmacSHA256(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// Over the real edge: a secret in the query string is refused with nothing
// created; the body carries it byte for byte ("+" and "/" of base64
// included), deliveries signed with it are stored, and no answer echoes it.
// PATCH (with a scheme change) and AddEndpointSecret take it in the body too.
func TestSecretsTravelInTheBody(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	pool, err := pgxpool.New(t.Context(), b.db)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	count := func(table string) int {
		var n int
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
		return n
	}
	refused := `{"code":3,"message":` + strconv.Quote(`"secret" belongs in the JSON request body, not the URL (query strings are logged)`) + `,"details":[]}`

	// 24 bytes whose base64 is "++++////" repeated: a query string would
	// turn every "+" into a space.
	key := bytes.Repeat([]byte{0xfb, 0xef, 0xbe, 0xff, 0xff, 0xff}, 4)
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	require.Contains(t, whsec, "+")
	require.Contains(t, whsec, "/")

	code, raw := b.rest(t, http.MethodPost, "/api/admin/endpoints?secret="+whsec,
		`{"queue":"hooks","verification":"VERIFICATION_SCHEME_STANDARD_WEBHOOKS"}`)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.JSONEq(t, refused, raw, "the gateway's error shape, INVALID_ARGUMENT")
	require.Zero(t, count("endpoints"), "nothing created")

	code, raw = b.rest(t, http.MethodPost, "/api/admin/endpoints",
		`{"queue":"hooks","verification":"VERIFICATION_SCHEME_STANDARD_WEBHOOKS","secret":"`+whsec+`"}`)
	require.Equal(t, http.StatusOK, code, raw)
	var created struct {
		Endpoint struct {
			ID     string `json:"id"`
			Slug   string `json:"slug"`
			Secret string `json:"secret"`
		} `json:"endpoint"`
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &created))
	require.Equal(t, whsec, created.Secret, "the secret stored is the one sent")
	require.Empty(t, created.Endpoint.Secret, "endpoint.secret is input only")
	ep := "/api/admin/endpoints/" + created.Endpoint.ID

	// A Standard Webhooks delivery signed with the key verifies and is stored.
	body := []byte(`{"type":"invoice.paid"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	code, raw = b.hook(t, created.Endpoint.Slug, body, map[string]string{
		"webhook-id": "msg_body_secret", "webhook-timestamp": ts,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(key, "msg_body_secret.", ts, ".", string(body))),
	})
	require.Equal(t, http.StatusOK, code, raw)
	require.Equal(t, 1, count("events"))

	// PATCH: a scheme change with the body's secret (a Stripe signing
	// secret, used as raw bytes); a query secret is refused first.
	const stripe = "whsec_stripe+signing/secret+0001"
	code, raw = b.rest(t, http.MethodPatch, ep+"?endpoint.secret="+stripe, `{"verification":"VERIFICATION_SCHEME_STRIPE"}`)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.JSONEq(t, refused, raw)
	code, raw = b.rest(t, http.MethodPatch, ep, `{"verification":"VERIFICATION_SCHEME_STRIPE","secret":"`+stripe+`"}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.NotContains(t, raw, "secret+0001")
	deliver := func(secret, id string) (int, string) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		payload := fmt.Sprintf(`{"id":%q,"type":"charge.succeeded"}`, id)
		sig := hex.EncodeToString(hmacSHA256([]byte(secret), ts, ".", payload))
		return b.hook(t, created.Endpoint.Slug, []byte(payload), map[string]string{"Stripe-Signature": "t=" + ts + ",v1=" + sig})
	}
	code, raw = deliver(stripe, "evt_1")
	require.Equal(t, http.StatusOK, code, raw)
	code, _ = deliver(whsec, "evt_2")
	require.Equal(t, http.StatusUnauthorized, code, "the old secret was replaced")

	// AddEndpointSecret: the body, never the query.
	const rotated = "whsec_stripe+rotated/secret+0002"
	code, raw = b.rest(t, http.MethodPost, ep+"/secrets?Secret="+rotated, `{}`)
	require.Equal(t, http.StatusBadRequest, code, raw)
	require.JSONEq(t, refused, raw)
	code, raw = b.rest(t, http.MethodPost, ep+"/secrets", `{"secret":"`+rotated+`"}`)
	require.Equal(t, http.StatusOK, code, raw)
	code, raw = deliver(rotated, "evt_3")
	require.Equal(t, http.StatusOK, code, raw)
	require.Equal(t, 3, count("events"))

	// No read returns any of them.
	for _, path := range []string{ep, "/api/admin/endpoints"} {
		code, raw = b.rest(t, http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, code, raw)
		for _, s := range []string{whsec, stripe, rotated, "secret+0001", "secret+0002"} {
			require.NotContains(t, raw, s, path)
		}
		require.Contains(t, raw, `"secret":""`, "the input-only field is empty on read")
	}
}
