//go:build integration

package queue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/settings"
)

// TestScheduleMinimumInterval: CreateSchedule and UpdateSchedule refuse a
// spec that ticks more often than queue.schedules.min_interval_seconds
// (default 10 s) — "@every 1ms", "@every 0s", "@every -1s", six-field
// every-second specs — with INVALID_ARGUMENT naming the field cron and the
// minimum; the operator's setting moves the bound.
func TestScheduleMinimumInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := func(name, cron string) (*queuev1.Schedule, error) {
		res, err := e.srv.CreateSchedule(e.owner(t), &queuev1.CreateScheduleRequest{
			Name: name, Cron: cron, Template: &queuev1.EnqueueRequest{Queue: "q"},
		})
		return res.GetSchedule(), err
	}
	for _, cron := range []string{"@every 1ms", "@every 0s", "@every -1s", "@every 9s", "* * * * * *", "*/5 * * * * *", "0,55 * * * * *"} {
		_, err := create("too-often", cron)
		require.Equal(t, codes.InvalidArgument, code(err), cron)
		require.Equal(t, "cron", onlyViolatedField(t, err), cron)
		if cron != "@every 0s" && cron != "@every -1s" {
			require.ErrorContains(t, err, "at most every 10s (setting queue.schedules.min_interval_seconds)", cron)
		}
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM schedules`), "nothing was stored")
	for i, cron := range []string{"@every 10s", "*/10 * * * * *", "0,30 * * * * *", "* * * * *"} {
		_, err := create(fmt.Sprintf("ok-%d", i), cron)
		require.NoError(t, err, cron)
	}

	s, err := create("updated", "@hourly")
	require.NoError(t, err)
	_, err = e.srv.UpdateSchedule(e.owner(t), &queuev1.UpdateScheduleRequest{Id: s.GetId(), Cron: proto.String("*/2 * * * * *")})
	require.Equal(t, codes.InvalidArgument, code(err))
	require.Equal(t, "cron", onlyViolatedField(t, err))

	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 1)
	_, err = create("every-second", "* * * * * *")
	require.NoError(t, err, "the operator allows every second")
	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 3600)
	_, err = create("half-hourly", "*/30 * * * *")
	require.ErrorContains(t, err, "at most every 1h0m0s")
}

// TestScheduleStoredBeforeARaisedMinimum: a schedule that ticks every
// second, stored while the operator allowed it, keeps running after the
// minimum is raised, at most that often: its next runs show the spacing,
// a due tick fires one todo (not one per missed second) and the next tick
// is the minimum away; it can still be paused, resumed and renamed without
// restating its expression, while a new expression must respect the
// minimum.
func TestScheduleStoredBeforeARaisedMinimum(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 1)
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "fast", Cron: "* * * * * *", Template: &queuev1.EnqueueRequest{Queue: "q"}})
	runs := s.GetNextRuns()
	require.Equal(t, time.Second, runs[1].AsTime().Sub(runs[0].AsTime()))

	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 30)
	got, err := e.srv.GetSchedule(e.owner(t), &queuev1.GetScheduleRequest{Id: s.GetId()})
	require.NoError(t, err)
	runs = got.GetSchedule().GetNextRuns()
	for i := 1; i < len(runs); i++ {
		require.Equal(t, 30*time.Second, runs[i].AsTime().Sub(runs[i-1].AsTime()), "shown as it will tick")
	}

	due := e.dueAt(t, s.GetId(), -5*time.Second)
	n, err := e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "the due tick, not the five seconds since")
	require.Equal(t, []int64{due.Unix()}, e.scheduleTodos(t, s.GetId()))
	var next time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(), `SELECT next_run_at FROM schedules WHERE id = $1`, s.GetId()).Scan(&next))
	require.Equal(t, 30*time.Second, next.Sub(due))

	for _, req := range []*queuev1.UpdateScheduleRequest{
		{Id: s.GetId(), Paused: proto.Bool(true)},
		{Id: s.GetId(), Paused: proto.Bool(false)},
		{Id: s.GetId(), Name: proto.String("renamed"), Misfire: queuev1.Misfire_MISFIRE_SKIP},
	} {
		_, err := e.srv.UpdateSchedule(e.owner(t), req)
		require.NoError(t, err)
	}
	_, err = e.srv.UpdateSchedule(e.owner(t), &queuev1.UpdateScheduleRequest{Id: s.GetId(), Cron: proto.String("*/2 * * * * *")})
	require.Equal(t, "cron", onlyViolatedField(t, err))
}
