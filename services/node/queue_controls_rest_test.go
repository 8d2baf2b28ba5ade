//go:build integration

package node_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueControlsOverREST: the pause, resume and queue-list routes
// (POST /api/queues/{queue}:pause, :resume, GET /api/queues) reach the
// QueueService through the gateway, with proto field names in the JSON.
func TestQueueControlsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	decode := func(r edgeResponse) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.raw), &m), r.raw)
		return m
	}
	paused := b.call(t, http.MethodPost, "/api/queues/rest-q:pause", b.token, strings.NewReader(`{}`), 2)
	require.Equal(t, http.StatusOK, paused.status, paused.raw)
	ctl := decode(paused)["control"].(map[string]any)
	require.Equal(t, true, ctl["paused"])
	require.Equal(t, "rest-q", ctl["queue"])
	require.NotEmpty(t, ctl["paused_at"])

	list := b.call(t, http.MethodGet, "/api/queues?page_size=10", b.token, nil, 0)
	require.Equal(t, http.StatusOK, list.status, list.raw)
	queues := decode(list)["queues"].([]any)
	require.Len(t, queues, 1)
	require.Equal(t, "rest-q", queues[0].(map[string]any)["queue"])
	require.Equal(t, true, queues[0].(map[string]any)["paused"])

	stats := b.call(t, http.MethodGet, "/api/queues/rest-q/stats", b.token, nil, 0)
	require.Equal(t, http.StatusOK, stats.status, stats.raw)
	require.Equal(t, true, decode(stats)["paused"])

	resumed := b.call(t, http.MethodPost, "/api/queues/rest-q:resume", b.token, strings.NewReader(`{}`), 2)
	require.Equal(t, http.StatusOK, resumed.status, resumed.raw)
	require.Equal(t, false, decode(resumed)["control"].(map[string]any)["paused"])

	bad := b.call(t, http.MethodPost, "/api/queues/Bad%20Name:pause", b.token, strings.NewReader(`{}`), 2)
	require.Equal(t, http.StatusBadRequest, bad.status, bad.raw)
	require.Contains(t, bad.raw, "queue")
}

// TestQueueLimitsOverREST: PUT /api/queues/{queue}/limits reaches
// SetQueueLimits; QueueStats shows the limits; a limit out of range is 400
// naming the field.
func TestQueueLimitsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	put := func(body string) edgeResponse {
		t.Helper()
		return b.call(t, http.MethodPut, "/api/queues/rest-l/limits", b.token, strings.NewReader(body), int64(len(body)))
	}
	set := put(`{"max_running": 20, "key_max_running": 3, "rate_per_second": 50, "key_patterns": [{"pattern": "vip-*", "max_running": 5}]}`)
	require.Equal(t, http.StatusOK, set.status, set.raw)
	var got struct {
		Control struct {
			Limits struct {
				MaxRunning    int     `json:"max_running"`
				KeyMaxRunning int     `json:"key_max_running"`
				Rate          float64 `json:"rate_per_second"`
				Patterns      []struct {
					Pattern string `json:"pattern"`
				} `json:"key_patterns"`
			} `json:"limits"`
		} `json:"control"`
	}
	require.NoError(t, json.Unmarshal([]byte(set.raw), &got), set.raw)
	l := got.Control.Limits
	require.Equal(t, [3]int{20, 3, 50}, [3]int{l.MaxRunning, l.KeyMaxRunning, int(l.Rate)}, set.raw)
	require.Len(t, l.Patterns, 1)
	require.Equal(t, "vip-*", l.Patterns[0].Pattern)

	stats := b.call(t, http.MethodGet, "/api/queues/rest-l/stats", b.token, nil, 0)
	require.Equal(t, http.StatusOK, stats.status, stats.raw)
	require.Contains(t, stats.raw, `"key_max_running":3`)

	bad := put(`{"max_running": -1}`)
	require.Equal(t, http.StatusBadRequest, bad.status, bad.raw)
	require.Contains(t, bad.raw, "max_running")
}
