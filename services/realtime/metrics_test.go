//go:build integration

package realtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	realtimev1 "github.com/switchboard/switchboard/gen/switchboard/realtime/v1"
	"github.com/switchboard/switchboard/pkg/metrics"
	"github.com/switchboard/switchboard/services/realtime"
)

// gauge reads one unlabelled series of r.
func gauge(t *testing.T, r *metrics.Registry, name string) float64 {
	t.Helper()
	fams, err := r.Gatherer().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// The fan-out's series: subscribers open, rows replayed, events delivered
// live and from the table, and the reader's lag behind the newest id.
func TestMetricsFollowTheFanOut(t *testing.T) {
	t.Parallel()
	r := metrics.New(metrics.Options{})
	e := newEnv(t, realtime.Options{Metrics: r})
	live := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"c"}})
	e.subscribed(1)
	require.InDelta(t, 1.0, gauge(t, r, "switchboard_realtime_subscribers"), 0)
	marker := e.publish(t.Context(), "c", true, map[string]any{"i": 0.0}).GetId()
	for i := 1; i <= 3; i++ {
		e.publish(t.Context(), "c", true, map[string]any{"i": float64(i)})
	}
	for range 4 {
		live.next(t) // the reader has fanned all four out
	}
	lag, err := e.srv.SampleMetrics(t.Context())
	require.NoError(t, err)
	require.Zero(t, lag)
	require.Zero(t, gauge(t, r, "switchboard_realtime_reader_lag_events"))
	require.Zero(t, gauge(t, r, "switchboard_realtime_replay_rows_total"))

	// A subscriber resuming after the marker replays the three from the table.
	resumed := e.subscribe(e.human, &realtimev1.SubscribeRequest{Channels: []string{"c"}, AfterId: marker})
	for range 3 {
		resumed.next(t)
	}
	require.InDelta(t, 3.0, gauge(t, r, "switchboard_realtime_replay_rows_total"), 0)
	require.Eventually(t, func() bool { return gauge(t, r, "switchboard_realtime_events_delivered_total") == 7 }, waitFor, time.Millisecond,
		"four live to the first, three replayed to the second")
	require.InDelta(t, 2.0, gauge(t, r, "switchboard_realtime_subscribers"), 0)
	require.Zero(t, gauge(t, r, "switchboard_realtime_slow_subscriber_cutoffs_total"))
	require.Zero(t, gauge(t, r, "switchboard_realtime_events_dropped_total"))
	require.Zero(t, gauge(t, r, "switchboard_realtime_mesh_links_up"), "no mesh")

	live.cancel()
	resumed.cancel()
	e.subscribed(0)
	require.Zero(t, gauge(t, r, "switchboard_realtime_subscribers"))
}
