package verify_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Published vectors from standard-webhooks/standard-webhooks,
// libraries/go/webhook_test.go (TestWebhookSign, TestWebhookPrefix, and the
// "invalid signature" case of TestWebhook) and
// libraries/go/webhook_asymmetric_test.go (TestAsymmetricWebhookSign).
const (
	swSecret       = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swSecretBare   = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swMsgID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTimestamp    = "1614265330"
	swPayload      = `{"test": 2432232314}`
	swSigV1        = "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	swSigBogus     = "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	swAsymSeed     = "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	swSigV1a       = "tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
	swOtherSecret  = "whsec_c2Vjb25kIHNlY3JldCBmb3Igcm90YXRpb24="
	swTolerance    = 5 * time.Minute
	swUnixSeconds  = 1614265330
	swHeaderPrefix = "webhook-"
)

var swNow = time.Unix(swUnixSeconds, 0)

// swPublicKey derives the verifying key from the library's published private
// seed; only the public half is ever configured.
func swPublicKey(t *testing.T) ed25519.PublicKey {
	t.Helper()
	seed, err := base64.StdEncoding.DecodeString(swAsymSeed)
	require.NoError(t, err)
	pub, ok := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	require.True(t, ok)
	return pub
}

func swHeaders(prefix, id, ts, sig string) http.Header {
	return header(prefix+"id", id, prefix+"timestamp", ts, prefix+"signature", sig)
}

func TestStandardWebhooksPublishedVectors(t *testing.T) {
	t.Parallel()
	pub := swPublicKey(t)
	whpk := "whpk_" + base64.StdEncoding.EncodeToString(pub)
	tests := []struct {
		name    string
		secrets [][]byte
		header  http.Header
	}{
		{"v1 whsec secret", secrets(swSecret), swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+swSigV1)},
		{"v1 secret without prefix", secrets(swSecretBare), swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+swSigV1)},
		{"v1 svix header names", secrets(swSecret), swHeaders("svix-", swMsgID, swTimestamp, "v1,"+swSigV1)},
		{"v1a whpk public key", secrets(whpk), swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1a,"+swSigV1a)},
		{
			"v1 and v1a keys side by side", secrets(whpk, swSecret),
			swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+swSigBogus+" v1a,"+swSigV1a),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := mustNew(t, verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: tc.secrets})
			res, err := v.Verify(verify.Request{Body: []byte(swPayload), Header: tc.header, Now: swNow})
			require.NoError(t, err)
			require.Equal(t, verify.Result{
				Scheme:           verify.SchemeStandardWebhooks,
				DeliveryID:       swMsgID,
				DeliveryIDSigned: true,
				Timestamp:        swNow,
			}, res)
		})
	}
}

func TestStandardWebhooksCases(t *testing.T) {
	t.Parallel()
	valid := "v1," + swSigV1
	tests := []struct {
		name    string
		secrets []string
		header  http.Header
		body    []byte
		now     time.Time
		ok      bool
	}{
		{name: "multiple signatures, only the last valid", ok: true, header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp,
			"v1,"+swSigBogus+" v2,"+swSigBogus+" v1a,"+swSigBogus+" "+valid)},
		{name: "library multi-signature list", ok: true, header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp,
			"v1,"+swSigBogus+" v2,"+swSigBogus+" "+valid+" v1,"+swSigBogus)},
		{name: "rotation: second secret matches", ok: true, secrets: []string{swOtherSecret, swSecret}},
		{name: "oldest accepted timestamp", ok: true, now: swNow.Add(swTolerance)},
		{name: "newest accepted timestamp", ok: true, now: swNow.Add(-swTolerance)},
		{name: "extra spaces between signatures", ok: true, header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "  "+valid+"  ")},

		{name: "empty signature", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "")},
		{name: "version without signature", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,")},
		{name: "signature without version", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, swSigV1)},
		{name: "truncated signature", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, valid[:len(valid)-4])},
		{name: "signature one byte short", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+
			base64.StdEncoding.EncodeToString(make([]byte, 31)))},
		{name: "flipped bit in signature", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+flipB64(t, swSigV1))},
		{name: "flipped bit in body", body: flipBody(swPayload)},
		{name: "invalid signature (library vector)", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+swSigBogus)},
		{name: "unknown version only", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v2,"+swSigV1)},
		{name: "v1 signature labelled v1a", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1a,"+swSigV1)},
		{name: "non-numeric timestamp", header: swHeaders(swHeaderPrefix, swMsgID, "abc", valid)},
		{name: "signed timestamp", header: swHeaders(swHeaderPrefix, swMsgID, "+"+swTimestamp, valid)},
		{name: "negative timestamp", header: swHeaders(swHeaderPrefix, swMsgID, "-"+swTimestamp, valid)},
		{name: "timestamp with whitespace", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp+" ", valid)},
		{name: "timestamp too old", now: swNow.Add(swTolerance + time.Second)},
		{name: "timestamp too far in the future", now: swNow.Add(-swTolerance - time.Second)},
		{name: "other message id", header: swHeaders(swHeaderPrefix, "msg_other", swTimestamp, valid)},
		{name: "missing id", header: header("webhook-timestamp", swTimestamp, "webhook-signature", valid)},
		{name: "missing timestamp", header: header("webhook-id", swMsgID, "webhook-signature", valid)},
		{name: "missing signature", header: header("webhook-id", swMsgID, "webhook-timestamp", swTimestamp)},
		{name: "no headers", header: http.Header{}},
		{name: "header families mixed", header: header("webhook-id", swMsgID, "svix-timestamp", swTimestamp, "svix-signature", valid)},
		{name: "repeated signature header", header: header("webhook-id", swMsgID, "webhook-timestamp", swTimestamp,
			"webhook-signature", "v1,"+swSigBogus, "webhook-signature", valid)},
		{name: "too many signatures", header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp,
			strings.Repeat("v1,"+swSigBogus+" ", 20)+valid)},
		{name: "wrong secret", secrets: []string{swOtherSecret}},
		{name: "whsec secret wrapping the base64 text", secrets: []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte(swSecretBare))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{swSecret}
			}
			if tc.header == nil {
				tc.header = swHeaders(swHeaderPrefix, swMsgID, swTimestamp, valid)
			}
			if tc.body == nil {
				tc.body = []byte(swPayload)
			}
			if tc.now.IsZero() {
				tc.now = swNow
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: tc.body, Header: tc.header, Now: tc.now})
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, swMsgID, res.DeliveryID)
				return
			}
			requireUnverified(t, err, swSecretBare, swSigV1)
			require.Equal(t, verify.Result{}, res)
		})
	}
}

