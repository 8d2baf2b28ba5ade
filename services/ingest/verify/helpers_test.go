package verify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// mac computes an HMAC independently of the package under test, so
// constructed vectors do not share code with what they check.
func mac(newHash func() hash.Hash, key []byte, parts ...string) []byte {
	m := hmac.New(newHash, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func macSHA256Hex(key []byte, parts ...string) string {
	return hex.EncodeToString(mac(sha256.New, key, parts...))
}

func macSHA256B64(key []byte, parts ...string) string {
	return base64.StdEncoding.EncodeToString(mac(sha256.New, key, parts...))
}

func macSHA512B64(key []byte, parts ...string) string {
	return base64.StdEncoding.EncodeToString(mac(sha512.New, key, parts...))
}

// header builds an http.Header from name/value pairs; a pair with the same
// name twice yields a repeated header.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// flipHex flips the lowest bit of the first byte of a hex-encoded value,
// keeping it well-formed so only the MAC comparison can reject it.
func flipHex(t *testing.T, s string) string {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	b[0] ^= 1
	return hex.EncodeToString(b)
}

// flipB64 is flipHex for standard base64.
func flipB64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	b[0] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}

// flipBody flips one bit of the body's last byte.
func flipBody(body string) []byte {
	b := []byte(body)
	b[len(b)-1] ^= 1
	return b
}

func mustNew(t *testing.T, cfg verify.Config) verify.Verifier {
	t.Helper()
	v, err := verify.New(cfg)
	require.NoError(t, err)
	return v
}

func secrets(s ...string) [][]byte {
	out := make([][]byte, 0, len(s))
	for _, x := range s {
		out = append(out, []byte(x))
	}
	return out
}

func sha256Sum(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// requireUnverified asserts a failure that the HTTP layer will map to 401 and
// whose log text leaks none of the given sensitive strings.
func requireUnverified(t *testing.T, err error, sensitive ...string) {
	t.Helper()
	require.ErrorIs(t, err, verify.ErrUnverified)
	for _, s := range sensitive {
		if s != "" {
			require.NotContains(t, err.Error(), s)
		}
	}
}
