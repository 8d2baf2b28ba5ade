package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// Schedule is a row of schedules, the generated row type itself.
type Schedule = dbsqlc.Schedule

// ScheduleFields are a schedule's writable columns: what CreateSchedule
// sets and UpdateSchedule merges into.
type ScheduleFields struct {
	Name, Queue, Cron, TimeZone, Misfire string
	AgentID                              *uuid.UUID
	// Template is the normalized EnqueueRequest as proto JSON (proto names).
	Template []byte
	Paused   bool
	// NextRunAt is the first tick (nil while paused or when none is left).
	NextRunAt *time.Time
}

// scheduleConstraints name the field a schedule's constraint guards.
var scheduleConstraints = &apierr.Constraints{
	Checks: map[string]apierr.FieldViolation{
		"schedules_name_check":      {Field: "name", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
		"schedules_cron_check":      {Field: "cron", Description: "must be 1 to 255 characters"},
		"schedules_time_zone_check": {Field: "time_zone", Description: "must be 1 to 64 characters"},
		"schedules_template_check":  {Field: "template", Description: "must be a JSON object"},
		"schedules_misfire_check":   {Field: "misfire", Description: "must be run_once or skip"},
		"queue_name_check":          {Field: "template.queue", Description: "must match ^[a-z0-9][a-z0-9._-]{0,62}$"},
	},
	Uniques: map[string]string{"schedules_human_name_key": "a schedule with this name already exists"},
}

func scheduleErr(err error, op, what string) error {
	return apierr.FromPostgres(err, op, what, scheduleConstraints)
}

func scheduleName(id uuid.UUID) string { return "schedule " + id.String() }

// agentNotFound is the answer for a template agent that is not the tenant's.
func agentNotFound(id *uuid.UUID) error {
	return apierr.NotFound("template.agent_id: agent %s not found", id)
}

// Now is the database's clock, which schedule computations start from.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	now, err := s.q.ScheduleNow(ctx, s.pool)
	if err != nil {
		return time.Time{}, scheduleErr(err, "database clock", "clock")
	}
	return now, nil
}

// MinScheduleInterval is the setting queue.schedules.min_interval_seconds:
// the shortest gap a schedule's spec may put between two ticks, within the
// setting's own range (1 s to a day) whatever SQL stored.
func (s *Store) MinScheduleInterval(ctx context.Context) (time.Duration, error) {
	v, err := settings.Read(ctx, s.pool, settings.QueueSchedules, settings.DefaultSchedules)
	if err != nil {
		return 0, err
	}
	return min(max(v.MinInterval(), time.Second), 24*time.Hour), nil
}

// CreateSchedule stores a new schedule for the caller's tenant, which may
// hold at most the setting tenant.limits.max_schedules: every node ticks
// every tenant's schedules, so one tenant's thousands would delay the
// others' ticks. The count and the insert run under a per-tenant lock, so
// concurrent creations cannot pass the cap together.
func (s *Store) CreateSchedule(ctx context.Context, c Caller, f ScheduleFields) (Schedule, error) {
	var (
		rows []Schedule
		full bool
		held int64
		most int32
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.q.ScheduleLockTenant(ctx, tx, c.HumanID); err != nil {
			return err
		}
		limits, err := settings.Read(ctx, tx, settings.TenantLimits, settings.DefaultTenant)
		if err != nil {
			return err
		}
		// A value below the setting's shape (only SQL can store one) must
		// not refuse every schedule.
		most = max(1, limits.MaxSchedules)
		held, err = s.q.ScheduleCount(ctx, tx, c.HumanID)
		if err != nil || held >= int64(most) {
			full = err == nil
			return err
		}
		rows, err = s.q.ScheduleInsert(ctx, tx, dbsqlc.ScheduleInsertParams{
			HumanID: c.HumanID, Name: f.Name, Queue: f.Queue, AgentID: f.AgentID, Cron: f.Cron, TimeZone: f.TimeZone,
			Template: f.Template, Misfire: f.Misfire, Paused: f.Paused, NextRunAt: f.NextRunAt,
		})
		return err
	})
	switch {
	case err != nil:
		return Schedule{}, scheduleErr(err, "create schedule", "schedule")
	case full:
		return Schedule{}, apierr.TenantLimit(held, "schedules", "max_schedules", int64(most), "delete one first")
	case len(rows) == 0:
		return Schedule{}, agentNotFound(f.AgentID)
	}
	return rows[0], nil
}

