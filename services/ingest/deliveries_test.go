//go:build integration

package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest"
)

// logEnv is env with the ingest server itself at hand, for its delivery log.
type logEnv struct {
	*env
	srv *ingest.Server
}

func newLogEnv(t *testing.T) *logEnv {
	t.Helper()
	e := newEnv(t)
	srv := ingest.New(zap.NewNop(), e.pool, ingest.Options{SealingKeys: e.keys, Todos: e.queue.Todos()})
	mux := http.NewServeMux()
	mux.Handle(ingest.HookPattern, srv.HookHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return &logEnv{env: e, srv: srv}
}

func (e *logEnv) endpointID(t *testing.T, slug string) string {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id FROM endpoints WHERE slug = $1`, slug).Scan(&id))
	return id.String()
}

// deliveries flushes the log and lists the endpoint's entries as human.
func (e *logEnv) deliveries(t *testing.T, human uuid.UUID, endpoint string) ([]*ingestv1.Delivery, error) {
	t.Helper()
	require.NoError(t, e.srv.FlushDeliveries())
	ctx := auth.NewContext(context.Background(), auth.Principal{CredentialID: uuid.New(), HumanID: human, Scopes: []auth.Scope{auth.ScopeAdmin}})
	res, err := e.srv.ListDeliveries(ctx, &ingestv1.ListDeliveriesRequest{EndpointId: endpoint, PageSize: 100})
	return res.GetDeliveries(), err
}

// TestDeliveryLogOutcomes: accepted (with its event), duplicate, bad
// signature, stale timestamp, too large and disabled are each recorded,
// newest first; an unknown path records nothing; another tenant gets
// NOT_FOUND.
func TestDeliveryLogOutcomes(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	id := e.endpointID(t, slug)
	body := []byte(`{"type":"invoice.paid"}`)
	good := standardHeaders(t, "msg_log", time.Now(), body)
	bad := standardHeaders(t, "msg_log", time.Now(), body)
	bad.Set("Webhook-Signature", "v1,AAAA")
	stale := standardHeaders(t, "msg_old", time.Now().Add(-time.Hour), body)

	for _, c := range []struct {
		header http.Header
		body   []byte
		want   int
	}{
		{good, body, http.StatusOK}, {good, body, http.StatusOK}, {bad, body, http.StatusUnauthorized},
		{stale, body, http.StatusUnauthorized}, {good, bytes.Repeat([]byte("a"), 2048), http.StatusRequestEntityTooLarge},
	} {
		code, resp := e.post(t, slug, c.body, c.header)
		require.Equal(t, c.want, code, resp)
	}
	code, _ := e.post(t, "nosuchendpoint0000000000", body, good)
	require.Equal(t, http.StatusNotFound, code)
	var event int64
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT id FROM events WHERE delivery_id = 'msg_log'`).Scan(&event))

	got, err := e.deliveries(t, e.human, id)
	require.NoError(t, err)
	require.Len(t, got, 5)
	want := []ingestv1.DeliveryOutcome{
		ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_TOO_LARGE, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_TIMESTAMP,
		ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_SIGNATURE, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_DUPLICATE,
		ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_ACCEPTED,
	}
	for i, d := range got {
		require.Equal(t, want[i], d.GetOutcome(), "entry %d", i)
	}
	accepted := got[4]
	require.Equal(t, event, accepted.GetEventId())
	require.Equal(t, int32(http.StatusOK), accepted.GetHttpStatus())
	require.Equal(t, "msg_log", accepted.GetDeliveryId())
	require.Equal(t, "invoice.paid", accepted.GetTopic())
	require.Equal(t, int64(len(body)), accepted.GetSizeBytes())
	require.Zero(t, got[3].GetEventId(), "a duplicate stores nothing")
	require.Equal(t, int32(http.StatusUnauthorized), got[2].GetHttpStatus())
	require.Contains(t, got[2].GetDetail(), "signature")
	require.NotContains(t, got[2].GetDetail(), "AAAA", "never the signature itself")
	require.Equal(t, "timestamp too old", got[1].GetDetail())
	require.Equal(t, int32(http.StatusRequestEntityTooLarge), got[0].GetHttpStatus())

	disabled := e.endpoint(t, "standard_webhooks", []byte(whsec), "enabled = false")
	code, _ = e.post(t, disabled, body, good)
	require.Equal(t, http.StatusNotFound, code)
	got, err = e.deliveries(t, e.human, e.endpointID(t, disabled))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_DISABLED, got[0].GetOutcome())

	var other uuid.UUID
	require.NoError(t, e.pool.QueryRow(t.Context(), `INSERT INTO humans (email) VALUES ($1) RETURNING id`, uuid.NewString()+"@example.test").Scan(&other))
	_, err = e.deliveries(t, other, id)
	st, _ := apierr.ToStatus(err)
	require.Equal(t, codes.NotFound, st.Code(), "another tenant's endpoint")
	_, err = e.deliveries(t, e.human, uuid.NewString())
	st, _ = apierr.ToStatus(err)
	require.Equal(t, codes.NotFound, st.Code())
	_, err = e.srv.ListDeliveries(auth.NewContext(context.Background(), auth.Principal{HumanID: e.human, Scopes: []auth.Scope{auth.ScopeAdmin}}),
		&ingestv1.ListDeliveriesRequest{EndpointId: id, PageSize: 101})
	require.Equal(t, codes.InvalidArgument, status.Code(apierrStatus(err)))
}

