//go:build integration

package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/settings"
)

// createSchedule creates a schedule of the env's tenant.
func (e *env) createSchedule(t *testing.T, req *queuev1.CreateScheduleRequest) *queuev1.Schedule {
	t.Helper()
	res, err := e.srv.CreateSchedule(e.owner(t), req)
	require.NoError(t, err)
	return res.GetSchedule()
}

// TestScheduleCRUD: create shows the next five ticks after now (whole
// seconds) and the normalized template; get and list (in pages, by name)
// show the same; an update of the expression recomputes the next ticks, of
// the template keeps them; pause clears them and resume recomputes them;
// delete removes it; names are unique per tenant; another tenant sees none.
func TestScheduleCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.owner(t)
	before := e.dbNow(t)
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{
		Name: "nightly", Cron: "0 3 * * *", TimeZone: "Europe/Berlin",
		Template: &queuev1.EnqueueRequest{Queue: "reports", Kind: "build", Payload: payload(t, map[string]any{"n": 1}), AgentId: e.agent.String()},
	})
	require.Equal(t, "nightly", s.GetName())
	require.Equal(t, queuev1.Misfire_MISFIRE_RUN_ONCE, s.GetMisfire(), "run_once is the default")
	require.Len(t, s.GetNextRuns(), 5)
	first := s.GetNextRuns()[0].AsTime()
	require.True(t, first.After(before))
	require.LessOrEqual(t, first.Sub(before), 24*time.Hour)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	for _, r := range s.GetNextRuns() {
		require.Equal(t, 3, r.AsTime().In(berlin).Hour())
		require.Zero(t, r.AsTime().Nanosecond())
	}
	require.Equal(t, int32(2), s.GetTemplate().GetPriority(), "the default priority is resolved and stored")
	require.Equal(t, e.agent.String(), s.GetTemplate().GetAgentId())
	require.Nil(t, s.GetLastRunAt())

	got, err := e.srv.GetSchedule(ctx, &queuev1.GetScheduleRequest{Id: s.GetId()})
	require.NoError(t, err)
	require.True(t, proto.Equal(s, got.GetSchedule()))

	_, err = e.srv.CreateSchedule(ctx, &queuev1.CreateScheduleRequest{Name: "nightly", Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "q"}})
	require.Equal(t, codes.AlreadyExists, code(err))
	e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "a-first", Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "q"}})
	page, err := e.srv.ListSchedules(ctx, &queuev1.ListSchedulesRequest{PageSize: 1})
	require.NoError(t, err)
	require.Len(t, page.GetSchedules(), 1)
	require.Equal(t, "a-first", page.GetSchedules()[0].GetName())
	page, err = e.srv.ListSchedules(ctx, &queuev1.ListSchedulesRequest{PageSize: 1, PageToken: page.GetNextPageToken()})
	require.NoError(t, err)
	require.Equal(t, "nightly", page.GetSchedules()[0].GetName())
	require.Len(t, page.GetSchedules()[0].GetNextRuns(), 5)

	// Only the template changes: the ticks stay.
	up, err := e.srv.UpdateSchedule(ctx, &queuev1.UpdateScheduleRequest{Id: s.GetId(), Template: &queuev1.EnqueueRequest{Queue: "reports", Kind: "rebuild"}})
	require.NoError(t, err)
	require.Equal(t, "rebuild", up.GetSchedule().GetTemplate().GetKind())
	require.Empty(t, up.GetSchedule().GetTemplate().GetAgentId())
	require.True(t, proto.Equal(s.GetNextRuns()[0], up.GetSchedule().GetNextRuns()[0]))
	// A new expression: recomputed from now.
	up, err = e.srv.UpdateSchedule(ctx, &queuev1.UpdateScheduleRequest{Id: s.GetId(), Cron: proto.String("*/5 * * * *"), TimeZone: proto.String("")})
	require.NoError(t, err)
	require.Equal(t, "UTC", up.GetSchedule().GetTimeZone())
	next := up.GetSchedule().GetNextRuns()
	require.Len(t, next, 5)
	require.Zero(t, next[0].AsTime().Minute()%5)
	require.LessOrEqual(t, next[0].AsTime().Sub(before), 6*time.Minute)
	require.Equal(t, 5*time.Minute, next[1].AsTime().Sub(next[0].AsTime()))

	up, err = e.srv.UpdateSchedule(ctx, &queuev1.UpdateScheduleRequest{Id: s.GetId(), Paused: proto.Bool(true), Misfire: queuev1.Misfire_MISFIRE_SKIP})
	require.NoError(t, err)
	require.True(t, up.GetSchedule().GetPaused())
	require.Empty(t, up.GetSchedule().GetNextRuns())
	require.Equal(t, queuev1.Misfire_MISFIRE_SKIP, up.GetSchedule().GetMisfire())
	up, err = e.srv.UpdateSchedule(ctx, &queuev1.UpdateScheduleRequest{Id: s.GetId(), Paused: proto.Bool(false)})
	require.NoError(t, err)
	require.False(t, up.GetSchedule().GetPaused())
	require.Len(t, up.GetSchedule().GetNextRuns(), 5)
	require.Equal(t, queuev1.Misfire_MISFIRE_SKIP, up.GetSchedule().GetMisfire(), "unset keeps the policy")

	// Another tenant: not found, for every call.
	other := asHuman(t, seedHuman(t, e.pool))
	_, err = e.srv.GetSchedule(other, &queuev1.GetScheduleRequest{Id: s.GetId()})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.UpdateSchedule(other, &queuev1.UpdateScheduleRequest{Id: s.GetId(), Paused: proto.Bool(true)})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.DeleteSchedule(other, &queuev1.DeleteScheduleRequest{Id: s.GetId()})
	require.Equal(t, codes.NotFound, code(err))
	list, err := e.srv.ListSchedules(other, &queuev1.ListSchedulesRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetSchedules())
	// The other tenant cannot address this tenant's agent either.
	_, err = e.srv.CreateSchedule(other, &queuev1.CreateScheduleRequest{Name: "x", Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "q", AgentId: e.agent.String()}})
	require.Equal(t, codes.NotFound, code(err))

	_, err = e.srv.DeleteSchedule(ctx, &queuev1.DeleteScheduleRequest{Id: s.GetId()})
	require.NoError(t, err)
	_, err = e.srv.GetSchedule(ctx, &queuev1.GetScheduleRequest{Id: s.GetId()})
	require.Equal(t, codes.NotFound, code(err))
}

