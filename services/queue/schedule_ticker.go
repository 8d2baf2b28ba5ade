package queue

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// scheduleBatch bounds one read of due schedules.
const scheduleBatch = 100

// TickSchedules runs one schedule pass now and returns how many todos it
// made. Every node runs it (Options.ScheduleInterval): each due tick is
// fired by one statement whose conditional mark only the first ticker
// wins, so the passes of all nodes together make one todo per tick. A pass
// reads again while a fired schedule's next tick is already due (catching
// up on ticks missed within the grace period) or a full batch was read, at
// most MaxBatchesPerTick times. A schedule whose spec ticks more often than
// the setting queue.schedules.min_interval_seconds allows (stored before
// the minimum was raised) ticks at most that often (spacedFor).
func (s *Server) TickSchedules(ctx context.Context) (int, error) {
	fired := 0
	var errs []error
	var least time.Duration // read once a pass, when something is due
	for range s.opts.MaxBatchesPerTick {
		due, err := s.store.DueSchedules(ctx, scheduleBatch)
		if err != nil {
			return fired, err
		}
		if len(due) > 0 && least == 0 {
			if least, err = s.store.MinScheduleInterval(ctx); err != nil {
				return fired, err
			}
		}
		again := len(due) == scheduleBatch
		for _, d := range due {
			todo, p, err := s.fireDue(ctx, d, least)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if todo != nil {
				fired++
			}
			again = again || (p.hasNext && !p.next.After(d.Now))
		}
		if !again || ctx.Err() != nil {
			break
		}
	}
	return fired, errors.Join(errs...)
}

// fireDue plans and fires one due schedule's tick under the minimum
// interval least and, when it made a todo, announces it like any enqueue.
func (s *Server) fireDue(ctx context.Context, d store.DueSchedule, least time.Duration) (*store.Todo, tickPlan, error) {
	spec, err := parseSpec(d.Cron, d.TimeZone)
	if err != nil { // stored only after the same check: cannot happen unless the parser changed
		return nil, tickPlan{}, err
	}
	spec = spec.spacedFor(least)
	p := spec.plan(d.NextRunAt, d.Now, d.Misfire)
	t := store.Tick{ID: d.ID, Expected: d.NextRunAt, Fire: p.fire, At: p.at}
	if p.hasNext {
		t.Next = &p.next
	}
	todo, err := s.store.FireTick(ctx, t)
	if err != nil || todo == nil {
		return nil, p, err
	}
	s.todos.emit(EventEnqueued, *todo)
	s.todos.emitEvent(TodoEvent{
		Kind: EventScheduleFired, TodoID: todo.ID, HumanID: todo.HumanID, Queue: todo.Queue, AgentID: todo.AgentID,
		State: todo.State, ScheduleID: d.ID, Tick: p.at,
	})
	s.todos.announce(todo.HumanID, todo.Queue, 1)
	if d.Now.Sub(d.NextRunAt) > misfireGrace {
		s.log.Info("schedule misfired: one todo for the missed ticks", zap.Stringer("schedule", d.ID), zap.Time("tick", p.at))
	}
	return todo, p, nil
}

// ScheduleTickKey is the dedupe key of the todo a schedule made for the
// tick at (whole seconds): "schedule:<id>:<unix seconds>".
func ScheduleTickKey(id uuid.UUID, at time.Time) string {
	return "schedule:" + id.String() + ":" + strconv.FormatInt(at.Unix(), 10)
}