// GetSchedule reads one of the caller's schedules.
func (s *Store) GetSchedule(ctx context.Context, c Caller, id uuid.UUID) (Schedule, error) {
	r, err := s.q.ScheduleGet(ctx, s.pool, dbsqlc.ScheduleGetParams{ID: id, HumanID: c.HumanID})
	return r, scheduleErr(err, "get schedule", scheduleName(id))
}

// ListSchedules returns up to limit of the caller's schedules named after
// after, by name.
func (s *Store) ListSchedules(ctx context.Context, c Caller, after string, limit int32) ([]Schedule, error) {
	rows, err := s.q.ScheduleList(ctx, s.pool, dbsqlc.ScheduleListParams{HumanID: c.HumanID, After: after, PageSize: limit})
	return rows, scheduleErr(err, "list schedules", "schedules")
}

// UpdateSchedule merges a change into one of the caller's schedules: merge
// gets the current row (locked) and the database's now, and returns the
// fields to write. The read, the merge and the write are one transaction,
// so concurrent updates apply one after the other and a tick that raced
// the update finds next_run_at moved and fires nothing.
func (s *Store) UpdateSchedule(ctx context.Context, c Caller, id uuid.UUID, merge func(cur Schedule, now time.Time) (ScheduleFields, error)) (Schedule, error) {
	var out Schedule
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := s.q.ScheduleGetForUpdate(ctx, tx, dbsqlc.ScheduleGetForUpdateParams{ID: id, HumanID: c.HumanID})
		if err != nil {
			return scheduleErr(err, "get schedule", scheduleName(id))
		}
		now, err := s.q.ScheduleNow(ctx, tx)
		if err != nil {
			return scheduleErr(err, "database clock", "clock")
		}
		f, err := merge(cur, now)
		if err != nil {
			return err
		}
		rows, err := s.q.ScheduleUpdate(ctx, tx, dbsqlc.ScheduleUpdateParams{
			ID: id, HumanID: c.HumanID, Name: f.Name, Queue: f.Queue, AgentID: f.AgentID, Cron: f.Cron,
			TimeZone: f.TimeZone, Template: f.Template, Misfire: f.Misfire, Paused: f.Paused, NextRunAt: f.NextRunAt,
		})
		if err != nil {
			return scheduleErr(err, "update schedule", scheduleName(id))
		}
		if len(rows) == 0 {
			return agentNotFound(f.AgentID)
		}
		out = rows[0]
		return nil
	})
	return out, err
}

// DeleteSchedule removes one of the caller's schedules.
func (s *Store) DeleteSchedule(ctx context.Context, c Caller, id uuid.UUID) error {
	n, err := s.q.ScheduleDelete(ctx, s.pool, dbsqlc.ScheduleDeleteParams{ID: id, HumanID: c.HumanID})
	return apierr.Affected(n, err, "delete schedule", scheduleName(id), scheduleConstraints)
}

// DueSchedule is a schedule whose tick is due, as a ticker read it.
type DueSchedule = dbsqlc.ScheduleDueRow

// DueSchedules reads up to limit due schedules of every tenant, oldest tick
// first, each with the database's now.
func (s *Store) DueSchedules(ctx context.Context, limit int32) ([]DueSchedule, error) {
	rows, err := s.q.ScheduleDue(ctx, s.pool, limit)
	return rows, scheduleErr(err, "due schedules", "schedules")
}

// Tick is one ticker's decision about a due schedule.
type Tick struct {
	ID uuid.UUID
	// Expected is the next_run_at the ticker read: the mark applies only
	// while the row still holds it.
	Expected time.Time
	// Fire says whether a todo is made, stamped At.
	Fire bool
	At   time.Time
	// Next is the new next_run_at (nil: no tick left).
	Next *time.Time
}

// FireTick applies t in one statement: the conditional mark and the todo.
// It returns the new todo, or nil when nothing was inserted: t fires none
// (a skipped misfire), another ticker (or an update) moved the schedule
// first, or the tick's todo already existed.
func (s *Store) FireTick(ctx context.Context, t Tick) (*Todo, error) {
	p := dbsqlc.ScheduleFireParams{
		ID: t.ID, Expected: t.Expected, Fire: t.Fire, Tick: t.At, NextRunAt: t.Next,
		DefaultMaxAttempts: settings.DefaultQueue.MaxAttempts,
	}
	if !t.Fire {
		p.Tick = t.Expected // unused; any valid timestamp
	}
	rows, err := s.q.ScheduleFire(ctx, s.pool, p)
	if err != nil || len(rows) == 0 {
		return nil, scheduleErr(err, "fire schedule", scheduleName(t.ID))
	}
	return &rows[0], nil
}
