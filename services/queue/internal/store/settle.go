package store

import (
	"context"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/postgres"
	"github.com/switchboard/switchboard/services/queue/internal/store/dbsqlc"
)

// action is how TodoSettle ends one todo's run (its SQL comment has what
// each does and which todo it matches).
type action string

// The actions of TodoSettle.
const (
	actComplete action = "complete"
	actFail     action = "fail"
	actRelease  action = "release"
	actCancel   action = "cancel"
	actExpire   action = "expire"
)

// settleItem is one todo TodoSettle ends the run of. Only its action's
// fields matter; the zero value of the others is what the statement
// ignores.
type settleItem struct {
	Lease
	action action
	// result is a completion's result (a JSON object, nil for none).
	result []byte
	// text is a failure's error or a cancellation's reason.
	text       string
	deadLetter bool
	// delay in seconds: a failure's wait before its retry (negative: the
	// attempt's backoff), a release's before the todo runs again (0: it
	// keeps its place).
	delay float64
}

// settleArgs are the statement-wide values of a settle: whose todos, and
// the failures' backoff and the reaper's expiry cap.
type settleArgs struct {
	Caller
	backoff     Backoff
	maxExpiries int32
}

// Settled is a todo whose run a settle ended: what an outcome and a
// lifecycle event need.
type Settled = dbsqlc.TodoSettleRow

// settle ends the runs of items in one statement (TodoSettle), passing them
// in lock order (inLockOrder); it returns the todos it matched, in no
// particular order.
func (s *Store) settle(ctx context.Context, db dbsqlc.DBTX, a settleArgs, items []settleItem) ([]Settled, error) {
	n := len(items)
	p := dbsqlc.TodoSettleParams{
		HumanID: a.HumanID, CallerAgentID: a.AgentID, MaxExpiries: a.maxExpiries,
		BackoffBaseSeconds: a.backoff.Base.Seconds(), BackoffCapSeconds: a.backoff.Cap.Seconds(),
		Ids: make([]int64, n), Tokens: make([]int64, n), Actions: make([]string, n), Results: make([]string, n),
		Errors: make([]string, n), DeadLetters: make([]bool, n), Delays: make([]float64, n), Jitters: make([]float64, n),
	}
	ls := postgres.Convert(items, func(it settleItem) Lease { return it.Lease })
	for i, at := range inLockOrder(ls) {
		it := items[at]
		p.Ids[i], p.Tokens[i], p.Actions[i], p.Results[i] = it.ID, it.Token, string(it.action), string(it.result)
		p.Errors[i], p.DeadLetters[i], p.Delays[i] = it.text, it.deadLetter, it.delay
		if it.action == actFail {
			p.Jitters[i] = rand.Float64() //nolint:gosec // jitter, not a secret
		}
	}
	return s.q.TodoSettle(ctx, db, p)
}

// settleOne settles one todo and reads it back as the settle left it, in
// one transaction: the answer of Fail, Release and Cancel is the todo, which
// TodoSettle does not return (see there). pgx.ErrNoRows when the item
// matched nothing.
func (s *Store) settleOne(ctx context.Context, db *pgxpool.Pool, a settleArgs, it settleItem) (Todo, error) {
	var t Todo
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := s.settle(ctx, tx, a, []settleItem{it})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return pgx.ErrNoRows
		}
		t, err = s.q.TodoGet(ctx, tx, dbsqlc.TodoGetParams{ID: it.ID, HumanID: a.HumanID, CallerAgentID: a.AgentID})
		return err
	})
	return t, err
}
