//go:build integration

package queue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/queue"
)

// dueAt moves a schedule's next tick to the database's now plus offset (a
// whole second, as the ticks are), instead of waiting for it.
func (e *env) dueAt(t *testing.T, id string, offset time.Duration) time.Time {
	t.Helper()
	var at time.Time
	require.NoError(t, e.pool.QueryRow(t.Context(),
		`UPDATE schedules SET next_run_at = date_trunc('second', now()) + $2::interval WHERE id = $1 RETURNING next_run_at`,
		id, offset.String()).Scan(&at))
	return at
}

// scheduleTodos are the ticks (unix seconds) of the todos schedule id made.
func (e *env) scheduleTodos(t *testing.T, id string) []int64 {
	t.Helper()
	rows, err := e.pool.Query(t.Context(),
		`SELECT split_part(dedupe_key, ':', 3)::bigint FROM todos WHERE dedupe_key LIKE 'schedule:' || $1 || ':%' ORDER BY 1`, id)
	require.NoError(t, err)
	var out []int64
	for rows.Next() {
		var n int64
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestScheduleFiresTheTemplate: a due tick makes one todo from the template
// (queue, kind, payload, priority, agent), keyed by the tick, reported as
// todo.enqueued then schedule.fired, and shown as the schedule's last run;
// a second pass before the next tick makes none.
func TestScheduleFiresTheTemplate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []queue.TodoEvent
	e := newEnv(t, queue.Options{OnChange: func(ev queue.TodoEvent) { mu.Lock(); events = append(events, ev); mu.Unlock() }})
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "tick", Cron: "@every 1h", Template: &queuev1.EnqueueRequest{
		Queue: "jobs", Kind: "sync", Payload: payload(t, map[string]any{"full": true}), Priority: proto.Int32(0),
		AgentId: e.agent.String(), MaxAttempts: 3,
	}})
	at := e.dueAt(t, s.GetId(), 0)
	n, err := e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "the next tick is an hour away")

	todos := e.claim(t, "jobs", 10)
	require.Len(t, todos, 1)
	td := todos[0]
	require.Equal(t, "sync", td.GetKind())
	require.Equal(t, map[string]any{"full": true}, td.GetPayload().AsMap())
	require.Equal(t, int32(0), td.GetPriority())
	require.Equal(t, int32(3), td.GetMaxAttempts())
	require.Equal(t, e.agent.String(), td.GetAgentId())
	require.Equal(t, queue.ScheduleTickKey(uuid.MustParse(s.GetId()), at), td.GetDedupeKey())

	got, err := e.srv.GetSchedule(e.owner(t), &queuev1.GetScheduleRequest{Id: s.GetId()})
	require.NoError(t, err)
	require.Equal(t, td.GetId(), got.GetSchedule().GetLastTodoId())
	require.True(t, at.Equal(got.GetSchedule().GetLastRunAt().AsTime()))
	require.Equal(t, time.Hour, got.GetSchedule().GetNextRuns()[0].AsTime().Sub(at), "@every counts from the previous tick")

	mu.Lock()
	defer mu.Unlock()
	var kinds []queue.EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
		if ev.Kind == queue.EventScheduleFired {
			require.Equal(t, s.GetId(), ev.ScheduleID.String())
			require.Equal(t, td.GetId(), ev.TodoID)
			require.True(t, at.Equal(ev.Tick))
		}
	}
	require.Equal(t, []queue.EventKind{queue.EventEnqueued, queue.EventScheduleFired, queue.EventClaimed}, kinds)
}

// TestScheduleMisfire: after an outage longer than the grace (next tick an
// hour back), run_once makes exactly one todo, for the latest missed tick,
// and skip makes none; both move the next tick past now. Ticks missed by
// less than the grace are each fired, oldest first, in one pass.
func TestScheduleMisfire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 1) // per-second ticks
	mk := func(name string, m queuev1.Misfire) string {
		return e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: name, Cron: "@every 1s", Misfire: m, Template: &queuev1.EnqueueRequest{Queue: "q"}}).GetId()
	}
	once, skip, recent := mk("once", queuev1.Misfire_MISFIRE_UNSPECIFIED), mk("skip", queuev1.Misfire_MISFIRE_SKIP), mk("recent", queuev1.Misfire_MISFIRE_SKIP)
	e.dueAt(t, once, -time.Hour)
	e.dueAt(t, skip, -time.Hour)
	from := e.dueAt(t, recent, -5*time.Second)
	before := e.dbNow(t)
	_, err := e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	now := e.dbNow(t)

	// One todo for the whole outage, stamped with the latest missed tick;
	// a pass slower than a second (a loaded machine) also fires the ticks
	// that came due during it, each on time: consecutive seconds, none
	// from the outage before.
	ticks := e.scheduleTodos(t, once)
	require.NotEmpty(t, ticks, "run_once: a todo for the outage")
	require.GreaterOrEqual(t, ticks[0], before.Unix()-1, "run_once: stamped with the latest missed tick, not an older one")
	for i, tick := range ticks {
		require.Equal(t, ticks[0]+int64(i), tick, "after the outage's one todo, only the ticks due since")
	}
	require.LessOrEqual(t, ticks[len(ticks)-1], now.Unix(), "no tick from the future")
	skipped := e.scheduleTodos(t, skip)
	require.LessOrEqual(t, len(skipped), int(now.Unix()-before.Unix()), "skip: nothing for the outage, only ticks due since")
	for _, tick := range skipped {
		require.Greater(t, tick, before.Unix(), "skip: nothing for the outage")
	}
	caught := e.scheduleTodos(t, recent)
	require.GreaterOrEqual(t, len(caught), 6, "every tick within the grace, none skipped")
	for i, tick := range caught {
		require.Equal(t, from.Unix()+int64(i), tick)
	}
	for _, id := range []string{once, skip, recent} {
		got, err := e.srv.GetSchedule(e.owner(t), &queuev1.GetScheduleRequest{Id: id})
		require.NoError(t, err)
		require.True(t, got.GetSchedule().GetNextRuns()[0].AsTime().After(now.Add(-time.Second)))
	}
}

