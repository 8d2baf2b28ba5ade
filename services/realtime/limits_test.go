//go:build integration

package realtime_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/services/gateway"
	"github.com/switchboard/switchboard/services/realtime"
)

// limitsEnv is a node that reads realtime.limits every 10 ms, set to
// durable and ephemeral publishes a second per tenant once it runs (so the
// test also sees a change reach a running node).
func limitsEnv(t *testing.T, durable, ephemeral int) *env {
	t.Helper()
	e := newEnv(t, realtime.Options{LimitsInterval: 10 * time.Millisecond})
	v, err := json.Marshal(map[string]int{"tenant_durable_per_second": durable, "tenant_ephemeral_per_second": ephemeral})
	require.NoError(t, err)
	_, err = e.pool.Exec(t.Context(), `UPDATE settings SET value = $1 WHERE key = 'realtime.limits'`, v)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, eph := realtime.PublishLimits(e.srv)
		return d == durable && eph == ephemeral
	}, waitFor, time.Millisecond, "the node reads the changed setting")
	return e
}

func (e *env) tryPublish(human uuid.UUID, durable bool) error {
	_, err := e.client.Publish(as(e.t.Context(), human), &realtimev1.PublishRequest{Channel: "room", Kind: "message", Durable: durable})
	return err
}

// publishUntilRefused publishes as human as fast as it can until one is
// refused, and returns how many were accepted and the refusal. Its bucket
// holds a second's worth and refills as it goes, so that takes a little
// more than the limit.
func (e *env) publishUntilRefused(human uuid.UUID, durable bool) (int, error) {
	e.t.Helper()
	for accepted := range 10_000 {
		if err := e.tryPublish(human, durable); err != nil {
			return accepted, err
		}
	}
	e.t.Fatal("never refused")
	return 0, nil
}

// requireRateRefusal checks the answer over the limit: RESOURCE_EXHAUSTED
// naming the tier's rate and its setting, and a RetryInfo within a second
// (one token of a bucket refilled at ≥ 1 a second).
func requireRateRefusal(t *testing.T, err error, says string) time.Duration {
	t.Helper()
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	require.Contains(t, st.Message(), says)
	require.Contains(t, st.Message(), "setting realtime.limits")
	require.Contains(t, st.Message(), "retry in ")
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			wait := ri.GetRetryDelay().AsDuration()
			require.Positive(t, wait)
			require.LessOrEqual(t, wait, time.Second)
			return wait
		}
	}
	t.Fatalf("no RetryInfo in %v", st.Details())
	return 0
}

// TestDurablePublishRateIsLimitedPerTenantPerNode reproduces finding 3b: one
// tenant publishing durable events as fast as it can on one node is refused
// past realtime.limits' rate (nothing stored for the refused ones), while
// another tenant's publishes, and the same tenant's ephemeral ones, still
// succeed; once the time it was told has passed it may publish again.
func TestDurablePublishRateIsLimitedPerTenantPerNode(t *testing.T) {
	t.Parallel()
	e := limitsEnv(t, 5, 1000)
	flood, quiet := e.human, e.seedHuman()

	accepted, err := e.publishUntilRefused(flood, true)
	wait := requireRateRefusal(t, err, "more than 5 durable events a second on this node")
	require.GreaterOrEqual(t, accepted, 5, "a second's worth passes at once")

	require.NoError(t, e.tryPublish(quiet, true), "another tenant is not held back")
	require.NoError(t, e.tryPublish(flood, false), "nor the tenant's ephemeral events")

	require.Eventually(t, func() bool { return e.tryPublish(flood, true) == nil }, waitFor, max(wait/4, time.Millisecond),
		"after the delay it said, the tenant publishes again")
	accepted++

	var stored int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM realtime_events WHERE human_id = $1`, flood).Scan(&stored))
	require.Equal(t, accepted, stored, "the refused publishes stored nothing")
}

// TestEphemeralPublishRateIsLimitedPerTenantPerNode: the same for
// ephemeral events, with their own rate.
func TestEphemeralPublishRateIsLimitedPerTenantPerNode(t *testing.T) {
	t.Parallel()
	e := limitsEnv(t, 1000, 20)
	flood, quiet := e.human, e.seedHuman()

	accepted, err := e.publishUntilRefused(flood, false)
	requireRateRefusal(t, err, "more than 20 ephemeral events a second on this node")
	require.GreaterOrEqual(t, accepted, 20)
	require.NoError(t, e.tryPublish(quiet, false), "another tenant is not held back")
	require.NoError(t, e.tryPublish(flood, true), "nor the tenant's durable events")
}

// TestPublishOverTheRateOverRESTIs429WithRetryAfter: through the REST edge
// the refusal is 429 with a Retry-After in whole seconds, from the
// RetryInfo the node sent.
func TestPublishOverTheRateOverRESTIs429WithRetryAfter(t *testing.T) {
	t.Parallel()
	e := limitsEnv(t, 2, 1000)
	gw, err := gateway.New(t.Context(), e.addr, gateway.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gw.Close() })
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)

	post := func() *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/api/realtime/channels/room/messages",
			bytes.NewReader([]byte(`{"kind": "message", "durable": true}`)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer test-human:"+e.human.String()) // the test's caller (testAuthorize)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	for range 10_000 {
		resp := post()
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, resp.Body.Close())
			continue
		}
		defer resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is whole seconds")
		require.Equal(t, 1, after, "under a second, rounded up")
		var body struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Type string `json:"@type"`
			} `json:"details"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, int(codes.ResourceExhausted), body.Code)
		require.Contains(t, body.Message, "setting realtime.limits")
		require.Len(t, body.Details, 1)
		require.Equal(t, "type.googleapis.com/google.rpc.RetryInfo", body.Details[0].Type)
		return
	}
	t.Fatal("never refused")
}

// TestUnreadablePublishLimitsKeepTheLastOnes: a setting that cannot be
// read as its shape (written around the API) leaves the limits in force, so
// it neither lifts the limit nor refuses every publish; a rate below 1
// takes the default.
func TestUnreadablePublishLimitsKeepTheLastOnes(t *testing.T) {
	t.Parallel()
	e := limitsEnv(t, 3, 1000)
	_, err := e.pool.Exec(t.Context(), `UPDATE settings SET value = '"not an object"' WHERE key = 'realtime.limits'`)
	require.NoError(t, err)
	realtime.RefreshLimits(t.Context(), e.srv)
	d, eph := realtime.PublishLimits(e.srv)
	require.Equal(t, []int{3, 1000}, []int{d, eph})
	_, err = e.publishUntilRefused(e.human, true)
	requireRateRefusal(t, err, "more than 3 durable events a second")

	_, err = e.pool.Exec(t.Context(), `UPDATE settings SET value = '{"tenant_durable_per_second": 0, "tenant_ephemeral_per_second": 7}' WHERE key = 'realtime.limits'`)
	require.NoError(t, err)
	realtime.RefreshLimits(t.Context(), e.srv)
	d, eph = realtime.PublishLimits(e.srv)
	require.Equal(t, []int{1000, 7}, []int{d, eph}, "0 is no limit one can set; the default applies")
}
