// Package queue is the durable todo queue: Enqueue, Claim, Heartbeat,
// Complete, Fail, Release and their admin reads, backed by the todos table,
// plus the background loops that keep it healthy (lease reaper, retention),
// the schedules that enqueue todos on cron ticks with no leader (every node
// ticks; a conditional mark lets one win each tick), and the wake-ups that
// make long-poll claims return as soon as work arrives.
//
// Authorization has two layers. The auth interceptor has already checked the
// scope each RPC needs (pkg/auth/policy.go). This package decides which rows
// the caller may touch, in SQL (internal/store/*.sql): every statement
// takes the caller's human (tenant), and a credential that acts as an agent
// additionally reaches only todos addressed to that agent or to no agent
// (unaddressed work is the queue's shared pool, and an agent must be able to
// claim it). A todo out of reach is NOT_FOUND, exactly like a missing one.
//
// Lease tokens: a claim draws a random token for each todo it leases and
// hands it out in the ClaimResponse only (no other answer, event or listing
// carries it); Heartbeat, Complete, Fail and Release match
// (id, lease_token, a live lease) in the same UPDATE that changes the row,
// so a stale or guessed token changes nothing and gets FAILED_PRECONDITION.
// An ack retried after it committed is recognised and answered already.
package queue

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Name is the service's name in `switchboard serve` and in logs.
const Name = "queue"

// Server implements queuev1.QueueServiceServer.
type Server struct {
	queuev1.UnimplementedQueueServiceServer

	log   *zap.Logger
	store *store.Store
	opts  Options

	// todos writes new todos and announces every committed change that
	// gives a queue work; waiters is its registry of waiting claims.
	todos   *Todos
	waiters *waiters
	// ownNotifier is the private notifier when Options.Notifier was nil
	// (nil otherwise: the node runs the shared one).
	ownNotifier *pgnotify.Notifier
	wake        lifecycle.Component
	reaper      *lifecycle.Loop
	pruner      *lifecycle.Loop
	schedules   *lifecycle.Loop
	depths      *lifecycle.Loop

	// afterClaim is a test seam run between a claim and its response.
	afterClaim func()
	// claimAttempted is a test seam run after each claim statement of a
	// long-poll Claim (how often a waiting claim goes to the database).
	claimAttempted func()

	// completes and heartbeats merge concurrent single-item Complete and
	// Heartbeat calls into batch statements.
	completes  *merger[store.CompleteItem, store.CompleteResult]
	heartbeats *merger[store.HeartbeatItem, store.HeartbeatResult]
	// rateWatch holds, per queue, the watch one waiting claim keeps on a
	// rate limit's next token (tokenWait).
	rateWatch sync.Map
	// rateWarned holds the queues (queueKey) whose out-of-bounds stored
	// rate this node has reported (RepairOnce), so it says so once.
	rateWarned sync.Map
}

// New returns the queue service over pool. opts may be omitted or zero:
// every zero field takes its default (see Options). The variadic form keeps
// older two-argument callers compiling; pass at most one Options.
func New(log *zap.Logger, pool *pgxpool.Pool, opts ...Options) *Server {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o = o.withDefaults()
	s := &Server{log: log, opts: o}
	s.useNotifier(log, pool)
	s.wake = s.wakeComponent()
	s.reaper = lifecycle.NewLoop(Name+"-reaper", o.ReapInterval, lifecycle.Warned(log, "lease reaper failed", s.ReapOnce))
	s.pruner = lifecycle.NewLoop(Name+"-retention", o.RetentionInterval, lifecycle.Warned(log, "todo retention failed", s.PruneOnce))
	s.schedules = lifecycle.NewLoop(Name+"-schedules", o.ScheduleInterval, lifecycle.Warned(log, "schedule ticker failed", s.TickSchedules))
	s.depths = lifecycle.NewLoop(Name+"-depth-gauges", o.DepthInterval, lifecycle.Warned(log, "queue depth gauges failed", s.SampleDepths))
	s.completes = newMerger(Name+"-complete-merger", o, s.store.CompleteTodos,
		func(it store.CompleteItem) int64 { return it.ID })
	s.heartbeats = newMerger(Name+"-heartbeat-merger", o, s.store.Heartbeat,
		func(it store.HeartbeatItem) int64 { return it.ID })
	return s
}