// TestStandardWebhooksV1aNegative covers the asymmetric cases of
// libraries/go/webhook_asymmetric_test.go against the published signature.
func TestStandardWebhooksV1aNegative(t *testing.T) {
	t.Parallel()
	pub := secrets("whpk_" + base64.StdEncoding.EncodeToString(swPublicKey(t)))
	tests := []struct {
		name string
		sig  string
		body []byte
		now  time.Time
	}{
		{name: "partial signature", sig: "v1a,"},
		{name: "invalid signature (library vector)", sig: "v1a," + swSigBogus},
		{name: "truncated signature", sig: "v1a," + swSigV1a[:len(swSigV1a)-4]},
		{name: "flipped bit in signature", sig: "v1a," + flipB64(t, swSigV1a)},
		{name: "flipped bit in body", sig: "v1a," + swSigV1a, body: flipBody(swPayload)},
		{name: "v1a signature labelled v1", sig: "v1," + swSigV1a},
		{name: "timestamp too old", sig: "v1a," + swSigV1a, now: swNow.Add(swTolerance + time.Second)},
		{name: "hmac signature against public key", sig: "v1," + swSigV1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.body == nil {
				tc.body = []byte(swPayload)
			}
			if tc.now.IsZero() {
				tc.now = swNow
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: pub})
			_, err := v.Verify(verify.Request{Body: tc.body, Header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, tc.sig), Now: tc.now})
			requireUnverified(t, err)
		})
	}
}

// TestStandardWebhooksDefaultClock checks that a zero Request.Now means the
// real clock: a freshly signed request passes and the published (2021) one is
// stale.
func TestStandardWebhooksDefaultClock(t *testing.T) {
	t.Parallel()
	key, err := base64.StdEncoding.DecodeString(swSecretBare)
	require.NoError(t, err)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	v := mustNew(t, verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets(swSecret)})

	fresh := swHeaders(swHeaderPrefix, swMsgID, ts, "v1,"+macSHA256B64(key, swMsgID+"."+ts+"."+swPayload))
	_, err = v.Verify(verify.Request{Body: []byte(swPayload), Header: fresh})
	require.NoError(t, err)

	_, err = v.Verify(verify.Request{Body: []byte(swPayload), Header: swHeaders(swHeaderPrefix, swMsgID, swTimestamp, "v1,"+swSigV1)})
	requireUnverified(t, err)
}

// TestStandardWebhooksSecretHasOneKey: a configured secret verifies under
// exactly one key. An unprefixed secret is base64, as the reference
// libraries read a secret whose whsec_ was stripped: a signature made with
// its text as the key is refused, and so is every form with no single
// reading (raw ed25519 keys, text that is not base64).
func TestStandardWebhooksSecretHasOneKey(t *testing.T) {
	t.Parallel()
	ts := swTimestamp
	signedWithText := "v1," + macSHA256B64([]byte(swSecretBare), swMsgID+"."+ts+"."+swPayload)
	for _, secret := range []string{swSecret, swSecretBare} {
		v := mustNew(t, verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: secrets(secret)})
		_, err := v.Verify(verify.Request{Body: []byte(swPayload), Header: swHeaders(swHeaderPrefix, swMsgID, ts, "v1,"+swSigV1), Now: swNow})
		require.NoError(t, err, "%s: the published signature (the decoded key)", secret)
		_, err = v.Verify(verify.Request{Body: []byte(swPayload), Header: swHeaders(swHeaderPrefix, swMsgID, ts, signedWithText), Now: swNow})
		requireUnverified(t, err)
	}

	pub := swPublicKey(t)
	for name, secret := range map[string][]byte{
		"raw ed25519 public key":         pub,
		"unprefixed text, not base64":    []byte("my-own-secret-not-base64!"),
		"the sender's whsk_ signing key": []byte("whsk_" + swAsymSeed),
	} {
		v, err := verify.New(verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: [][]byte{secret}})
		require.Error(t, err, name)
		require.Nil(t, v, name)
	}
}
