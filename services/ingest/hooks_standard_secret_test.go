//go:build integration

package ingest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHookStandardSecretOneReading: an unprefixed Standard Webhooks secret
// is base64 only. Stored before that rule, one that is not base64 builds no
// verifier: every request is refused 401 (the node logs why) and nothing is
// stored; an unprefixed base64 secret verifies under its decoded key.
func TestHookStandardSecretOneReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(`{"type":"invoice.paid"}`)

	legacy := e.endpoint(t, "standard_webhooks", []byte("my-old-secret-as-text"), "")
	code, resp := e.post(t, legacy, body, signStandard(t, "whsec_bXktb2xkLXNlY3JldC1hcy10ZXh0", "msg_1", time.Now(), body))
	require.Equal(t, http.StatusUnauthorized, code, "signed with the text as the key: %s", resp)

	bare := e.endpoint(t, "standard_webhooks", []byte(whsec[len("whsec_"):]), "")
	code, resp = e.post(t, bare, body, standardHeaders(t, "msg_2", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`))
}