// Todos is the writer the service creates todos through (Options.Todos, or
// its own).
func (s *Server) Todos() *Todos { return s.todos }

// Drain makes every waiting long-poll Claim return now, empty-handed, and
// every later one not wait: the node calls it when it starts draining,
// after the shutdown delay, so no Claim holds the drain of RPCs up.
func (s *Server) Drain() { s.waiters.close() }

// Desc is the gRPC service descriptor Server implements.
func (s *Server) Desc() *grpc.ServiceDesc { return &queuev1.QueueService_ServiceDesc }

// Components are the service's background parts, to run in the node's
// lifecycle group in this order: the private notifier when Options.Notifier
// was nil (it sends the coalesced pg_notify after enqueue commits and holds
// the listen connection that wakes this node's long-poll claims; with a
// shared one the node runs it, before these), the wake-up release on
// shutdown, the lease reaper, retention, the schedule ticker, and the mergers that batch
// concurrent single-item Complete and Heartbeat calls. The RPCs work
// without them (claims still poll, tests call ReapOnce/PruneOnce/TickSchedules, Complete
// and Heartbeat run one statement each), but a node must run them.
func (s *Server) Components() []lifecycle.Component {
	var out []lifecycle.Component
	if s.ownNotifier != nil {
		out = append(out, s.ownNotifier)
	}
	out = append(out, s.wake, s.reaper, s.pruner, s.schedules, s.completes, s.heartbeats)
	if s.opts.Metrics != nil {
		out = append(out, s.depths)
	}
	return out
}

// caller returns the tenant (and agent) the request's queries run for.
func caller(ctx context.Context) (store.Caller, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return store.Caller{}, fmt.Errorf("queue: no verified principal: %w", apierr.ErrUnauthenticated)
	}
	return store.Caller{HumanID: p.HumanID, AgentID: p.AgentID}, nil
}

// callerOf is caller for a request about one todo: its id must be ≥ 1.
func callerOf(ctx context.Context, id int64) (store.Caller, error) {
	c, err := caller(ctx)
	if err == nil && id <= 0 {
		err = invalid("id", "must be ≥ 1")
	}
	return c, err
}

// callerIn is caller for a request about one queue, which it must name.
func callerIn(ctx context.Context, queue string) (store.Caller, error) {
	c, err := caller(ctx)
	if err == nil && queue == "" {
		err = invalid("queue", "is required")
	}
	return c, err
}

// rendered renders a todo a read returned, unless it returned an error.
func (s *Server) rendered(t store.Todo, err error) (*queuev1.Todo, error) {
	if err != nil {
		return nil, err
	}
	return s.todoProto(t), nil
}

// changed reports a committed change of a todo as kind and renders the
// todo: what the RPCs that change one answer.
func (s *Server) changed(kind EventKind) func(store.Todo, error) (*queuev1.Todo, error) {
	return s.acked(kind, false)
}

// acked is changed for an ack that may be a retry: an ack that had already
// been applied (already) changed nothing and emits nothing.
func (s *Server) acked(kind EventKind, already bool) func(store.Todo, error) (*queuev1.Todo, error) {
	return func(t store.Todo, err error) (*queuev1.Todo, error) {
		if err == nil && !already {
			s.todos.emit(kind, t)
		}
		return s.rendered(t, err)
	}
}

// invalid is INVALID_ARGUMENT for one field.
func invalid(field, description string) error {
	return apierr.Invalid(apierr.FieldViolation{Field: field, Description: description})
}
