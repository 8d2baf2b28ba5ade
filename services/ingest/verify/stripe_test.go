package verify_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// Stripe publishes no fixed (secret, payload, signature) triple: its docs'
// example header comes without the secret, and stripe-go's
// webhook/client_test.go signs at test time. These vectors are therefore
// computed independently here with crypto/hmac, following Stripe's
// "Verify webhook signatures manually" steps (signed_payload = t + "." + body),
// with the secret and payload shape taken from stripe-go's webhook tests.
const (
	stripeSecret  = "whsec_test_secret"
	stripeRolled  = "whsec_test_secret_rolled_key"
	stripePayload = `{
  "id": "evt_test_webhook",
  "object": "event"
}`
	stripeUnix = 1492774577
)

var stripeNow = time.Unix(stripeUnix, 0)

func stripeSig(secret, ts, body string) string {
	return macSHA256Hex([]byte(secret), ts+"."+body)
}

func TestStripe(t *testing.T) {
	t.Parallel()
	ts := strconv.Itoa(stripeUnix)
	sig := stripeSig(stripeSecret, ts, stripePayload)
	rolled := stripeSig(stripeRolled, ts, stripePayload)
	v0 := macSHA256Hex([]byte("test-mode"), ts+"."+stripePayload)
	valid := "t=" + ts + ",v1=" + sig
	tests := []struct {
		name    string
		secrets []string
		sig     string
		body    string
		now     time.Time
		ok      bool
	}{
		{name: "signature", ok: true},
		{name: "v1 and v0 (Stripe's documented header shape)", ok: true, sig: valid + ",v0=" + v0},
		{name: "multiple v1, only the last valid", ok: true, sig: "t=" + ts + ",v1=" + rolled + ",v1=" + sig},
		{name: "rolled endpoint secret: old secret configured", ok: true, sig: valid + ",v1=" + rolled},
		{name: "rolled endpoint secret: new secret configured", ok: true, sig: valid + ",v1=" + rolled, secrets: []string{stripeRolled}},
		{name: "rotation: second secret matches", ok: true, secrets: []string{stripeRolled, stripeSecret}},
		{name: "unreadable v1 is ignored", ok: true, sig: valid + ",v1=bad_signature"},
		{name: "unknown keys are ignored", ok: true, sig: "scheme=x," + valid},
		{name: "oldest accepted timestamp", ok: true, now: stripeNow.Add(5 * time.Minute)},

		{name: "timestamp only", sig: "t=" + ts},
		{name: "empty timestamp", sig: "t=,v1=" + sig},
		{name: "item without =", sig: "v1,t=1"},
		{name: "repeated timestamp", sig: "t=" + ts + ",t=" + ts + ",v1=" + sig},
		{name: "v0 only", sig: "t=" + ts + ",v0=" + v0},
		{name: "v0 carrying the v1 value", sig: "t=" + ts + ",v0=" + sig},
		{name: "truncated signature", sig: valid[:len(valid)-2]},
		{name: "flipped bit in signature", sig: "t=" + ts + ",v1=" + flipHex(t, sig)},
		{name: "flipped bit in body", body: string(flipBody(stripePayload))},
		{name: "non-numeric timestamp", sig: "t=abc,v1=" + sig},
		{name: "other timestamp", sig: "t=" + strconv.Itoa(stripeUnix+1) + ",v1=" + sig},
		{name: "timestamp too old", now: stripeNow.Add(5*time.Minute + time.Second)},
		{name: "timestamp too far in the future", now: stripeNow.Add(-5*time.Minute - time.Second)},
		{name: "wrong secret", secrets: []string{stripeRolled}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.secrets == nil {
				tc.secrets = []string{stripeSecret}
			}
			if tc.sig == "" {
				tc.sig = valid
			}
			if tc.body == "" {
				tc.body = stripePayload
			}
			if tc.now.IsZero() {
				tc.now = stripeNow
			}
			v := mustNew(t, verify.Config{Scheme: verify.SchemeStripe, Secrets: secrets(tc.secrets...)})
			res, err := v.Verify(verify.Request{Body: []byte(tc.body), Header: header("Stripe-Signature", tc.sig), Now: tc.now})
			if !tc.ok {
				requireUnverified(t, err, stripeSecret, sig)
				return
			}
			require.NoError(t, err)
			require.Equal(t, verify.Result{Scheme: verify.SchemeStripe, Timestamp: stripeNow}, res)
		})
	}
}

func TestStripeMissingHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header http.Header
	}{
		{"no header", http.Header{}},
		{"empty header", header("Stripe-Signature", "")},
		{"repeated header", header("Stripe-Signature", "t=1", "Stripe-Signature", "v1=00")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := mustNew(t, verify.Config{Scheme: verify.SchemeStripe, Secrets: secrets(stripeSecret)})
			_, err := v.Verify(verify.Request{Body: []byte(stripePayload), Header: tc.header, Now: stripeNow})
			requireUnverified(t, err)
		})
	}
}