// apierrStatus is err as the gRPC status a client would see.
func apierrStatus(err error) error {
	st, _ := apierr.ToStatus(err)
	return st.Err()
}

// TestDeliveryLogIsARingOfOneHundred: whatever the traffic, an endpoint
// keeps its last 100 deliveries, newest first, across flushes.
func TestDeliveryLogIsARingOfOneHundred(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	id := e.endpointID(t, slug)
	body := []byte(`{"n":1}`)
	for i := range 130 {
		code, resp := e.post(t, slug, body, standardHeaders(t, fmt.Sprintf("msg_%03d", i), time.Now(), body))
		require.Equal(t, http.StatusOK, code, resp)
		if i == 60 {
			require.NoError(t, e.srv.FlushDeliveries()) // the ring wraps across statements too
		}
	}
	got, err := e.deliveries(t, e.human, id)
	require.NoError(t, err)
	require.Len(t, got, 100)
	for i, d := range got {
		require.Equal(t, fmt.Sprintf("msg_%03d", 129-i), d.GetDeliveryId(), "newest first")
	}
	var rows int
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT count(*) FROM endpoint_deliveries WHERE endpoint_id = $1`, id).Scan(&rows))
	require.Equal(t, 100, rows)
}

// TestDeliveryLogLimitsRefusals: a flood of bad signatures is recorded a
// few at a time per endpoint; the rest are counted, and the count is
// recorded once the limit allows, so every refusal is accounted for.
func TestDeliveryLogLimitsRefusals(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	now := time.Now()
	e.srv.SetDeliveryClock(func() time.Time { return now })
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	id := e.endpointID(t, slug)
	body := []byte(`{"n":1}`)
	bad := standardHeaders(t, "msg_bad", time.Now(), body)
	bad.Set("Webhook-Signature", "v1,AAAA")
	const flood = 50
	for range flood {
		code, _ := e.post(t, slug, body, bad)
		require.Equal(t, http.StatusUnauthorized, code)
	}
	got, err := e.deliveries(t, e.human, id)
	require.NoError(t, err)
	require.Len(t, got, 10, "the burst; the clock stands still, so no summary yet")

	later := now.Add(time.Second)
	e.srv.SetDeliveryClock(func() time.Time { return later })
	got, err = e.deliveries(t, e.human, id)
	require.NoError(t, err)
	require.Len(t, got, 11, "the summary of the dropped ones")
	require.Equal(t, int32(flood-10-1), got[0].GetDroppedBefore())
	require.Equal(t, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_SIGNATURE, got[0].GetOutcome())
	total := 0
	for _, d := range got {
		total += 1 + int(d.GetDroppedBefore())
	}
	require.Equal(t, flood, total, "every refusal is in the log, one by one or counted")
}

// TestDeliveryLogStoresWhatTheSenderSentSafely: a verified delivery whose
// id is not UTF-8 (answered 400) is logged with a storable id, and does not
// make the batch it shares with other deliveries fail.
func TestDeliveryLogStoresWhatTheSenderSentSafely(t *testing.T) {
	t.Parallel()
	e := newLogEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"n":1}`)
	code, resp := e.post(t, slug, body, standardHeaders(t, "m3\xfe", time.Now(), body))
	require.Equal(t, http.StatusBadRequest, code, resp)
	code, resp = e.post(t, slug, body, standardHeaders(t, "m4", time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)

	got, err := e.deliveries(t, e.human, e.endpointID(t, slug))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_ACCEPTED, got[0].GetOutcome())
	require.Equal(t, ingestv1.DeliveryOutcome_DELIVERY_OUTCOME_REJECTED_OTHER, got[1].GetOutcome())
	require.Equal(t, "m3?", got[1].GetDeliveryId())
	require.Contains(t, got[1].GetDetail(), "UTF-8")
}