// TestScheduleValidationNamesTheField: every bad input is INVALID_ARGUMENT
// naming its field, template fields by Enqueue's own checks.
func TestScheduleValidationNamesTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ok := func() *queuev1.CreateScheduleRequest {
		return &queuev1.CreateScheduleRequest{Name: "s", Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "q"}}
	}
	for _, c := range []struct {
		field string
		edit  func(*queuev1.CreateScheduleRequest)
	}{
		{"cron", func(r *queuev1.CreateScheduleRequest) { r.Cron = "every day at noon" }},
		{"cron", func(r *queuev1.CreateScheduleRequest) { r.Cron = "0 0 32 * *" }},
		{"time_zone", func(r *queuev1.CreateScheduleRequest) { r.TimeZone = "Europe/Atlantis" }},
		{"name", func(r *queuev1.CreateScheduleRequest) { r.Name = "Not A Name" }},
		{"template", func(r *queuev1.CreateScheduleRequest) { r.Template = nil }},
		{"template.queue", func(r *queuev1.CreateScheduleRequest) { r.Template.Queue = "" }},
		{"template.priority", func(r *queuev1.CreateScheduleRequest) { r.Template.Priority = proto.Int32(9) }},
		{"template.max_attempts", func(r *queuev1.CreateScheduleRequest) { r.Template.MaxAttempts = 5000 }},
		{"template.agent_id", func(r *queuev1.CreateScheduleRequest) { r.Template.AgentId = "agent-7" }},
		{"template.run_at", func(r *queuev1.CreateScheduleRequest) { r.Template.RunAt = timestamppb.New(time.Now()) }},
		{"template.dedupe_key", func(r *queuev1.CreateScheduleRequest) { r.Template.DedupeKey = "k" }},
		{"template.event_id", func(r *queuev1.CreateScheduleRequest) { r.Template.EventId = 3 }},
	} {
		req := ok()
		c.edit(req)
		_, err := e.srv.CreateSchedule(e.owner(t), req)
		require.Equal(t, codes.InvalidArgument, code(err), c.field)
		require.Equal(t, c.field, onlyViolatedField(t, err))
	}
	s := e.createSchedule(t, ok())
	for field, req := range map[string]*queuev1.UpdateScheduleRequest{
		"cron":              {Id: s.GetId(), Cron: proto.String("@every")},
		"time_zone":         {Id: s.GetId(), TimeZone: proto.String("Nowhere")},
		"template.priority": {Id: s.GetId(), Template: &queuev1.EnqueueRequest{Queue: "q", Priority: proto.Int32(-1)}},
		"id":                {Id: "7"},
	} {
		_, err := e.srv.UpdateSchedule(e.owner(t), req)
		require.Equal(t, field, onlyViolatedField(t, err))
	}
	_, err := e.srv.UpdateSchedule(e.owner(t), &queuev1.UpdateScheduleRequest{Id: uuid.NewString(), Paused: proto.Bool(true)})
	require.Equal(t, codes.NotFound, code(err))
	_, err = e.srv.ListSchedules(e.owner(t), &queuev1.ListSchedulesRequest{PageToken: "garbage!"})
	require.Equal(t, "page_token", onlyViolatedField(t, err))
}

