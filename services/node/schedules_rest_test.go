//go:build integration

package node_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchedulesOverREST: POST /api/schedules, GET the list and one,
// PATCH and DELETE /api/schedules/{id} reach the QueueService through the
// gateway, with proto field names in the JSON; a bad expression is a 400
// naming the field.
func TestSchedulesOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	send := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		var r edgeResponse
		if body == "" {
			r = b.call(t, method, path, b.token, nil, 0)
		} else {
			r = b.call(t, method, path, b.token, strings.NewReader(body), int64(len(body)))
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.raw), &m), r.raw)
		return r.status, m
	}
	status, created := send(http.MethodPost, "/api/schedules",
		`{"name":"hourly-report","cron":"@hourly","time_zone":"Europe/Berlin","template":{"queue":"reports","kind":"build","payload":{"full":true}}}`)
	require.Equal(t, http.StatusOK, status, created)
	s := created["schedule"].(map[string]any)
	id := s["id"].(string)
	require.Equal(t, "hourly-report", s["name"])
	require.Len(t, s["next_runs"], 5)
	require.Equal(t, "reports", s["template"].(map[string]any)["queue"])
	require.Equal(t, "MISFIRE_RUN_ONCE", s["misfire"])

	status, list := send(http.MethodGet, "/api/schedules?page_size=10", "")
	require.Equal(t, http.StatusOK, status, list)
	require.Len(t, list["schedules"], 1)

	status, patched := send(http.MethodPatch, "/api/schedules/"+id, `{"cron":"*/10 * * * *","paused":true}`)
	require.Equal(t, http.StatusOK, status, patched)
	require.Equal(t, true, patched["schedule"].(map[string]any)["paused"])
	require.Equal(t, "*/10 * * * *", patched["schedule"].(map[string]any)["cron"])
	require.Empty(t, patched["schedule"].(map[string]any)["next_runs"], "a paused schedule has no next runs")

	status, got := send(http.MethodGet, "/api/schedules/"+id, "")
	require.Equal(t, http.StatusOK, status, got)
	require.Equal(t, true, got["schedule"].(map[string]any)["paused"])

	status, bad := send(http.MethodPost, "/api/schedules", `{"name":"bad","cron":"every tuesday","template":{"queue":"q"}}`)
	require.Equal(t, http.StatusBadRequest, status, bad)
	require.Contains(t, bad["message"], "cron")

	status, _ = send(http.MethodDelete, "/api/schedules/"+id, "")
	require.Equal(t, http.StatusOK, status)
	status, gone := send(http.MethodGet, "/api/schedules/"+id, "")
	require.Equal(t, http.StatusNotFound, status, gone)
}
