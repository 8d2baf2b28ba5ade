package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// BatchSender is what a pipeline sends on: a pool, a connection, or a
// transaction.
type BatchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Pipeline gathers the statements of several owners into one round trip:
// each owner runs its sqlc ":batch…" statements over the pipeline, as over
// any DBTX, which only queues them; Send then sends them together. On a
// pool or connection they run in one implicit transaction, so they commit
// together or not at all (a failing one aborts the rest); on a pgx.Tx,
// inside that transaction. Ingest stores events and the queue their todos
// this way: two owners' statements, one commit, one round trip.
//
// A later statement sees the rows an earlier one wrote, but cannot take
// their values as parameters (those are sent with it): it finds them in
// SQL. Results are read after Send, in the order the statements were
// queued. A Pipeline is for one use by one goroutine.
type Pipeline struct {
	db      BatchSender
	batch   pgx.Batch
	results pgx.BatchResults
	queued  int // statements queued
	read    int // statements whose results have been read
	err     error
}

// NewPipeline returns an empty pipeline that will send on db.
func NewPipeline(db BatchSender) *Pipeline { return &Pipeline{db: db} }

// errNotQueued answers a statement run over a pipeline other than through
// SendBatch: a pipeline only queues.
var errNotQueued = errors.New("postgres: a pipeline runs only :batch statements")

// SendBatch queues b's statements and returns their results, readable once
// the pipeline is sent. It is sqlc's batch entry point.
func (p *Pipeline) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	if p.results != nil {
		return &queued{p: p, err: errors.New("postgres: pipeline already sent")}
	}
	p.batch.QueuedQueries = append(p.batch.QueuedQueries, b.QueuedQueries...)
	p.queued += len(b.QueuedQueries)
	return &queued{p: p}
}

// Exec implements sqlc's DBTX; a pipeline only queues (see SendBatch).
func (p *Pipeline) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errNotQueued
}

// Query implements sqlc's DBTX; a pipeline only queues (see SendBatch).
func (p *Pipeline) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, errNotQueued }

// QueryRow implements sqlc's DBTX; a pipeline only queues (see SendBatch).
func (p *Pipeline) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{errNotQueued} }

// Send sends every queued statement in one round trip. The statements'
// errors are reported through their results, in order.
func (p *Pipeline) Send(ctx context.Context) {
	if p.results == nil {
		p.results = p.db.SendBatch(ctx, &p.batch)
	}
}

// Close reads what is left unread and releases the connection; it returns
// the first error of the statements not read through their results. Safe
// before Send (nothing was sent) and more than once.
func (p *Pipeline) Close() error {
	if p.results == nil {
		return nil
	}
	err := p.results.Close()
	p.read = p.queued
	return errors.Join(p.err, err)
}

// next hands out the real results for the next statement in queue order.
func (p *Pipeline) next() (pgx.BatchResults, error) {
	switch {
	case p.results == nil:
		return nil, errors.New("postgres: pipeline results read before Send")
	case p.read >= p.queued:
		return nil, fmt.Errorf("postgres: pipeline has %d results, all read", p.queued)
	}
	p.read++
	return p.results, nil
}

// queued is the results of one owner's statements in a pipeline: reading
// them reads the pipeline's next results. Closing it closes nothing (the
// pipeline's Close does), so an owner's generated code may close its
// results as it likes.
type queued struct {
	p   *Pipeline
	err error
}

func (q *queued) Exec() (pgconn.CommandTag, error) {
	r, err := q.results()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.Exec()
}

func (q *queued) Query() (pgx.Rows, error) {
	r, err := q.results()
	if err != nil {
		return nil, err
	}
	return r.Query()
}

func (q *queued) QueryRow() pgx.Row {
	r, err := q.results()
	if err != nil {
		return errRow{err}
	}
	return r.QueryRow()
}

func (q *queued) Close() error { return nil }

// Tx implements pgx.BatchResults: a pipeline begins no transaction of its own.
func (q *queued) Tx() pgx.Tx { return nil }

func (q *queued) results() (pgx.BatchResults, error) {
	if q.err != nil {
		return nil, q.err
	}
	return q.p.next()
}

// errRow is a pgx.Row that only reports err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
