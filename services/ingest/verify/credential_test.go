package verify_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Published examples: RFC 6750 §2.1 (bearer token "mF_9.B5f-4.1JqM") and
// RFC 7617 §2 (user "Aladdin", password "open sesame", encoded
// "QWxhZGRpbjpvcGVuIHNlc2FtZQ==").
const (
	bearerToken = "mF_9.B5f-4.1JqM"
	basicPair   = "Aladdin:open sesame"
	basicB64    = "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
)

func TestCredentials(t *testing.T) {
	t.Parallel()
	bearer := verify.Config{Scheme: verify.SchemeBearer, SecretHashes: [][]byte{sha256Sum(bearerToken)}}
	rotated := verify.Config{Scheme: verify.SchemeBearer, SecretHashes: [][]byte{sha256Sum("old-token"), sha256Sum(bearerToken)}}
	basic := verify.Config{Scheme: verify.SchemeBasic, SecretHashes: [][]byte{sha256Sum(basicPair)}}
	tests := []struct {
		name   string
		cfg    verify.Config
		header http.Header
		ok     bool
	}{
		{name: "bearer", cfg: bearer, ok: true, header: header("Authorization", "Bearer "+bearerToken)},
		{name: "bearer scheme is case-insensitive", cfg: bearer, ok: true, header: header("Authorization", "bearer "+bearerToken)},
		{name: "bearer rotation: second hash matches", cfg: rotated, ok: true, header: header("Authorization", "Bearer "+bearerToken)},
		{name: "basic", cfg: basic, ok: true, header: header("Authorization", "Basic "+basicB64)},

		{name: "bearer wrong token", cfg: bearer, header: header("Authorization", "Bearer mF_9.B5f-4.1JqN")},
		{name: "bearer truncated token", cfg: bearer, header: header("Authorization", "Bearer "+bearerToken[:5])},
		{name: "bearer empty token", cfg: bearer, header: header("Authorization", "Bearer ")},
		{name: "bearer without scheme", cfg: bearer, header: header("Authorization", bearerToken)},
		{name: "bearer extra whitespace", cfg: bearer, header: header("Authorization", "Bearer  "+bearerToken)},
		{name: "bearer token sent as basic", cfg: bearer, header: header("Authorization", "Basic "+bearerToken)},
		{name: "bearer missing header", cfg: bearer, header: http.Header{}},
		{name: "bearer repeated header", cfg: bearer, header: header("Authorization", "Bearer x", "Authorization", "Bearer "+bearerToken)},
		{name: "basic wrong password", cfg: basic, header: header("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("Aladdin:open sesamE")))},
		{name: "basic without colon", cfg: basic, header: header("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("Aladdin")))},
		{name: "basic not base64", cfg: basic, header: header("Authorization", "Basic "+basicPair)},
		{name: "basic truncated", cfg: basic, header: header("Authorization", "Basic "+basicB64[:len(basicB64)-4])},
		{name: "basic sent as bearer", cfg: basic, header: header("Authorization", "Bearer "+basicB64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := mustNew(t, tc.cfg)
			res, err := v.Verify(verify.Request{Header: tc.header})
			if !tc.ok {
				requireUnverified(t, err, bearerToken, basicB64, "open sesame")
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: tc.cfg.Scheme}, res)
		})
	}
}
