package queue

import (
	"context"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// shownNextRuns is how many upcoming ticks a Schedule shows.
const shownNextRuns = 5

// templateJSON writes a template as stored: proto JSON with the proto
// field names, which the fire statement reads (jsonb_to_record).
var templateJSON = protojson.MarshalOptions{UseProtoNames: true}

// CreateSchedule stores a schedule whose first tick is the expression's
// first after now (on the database clock); a paused one has none until it
// is resumed. An expression that ticks more often than the setting
// queue.schedules.min_interval_seconds allows is refused (checkInterval).
func (s *Server) CreateSchedule(ctx context.Context, req *queuev1.CreateScheduleRequest) (*queuev1.CreateScheduleResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !textcheck.QueueName(req.GetName()) { // a schedule's name has a queue name's shape
		return nil, invalid("name", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	}
	f := store.ScheduleFields{Name: req.GetName(), Cron: req.GetCron(), TimeZone: zoneName(req.GetTimeZone()), Paused: req.GetPaused()}
	spec, err := parseSpec(f.Cron, f.TimeZone)
	if err != nil {
		return nil, err
	}
	least, err := s.store.MinScheduleInterval(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkInterval(f.Cron, spec, least); err != nil {
		return nil, err
	}
	if f.Queue, f.AgentID, f.Template, err = scheduleTemplate(req.GetTemplate()); err != nil {
		return nil, err
	}
	f.Misfire = misfireName(req.GetMisfire(), misfireRunOnce)
	if !f.Paused {
		now, err := s.store.Now(ctx)
		if err != nil {
			return nil, err
		}
		f.NextRunAt = nextAfter(spec, now)
	}
	row, err := s.store.CreateSchedule(ctx, c, f)
	if err != nil {
		return nil, err
	}
	return &queuev1.CreateScheduleResponse{Schedule: scheduleProto(row, least)}, nil
}

// GetSchedule returns one of the tenant's schedules.
func (s *Server) GetSchedule(ctx context.Context, req *queuev1.GetScheduleRequest) (*queuev1.GetScheduleResponse, error) {
	c, id, err := callerOfSchedule(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	row, err := s.store.GetSchedule(ctx, c, id)
	if err != nil {
		return nil, err
	}
	least, err := s.store.MinScheduleInterval(ctx)
	if err != nil {
		return nil, err
	}
	return &queuev1.GetScheduleResponse{Schedule: scheduleProto(row, least)}, nil
}

// ListSchedules lists the tenant's schedules by name, keyset-paginated on
// the name like ListQueues.
func (s *Server) ListSchedules(ctx context.Context, req *queuev1.ListSchedulesRequest) (*queuev1.ListSchedulesResponse, error) {
	c, limit, after, err := namePageArgs(ctx, req, "ListSchedules")
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListSchedules(ctx, c, after, limit+1)
	if err != nil {
		return nil, err
	}
	least, err := s.store.MinScheduleInterval(ctx)
	if err != nil {
		return nil, err
	}
	out := &queuev1.ListSchedulesResponse{}
	rows, out.NextPageToken = cutNamePage(rows, limit, func(r store.Schedule) string { return r.Name })
	out.Schedules = make([]*queuev1.Schedule, len(rows))
	for i, r := range rows {
		out.Schedules[i] = scheduleProto(r, least)
	}
	return out, nil
}

// UpdateSchedule changes the fields the request sets. A new expression or
// zone, or a resume, computes the next tick from now; a pause clears it;
// any other change keeps it. A new expression or zone must respect the
// minimum interval; a schedule stored before a raised minimum may still be
// paused, resumed, renamed or retargeted, and ticks at most that often.
func (s *Server) UpdateSchedule(ctx context.Context, req *queuev1.UpdateScheduleRequest) (*queuev1.UpdateScheduleResponse, error) {
	c, id, err := callerOfSchedule(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if req.Name != nil && !textcheck.QueueName(req.GetName()) {
		return nil, invalid("name", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	}
	least, err := s.store.MinScheduleInterval(ctx)
	if err != nil {
		return nil, err
	}
	row, err := s.store.UpdateSchedule(ctx, c, id, func(cur store.Schedule, now time.Time) (store.ScheduleFields, error) {
		return mergeSchedule(req, cur, now, least)
	})
	if err != nil {
		return nil, err
	}
	return &queuev1.UpdateScheduleResponse{Schedule: scheduleProto(row, least)}, nil
}

// mergeSchedule applies req to cur: the fields UpdateSchedule writes.
// least is the minimum interval a new expression or zone must respect.
func mergeSchedule(req *queuev1.UpdateScheduleRequest, cur store.Schedule, now time.Time, least time.Duration) (store.ScheduleFields, error) {
	f := store.ScheduleFields{
		Name: cur.Name, Queue: cur.Queue, AgentID: cur.AgentID, Cron: cur.Cron, TimeZone: cur.TimeZone,
		Template: cur.Template, Misfire: misfireName(req.GetMisfire(), cur.Misfire), Paused: cur.PausedAt != nil,
		NextRunAt: cur.NextRunAt,
	}
	recompute := false
	if req.Name != nil {
		f.Name = req.GetName()
	}
	if req.Cron != nil {
		f.Cron, recompute = req.GetCron(), true
	}
	if req.TimeZone != nil {
		f.TimeZone, recompute = zoneName(req.GetTimeZone()), true
	}
	spec, err := parseSpec(f.Cron, f.TimeZone)
	if err != nil {
		return f, err
	}
	if req.Cron != nil || req.TimeZone != nil {
		if err := checkInterval(f.Cron, spec, least); err != nil {
			return f, err
		}
	}
	if req.GetTemplate() != nil {
		if f.Queue, f.AgentID, f.Template, err = scheduleTemplate(req.GetTemplate()); err != nil {
			return f, err
		}
	}
	if req.Paused != nil {
		recompute = recompute || req.GetPaused() != f.Paused
		f.Paused = req.GetPaused()
	}
	switch {
	case f.Paused:
		f.NextRunAt = nil
	case recompute:
		f.NextRunAt = nextAfter(spec, now)
	}
	return f, nil
}

// DeleteSchedule removes one of the tenant's schedules.
func (s *Server) DeleteSchedule(ctx context.Context, req *queuev1.DeleteScheduleRequest) (*queuev1.DeleteScheduleResponse, error) {
	c, id, err := callerOfSchedule(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteSchedule(ctx, c, id); err != nil {
		return nil, err
	}
	return &queuev1.DeleteScheduleResponse{}, nil
}

// callerOfSchedule is caller for a request about one schedule.
func callerOfSchedule(ctx context.Context, raw string) (store.Caller, uuid.UUID, error) {
	c, err := caller(ctx)
	if err != nil {
		return c, uuid.UUID{}, err
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return c, id, invalid("id", "must be a valid UUID")
	}
	return c, id, nil
}

// scheduleTemplate checks a template with Enqueue's own checks (newTodo,
// errors prefixed "template.") plus what a schedule decides itself, and
// returns its queue, its agent and its stored form: the request with the
// defaults resolved. A field added to EnqueueRequest is checked and stored
// with no change here; the fire statement names the fields it inserts.
func scheduleTemplate(r *queuev1.EnqueueRequest) (queue string, agent *uuid.UUID, stored []byte, err error) {
	const p = "template."
	switch {
	case r == nil:
		return "", nil, nil, invalid("template", "is required")
	case !textcheck.QueueName(r.GetQueue()):
		return "", nil, nil, invalid(p+"queue", "is required and must match ^[a-z0-9][a-z0-9._-]{0,62}$")
	case r.GetEventId() != 0:
		return "", nil, nil, invalid(p+"event_id", "must be unset: a schedule's todo is about no event")
	case r.GetRunAt() != nil:
		return "", nil, nil, invalid(p+"run_at", "must be unset: a schedule's todo runs at its tick")
	case r.GetDedupeKey() != "":
		return "", nil, nil, invalid(p+"dedupe_key", "must be unset: a schedule's todo is keyed schedule:<id>:<tick>")
	}
	n, err := newTodo(p, r)
	if err != nil {
		return "", nil, nil, err
	}
	t, _ := proto.Clone(r).(*queuev1.EnqueueRequest)
	t.Priority = proto.Int32(n.Priority)
	stored, err = templateJSON.Marshal(t)
	return r.GetQueue(), n.AgentID, stored, err
}

// scheduleProto renders a row, with its next ticks computed from the stored
// next_run_at as the ticker will fire them under the minimum interval
// least.
func scheduleProto(r store.Schedule, least time.Duration) *queuev1.Schedule {
	template := &queuev1.EnqueueRequest{}
	// Stored by this server from a checked request: it parses.
	_ = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(r.Template, template)
	out := &queuev1.Schedule{
		Id: r.ID.String(), Name: r.Name, Cron: r.Cron, TimeZone: r.TimeZone, Template: template,
		Misfire: queuev1.Misfire_MISFIRE_RUN_ONCE, Paused: r.PausedAt != nil, LastRunAt: timestamp(r.LastRunAt),
		CreatedAt: timestamp(&r.CreatedAt), UpdatedAt: timestamp(&r.UpdatedAt), LastTodoId: orZero(r.LastTodoID),
	}
	if r.Misfire == misfireSkip {
		out.Misfire = queuev1.Misfire_MISFIRE_SKIP
	}
	if r.NextRunAt != nil {
		runs := []time.Time{*r.NextRunAt}
		if spec, err := parseSpec(r.Cron, r.TimeZone); err == nil {
			runs = spec.spacedFor(least).nextRuns(*r.NextRunAt, shownNextRuns)
		}
		for i := range runs {
			out.NextRuns = append(out.NextRuns, timestamp(&runs[i]))
		}
	}
	return out
}

// nextAfter is spec's first tick after now, nil when none is left.
func nextAfter(spec scheduleSpec, now time.Time) *time.Time {
	if n, ok := spec.after(now); ok {
		return &n
	}
	return nil
}

// zoneName stores an unset time zone as UTC.
func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// misfireName is m as stored; unset keeps def.
func misfireName(m queuev1.Misfire, def string) string {
	switch m {
	case queuev1.Misfire_MISFIRE_RUN_ONCE:
		return misfireRunOnce
	case queuev1.Misfire_MISFIRE_SKIP:
		return misfireSkip
	default:
		return def
	}
}