// TestSchedulesPerTenantAreCapped: concurrent creations never take a tenant
// past the setting tenant.limits.max_schedules (the rest get
// RESOURCE_EXHAUSTED naming it), a delete makes room, another tenant's
// count is its own, and a raised setting applies at once.
func TestSchedulesPerTenantAreCapped(t *testing.T) {
	t.Parallel()
	const most = 3
	e := newEnv(t)
	e.setSetting(t, settings.TenantLimits, "max_schedules", most)
	create := func(ctx context.Context, name string) (*queuev1.CreateScheduleResponse, error) {
		return e.srv.CreateSchedule(ctx, &queuev1.CreateScheduleRequest{
			Name: name, Cron: "@hourly", Template: &queuev1.EnqueueRequest{Queue: "capped", Kind: "k"},
		})
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = create(e.owner(t), fmt.Sprintf("s%d", i))
		})
	}
	wg.Wait()
	created, exhausted := 0, 0
	for _, err := range errs {
		switch code(err) {
		case codes.OK:
			created++
		case codes.ResourceExhausted:
			require.ErrorContains(t, err, "tenant.limits, max_schedules")
			exhausted++
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	require.Equal(t, most, created)
	require.Equal(t, len(errs)-most, exhausted)
	require.EqualValues(t, most, e.count(t, `SELECT count(*) FROM schedules`))

	list, err := e.srv.ListSchedules(e.owner(t), &queuev1.ListSchedulesRequest{})
	require.NoError(t, err)
	_, err = e.srv.DeleteSchedule(e.owner(t), &queuev1.DeleteScheduleRequest{Id: list.GetSchedules()[0].GetId()})
	require.NoError(t, err)
	_, err = create(e.owner(t), "again")
	require.NoError(t, err, "a delete makes room")

	_, err = create(asHuman(t, seedHuman(t, e.pool)), "theirs")
	require.NoError(t, err, "another tenant's schedules are counted apart")

	_, err = create(e.owner(t), "one-more")
	require.Equal(t, codes.ResourceExhausted, code(err))
	e.setSetting(t, settings.TenantLimits, "max_schedules", most+1)
	_, err = create(e.owner(t), "one-more")
	require.NoError(t, err, "a raised setting applies to the next creation")
}
