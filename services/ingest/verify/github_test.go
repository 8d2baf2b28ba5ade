package verify_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Published vector: GitHub Docs, "Validating webhook deliveries" (section
// "Testing the webhook payload validation").
const (
	ghSecret    = "It's a Secret to Everybody"
	ghPayload   = "Hello, World!"
	ghSignature = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	ghDelivery  = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
)

func TestGitHub(t *testing.T) {
	t.Parallel()
	valid := "sha256=" + ghSignature
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    string
		ok      bool
	}{
		{name: "published vector", ok: true},
		{name: "rotation: second secret matches", ok: true, secrets: []string{"old secret", ghSecret}},
		{name: "empty signature", header: header("X-Hub-Signature-256", "")},
		{name: "empty hex", header: header("X-Hub-Signature-256", "sha256=")},
		{name: "missing prefix", header: header("X-Hub-Signature-256", ghSignature)},
		{name: "sha1 prefix", header: header("X-Hub-Signature-256", "sha1="+ghSignature)},
		{name: "legacy sha1 header only", header: header("X-Hub-Signature", "sha1="+ghSignature)},
		{name: "truncated signature", header: header("X-Hub-Signature-256", valid[:len(valid)-2])},
		{name: "odd-length signature", header: header("X-Hub-Signature-256", valid[:len(valid)-1])},
		{name: "non-hex signature", header: header("X-Hub-Signature-256", "sha256="+ghSignature[:62]+"zz")},
		{name: "flipped bit in signature", header: header("X-Hub-Signature-256", "sha256="+flipHex(t, ghSignature))},
		{name: "flipped bit in body", body: string(flipBody(ghPayload))},
		{name: "wrong secret", secrets: []string{"It's a Secret to Nobody"}},
		{name: "missing header", header: header("X-GitHub-Delivery", ghDelivery)},
		{name: "repeated header", header: header("X-Hub-Signature-256", "sha256=00", "X-Hub-Signature-256", valid)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{ghSecret}
			}
			if tc.header == nil {
				tc.header = header("X-Hub-Signature-256", valid, "X-GitHub-Delivery", ghDelivery)
			}
			if tc.body == "" {
				tc.body = ghPayload
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeGitHub, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: tc.header})
			if !tc.ok {
				requireUnverified(t, err, ghSecret, ghSignature)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeGitHub, DeliveryID: ghDelivery}, res)
		})
	}
}
