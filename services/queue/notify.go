package queue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/lifecycle"
	"github.com/switchboard/switchboard/pkg/pgnotify"
)

// notifyChannel carries wake-ups between nodes; the payload is a queueKey
// ("<human_id>:<queue>").
const notifyChannel = "switchboard_queue"

// useNotifier connects the service to the node's notifier (or, when the
// caller gave none, a private one over pool that Components then runs) and
// to the node's todo writer (or one of its own): committed changes that give
// a queue work mark it on the writer's coalescer, so a queue gets at most
// one notification per NotifyWindow however fast it is written, sent after
// the commit and never inside it; other nodes' notifications wake this
// node's waiters of that queue, and every (re)connect wakes all of them,
// since what was sent while the listen connection was down is lost.
func (s *Server) useNotifier(log *zap.Logger, pool *pgxpool.Pool) {
	n := s.opts.Notifier
	if n == nil {
		n = pgnotify.New(log, pool, pgnotify.Options{Name: Name + "-notifier"})
		s.ownNotifier = n
	}
	s.todos = s.opts.Todos
	if s.todos == nil {
		s.todos = NewTodos(pool, n, TodosOptions{HotPool: s.opts.HotPool, NotifyWindow: s.opts.NotifyWindow, OnChange: s.opts.OnChange, Metrics: s.opts.Metrics.QueueSeries()})
	}
	s.store, s.waiters = s.todos.store, s.todos.waiters
	err := n.Subscribe(notifyChannel, pgnotify.Subscriber{
		OnNotify: func(p string) {
			if k, ok := parseQueueKey(p); ok {
				s.waiters.wake(k)
			}
		},
		OnConnect: s.waiters.wakeAll,
	})
	if err != nil {
		// Only a wiring bug gets here (the node builds its services before
		// it starts the notifier), and New has no error to return.
		panic(fmt.Sprintf("queue: %v", err))
	}
}

// wakeComponent releases every waiting long-poll Claim on Stop, so a
// draining server does not hold them. It stops before the notifier (which
// starts first), so nothing wakes a waiter after that.
func (s *Server) wakeComponent() lifecycle.Component {
	return lifecycle.Func{ComponentName: Name + "-wake", OnStop: func(context.Context) error {
		s.waiters.close()
		return nil
	}}
}
