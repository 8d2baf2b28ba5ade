package verify_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/verify"
)

// A stale timestamp is told apart from a bad signature (ErrTimestamp), and
// every failure carries a short reason for the endpoint's delivery log.
func TestFailureReasonsAndStaleTimestamps(t *testing.T) {
	t.Parallel()
	v, err := verify.New(verify.Config{Scheme: verify.SchemeStandardWebhooks, Secrets: [][]byte{[]byte(swSecret)}})
	require.NoError(t, err)
	req := func(sig string, now time.Time) verify.Request {
		return verify.Request{Body: []byte(swPayload), Now: now, Header: http.Header{
			"Webhook-Id": {swMsgID}, "Webhook-Timestamp": {swTimestamp}, "Webhook-Signature": {"v1," + sig},
		}}
	}

	_, err = v.Verify(req(swSigV1, swNow.Add(time.Hour)))
	require.ErrorIs(t, err, verify.ErrTimestamp)
	require.ErrorIs(t, err, verify.ErrUnverified)
	require.Equal(t, "timestamp too old", verify.Reason(err))

	_, err = v.Verify(req(swSigBogus, swNow))
	require.ErrorIs(t, err, verify.ErrUnverified)
	require.NotErrorIs(t, err, verify.ErrTimestamp, "a bad signature is not a stale timestamp")
	require.Contains(t, verify.Reason(err), "signature")

	require.Empty(t, verify.Reason(errors.New("other")))
}