// TestSchedulePausedNeverFires: a paused schedule fires nothing, even with
// a tick left due in its row; resuming computes the next tick from now.
func TestSchedulePausedNeverFires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 1)
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "p", Cron: "@every 1s", Paused: true, Template: &queuev1.EnqueueRequest{Queue: "q"}})
	require.Empty(t, s.GetNextRuns())
	e.dueAt(t, s.GetId(), -time.Minute) // as if a tick were pending when it was paused
	for range 3 {
		n, err := e.srv.TickSchedules(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)
	}
	require.Empty(t, e.scheduleTodos(t, s.GetId()))
	up, err := e.srv.UpdateSchedule(e.owner(t), &queuev1.UpdateScheduleRequest{Id: s.GetId(), Paused: proto.Bool(false)})
	require.NoError(t, err)
	require.True(t, up.GetSchedule().GetNextRuns()[0].AsTime().After(e.dbNow(t).Add(-time.Second)))
}

// TestScheduleTickersRace: nine tickers on three servers (nodes) racing to
// fire the same due ticks of five schedules make exactly one todo per tick,
// with no tick missed. The conditional mark alone must decide (the dedupe
// key is only the second fence): a trigger of the test's own records every
// applied mark, and no next_run_at value may be marked twice.
func TestScheduleTickersRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setSetting(t, settings.QueueSchedules, "min_interval_seconds", 1)
	due := map[string]time.Time{}
	for i := range 5 {
		s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: fmt.Sprintf("race-%d", i), Cron: "@every 1s", Template: &queuev1.EnqueueRequest{Queue: "q"}})
		due[s.GetId()] = e.dueAt(t, s.GetId(), -5*time.Second)
	}
	_, err := e.pool.Exec(t.Context(), `
		CREATE TABLE marks (schedule uuid, expected timestamptz);
		CREATE FUNCTION record_mark() RETURNS trigger LANGUAGE plpgsql AS
		  $$BEGIN INSERT INTO marks VALUES (OLD.id, OLD.next_run_at); RETURN NEW; END$$;
		CREATE TRIGGER record_mark AFTER UPDATE OF next_run_at ON schedules FOR EACH ROW EXECUTE FUNCTION record_mark();`)
	require.NoError(t, err)
	servers := []*queue.Server{e.srv, queue.New(zap.NewNop(), e.pool), queue.New(zap.NewNop(), e.pool)}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Go(func() {
			<-start
			_, err := servers[i%3].TickSchedules(t.Context())
			require.NoError(t, err)
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for id, from := range due {
		ticks := e.scheduleTodos(t, id)
		require.GreaterOrEqual(t, len(ticks), 6)
		for i, tick := range ticks {
			require.Equal(t, from.Unix()+int64(i), tick, "schedule %s: ticks in a row, each once", id)
		}
		total += len(ticks)
	}
	require.Equal(t, int64(total), e.count(t, `SELECT count(*) FROM todos`))
	require.Zero(t, e.count(t, `SELECT count(*) FROM (SELECT 1 FROM marks GROUP BY schedule, expected HAVING count(*) > 1) AS twice`),
		"a tick marked by two tickers")
	require.Equal(t, int64(total), e.count(t, `SELECT count(*) FROM marks`), "one applied mark per todo")
}

// TestScheduleTodoCarriesItsConcurrencyKey: the template's concurrency_key
// is the todo's, and in a limited queue the key gets its counter row, with
// the limits of the key pattern it matches, in the fire statement itself:
// the todo is claimable at once (not after the repair pass) and counted.
func TestScheduleTodoCarriesItsConcurrencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.srv.SetQueueLimits(e.owner(t), &queuev1.SetQueueLimitsRequest{
		Queue: "keyed", KeyMaxRunning: 5, KeyPatterns: []*queuev1.KeyPattern{{Pattern: "cust-*", MaxRunning: 1}},
	})
	require.NoError(t, err)
	s := e.createSchedule(t, &queuev1.CreateScheduleRequest{Name: "per-customer", Cron: "@every 1h", Template: &queuev1.EnqueueRequest{
		Queue: "keyed", Kind: "sync", ConcurrencyKey: "cust-7",
	}})
	e.dueAt(t, s.GetId(), 0)
	n, err := e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.EqualValues(t, 1, e.count(t, `SELECT max_running FROM queue_keys WHERE key = 'cust-7'`),
		"the key row exists with the pattern's limit before any repair")

	got := e.claim(t, "keyed", 10)
	require.Len(t, got, 1)
	require.Equal(t, "cust-7", got[0].GetConcurrencyKey())
	require.EqualValues(t, 1, e.count(t, `SELECT running FROM queue_keys WHERE key = 'cust-7'`))

	e.dueAt(t, s.GetId(), -30*time.Second) // another tick (another second); its todo waits: cust-7 is at its pattern's limit of 1
	n, err = e.srv.TickSchedules(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, e.claim(t, "keyed", 10))
}
