package verify_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

func TestNone(t *testing.T) {
	t.Parallel()
	v := mustNew(t, verify.Config{Scheme: verify.SchemeNone})
	res, err := v.Verify(verify.Request{Header: http.Header{}})
	require.NoError(t, err)
	require.Equal(t, verify.Result{Scheme: verify.SchemeNone}, res)
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	identity := make([]byte, 32)
	identity[0] = 1
	hmacCfg := func(alg, enc, hdr string) verify.Config {
		return verify.Config{Scheme: verify.SchemeHMAC, Secrets: secrets("s"), Header: hdr, Algorithm: alg, Encoding: enc}
	}
	tests := []struct {
		name string
		cfg  verify.Config
	}{
		{"unknown scheme", verify.Config{Scheme: "svix", Secrets: secrets("s")}},
		{"empty scheme", verify.Config{Secrets: secrets("s")}},
		{"negative tolerance", verify.Config{Scheme: verify.SchemeGitHub, Secrets: secrets("s"), Tolerance: -1}},
		{"standard webhooks without secrets", verify.Config{Scheme: verify.SchemeStandardWebhooks}},
		{"standard webhooks empty secret", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: [][]byte{{}}}},
		{"standard webhooks empty whsec", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("whsec_")}},
		{"standard webhooks whsec not base64", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("whsec_not*base64")}},
		{"standard webhooks whpk wrong length", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31)))}},
		{"standard webhooks whpk identity point", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("whpk_" + base64.StdEncoding.EncodeToString(identity))}},
		{"standard webhooks whpk order-4 point", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 32)))}},
		{"github without secrets", verify.Config{Scheme: verify.SchemeGitHub}},
		{"github empty secret", verify.Config{Scheme: verify.SchemeGitHub, Secrets: [][]byte{[]byte("s"), {}}}},
		{"github with secret hashes", verify.Config{Scheme: verify.SchemeGitHub, Secrets: secrets("s"), SecretHashes: [][]byte{sha256Sum("s")}}},
		{"stripe without secrets", verify.Config{Scheme: verify.SchemeStripe}},
		{"stripe empty secret", verify.Config{Scheme: verify.SchemeStripe, Secrets: [][]byte{nil}}},
		{"slack without secrets", verify.Config{Scheme: verify.SchemeSlack}},
		{"twilio without secrets", verify.Config{Scheme: verify.SchemeTwilio}},
		{"twilio empty secret", verify.Config{Scheme: verify.SchemeTwilio, Secrets: [][]byte{{}}}},
		{"standard webhooks unprefixed not base64", verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets("not-base64-text!")}},
		{"shopify empty secret", verify.Config{Scheme: verify.SchemeShopify, Secrets: [][]byte{{}}}},
		{"hmac without secrets", verify.Config{Scheme: verify.SchemeHMAC, Header: "X-Sig", Algorithm: "sha256", Encoding: "hex"}},
		{"hmac bad algorithm", hmacCfg("sha1", "hex", "X-Sig")},
		{"hmac empty algorithm", hmacCfg("", "hex", "X-Sig")},
		{"hmac bad encoding", hmacCfg("sha256", "base32", "X-Sig")},
		{"hmac empty encoding", hmacCfg("sha256", "", "X-Sig")},
		{"hmac without header", hmacCfg("sha256", "hex", "")},
		{"bearer without hashes", verify.Config{Scheme: verify.SchemeBearer}},
		{"bearer with clear-text secret", verify.Config{Scheme: verify.SchemeBearer, Secrets: secrets("token"), SecretHashes: [][]byte{sha256Sum("token")}}},
		{"bearer hash of wrong length", verify.Config{Scheme: verify.SchemeBearer, SecretHashes: [][]byte{[]byte("token")}}},
		{"basic empty hash", verify.Config{Scheme: verify.SchemeBasic, SecretHashes: [][]byte{{}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := verify.New(tc.cfg)
			require.Error(t, err)
			require.Nil(t, v)
		})
	}
}

// TestNewCopiesSecrets guards against a caller reusing its secret buffer: a
// live verifier must keep accepting exactly what it was configured with.
func TestNewCopiesSecrets(t *testing.T) {
	t.Parallel()
	secret := []byte(ghSecret)
	v := mustNew(t, verify.Config{Scheme: verify.SchemeGitHub, Secrets: [][]byte{secret}})
	for i := range secret {
		secret[i] = 'x'
	}
	_, err := v.Verify(verify.Request{Body: []byte(ghPayload), Header: header("X-Hub-Signature-256", "sha256="+ghSignature)})
	require.NoError(t, err)
}
