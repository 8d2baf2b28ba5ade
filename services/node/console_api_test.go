//go:build integration

package node_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The console's routes over the real REST edge, as the front-end calls
// them: an endpoint's delivery log (recorded off the request's path, so
// waited for), ListTodos' new filters, RetryTodo, ListChannels.
func TestConsoleRoutesOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	key := bytes.Repeat([]byte{0x42}, 24)
	code, raw := b.rest(t, http.MethodPost, "/api/admin/endpoints",
		`{"queue":"hooks","verification":"VERIFICATION_SCHEME_STANDARD_WEBHOOKS","secret":"whsec_`+base64.StdEncoding.EncodeToString(key)+`"}`)
	require.Equal(t, http.StatusOK, code, raw)
	var created struct {
		Endpoint struct{ ID, Slug string } `json:"endpoint"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &created))

	body := []byte(`{"type":"invoice.paid"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	signed := map[string]string{
		"webhook-id": "msg_console", "webhook-timestamp": ts,
		"webhook-signature": "v1," + base64.StdEncoding.EncodeToString(hmacSHA256(key, "msg_console.", ts, ".", string(body))),
	}
	code, raw = b.hook(t, created.Endpoint.Slug, body, signed)
	require.Equal(t, http.StatusOK, code, raw)
	var accepted struct {
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &accepted))
	signed["webhook-signature"] = "v1,AAAA"
	code, _ = b.hook(t, created.Endpoint.Slug, body, signed)
	require.Equal(t, http.StatusUnauthorized, code)

	type delivery struct {
		Outcome    string `json:"outcome"`
		HTTPStatus int    `json:"http_status"`
		EventID    string `json:"event_id"`
		Topic      string `json:"topic"`
	}
	var log struct {
		Deliveries []delivery `json:"deliveries"`
	}
	require.Eventually(t, func() bool {
		code, raw := b.rest(t, http.MethodGet, "/api/endpoints/"+created.Endpoint.ID+"/deliveries?page_size=10", "")
		return code == http.StatusOK && json.Unmarshal([]byte(raw), &log) == nil && len(log.Deliveries) == 2
	}, time.Minute, 10*time.Millisecond, "both deliveries are logged within a flush")
	require.Equal(t, delivery{Outcome: "DELIVERY_OUTCOME_REJECTED_SIGNATURE", HTTPStatus: 401, EventID: "0"}, log.Deliveries[0], "zero fields are written out")
	require.Equal(t, delivery{Outcome: "DELIVERY_OUTCOME_ACCEPTED", HTTPStatus: 200, EventID: accepted.EventID, Topic: "invoice.paid"}, log.Deliveries[1])

	q := url.Values{"kind": {"invoice.paid"}, "event_id": {accepted.EventID}, "created_after": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}
	code, raw = b.rest(t, http.MethodGet, "/api/todos?"+q.Encode(), "")
	require.Equal(t, http.StatusOK, code, raw)
	var todos struct {
		Todos []struct {
			ID      string `json:"id"`
			EventID string `json:"event_id"`
		} `json:"todos"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &todos))
	require.Len(t, todos.Todos, 1)
	require.Equal(t, accepted.EventID, todos.Todos[0].EventID)
	code, raw = b.rest(t, http.MethodGet, "/api/todos?created_after=2030-01-01T00:00:00Z&created_before=2020-01-01T00:00:00Z", "")
	require.Equal(t, http.StatusBadRequest, code, raw)

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, raw = b.rest(t, http.MethodPost, "/api/queues/later/todos", `{"run_at":"`+later+`"}`)
	require.Equal(t, http.StatusOK, code, raw)
	var enq struct {
		Todo struct{ ID string } `json:"todo"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &enq))
	code, raw = b.rest(t, http.MethodPost, "/api/todos/"+enq.Todo.ID+":retry", `{}`)
	require.Equal(t, http.StatusOK, code, raw)
	require.Contains(t, raw, `"state":"TODO_STATE_PENDING"`)
	code, raw = b.rest(t, http.MethodPost, "/api/todos/"+todos.Todos[0].ID+":cancel", `{}`)
	require.Equal(t, http.StatusOK, code, raw)
	code, raw = b.rest(t, http.MethodPost, "/api/todos/"+todos.Todos[0].ID+":retry", `{}`)
	require.Equal(t, http.StatusBadRequest, code, "FAILED_PRECONDITION: %s", raw)

	code, raw = b.rest(t, http.MethodGet, "/api/realtime/channels?prefix=room&page_size=10", "")
	require.Equal(t, http.StatusOK, code, raw)
	code, raw = b.rest(t, http.MethodGet, "/api/realtime/channels?page_size=500", "")
	require.Equal(t, http.StatusBadRequest, code, raw)
}
