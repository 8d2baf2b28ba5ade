package verify_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// The generic scheme has no provider and so no published vector; its
// expected values are computed independently here with crypto/hmac.
const (
	hmacSecret  = "generic-hmac-secret"
	hmacPayload = `{"event":"ping"}`
)

func TestGenericHMAC(t *testing.T) {
	t.Parallel()
	key := []byte(hmacSecret)
	sha256Hex := macSHA256Hex(key, hmacPayload)
	sha512B64 := macSHA512B64(key, hmacPayload)
	hexCfg := verify.Config{Scheme: verify.SchemeHMAC, Header: "X-Signature", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}
	b64Cfg := verify.Config{Scheme: verify.SchemeHMAC, Header: "x-webhook-signature", Algorithm: "sha512", Encoding: "base64"}
	tests := []struct {
		name    string
		cfg     verify.Config
		secrets []string
		header  http.Header
		body    string
		ok      bool
	}{
		{name: "sha256 hex with prefix", cfg: hexCfg, ok: true, header: header("X-Signature", "sha256="+sha256Hex)},
		{name: "sha512 base64, header name case-insensitive", cfg: b64Cfg, ok: true, header: header("X-Webhook-Signature", sha512B64)},
		{name: "rotation: second secret matches", cfg: hexCfg, ok: true, secrets: []string{"old", hmacSecret},
			header: header("X-Signature", "sha256="+sha256Hex)},
		{name: "missing prefix", cfg: hexCfg, header: header("X-Signature", sha256Hex)},
		{name: "empty signature", cfg: hexCfg, header: header("X-Signature", "")},
		{name: "prefix only", cfg: hexCfg, header: header("X-Signature", "sha256=")},
		{name: "truncated signature", cfg: hexCfg, header: header("X-Signature", "sha256="+sha256Hex[:62])},
		{name: "flipped bit in signature", cfg: hexCfg, header: header("X-Signature", "sha256="+flipHex(t, sha256Hex))},
		{name: "flipped bit in body", cfg: hexCfg, header: header("X-Signature", "sha256="+sha256Hex), body: string(flipBody(hmacPayload))},
		{name: "sha256 digest where sha512 expected", cfg: b64Cfg, header: header("X-Webhook-Signature", macSHA256B64(key, hmacPayload))},
		{name: "flipped bit in base64 signature", cfg: b64Cfg, header: header("X-Webhook-Signature", flipB64(t, sha512B64))},
		{name: "wrong secret", cfg: b64Cfg, secrets: []string{"other"}, header: header("X-Webhook-Signature", sha512B64)},
		{name: "missing header", cfg: b64Cfg, header: header("X-Signature", sha512B64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{hmacSecret}
			}
			if tc.body == "" {
				tc.body = hmacPayload
			}
			tc.cfg.Secrets = secrets(tc.secrets...)
			v := mustNew(t, tc.cfg)
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header})
			if !tc.ok {
				requireUnverified(t, err, hmacSecret, sha256Hex, sha512B64)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeHMAC}, res)
		})
	}
}
