// Package store is the ingest service's data access: events and their todos
// stored in one statement, deduplicated by the sender's delivery id and,
// where that id is not signed, by the body's SHA-256 within the dedup
// window; and the endpoint lookup the webhook edge verifies against.
package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// Store runs the ingest queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	// write runs the event write statement (EventIngestBatch): the node's
	// pool of generic-plan sessions when it has one, else pool.
	write *pgxpool.Pool
	q     *dbsqlc.Queries
}

// New returns a store over pool. write, when not nil, runs the write
// statement every event takes; its sessions should use
// plan_cache_mode=force_generic_plan (the node's hot pool): the statement's
// custom plan always looks cheaper, since it sees the batch's arrays, so
// PostgreSQL would otherwise plan it again on every execution.
func New(pool, write *pgxpool.Pool) *Store {
	if write == nil {
		write = pool
	}
	return &Store{pool: pool, write: write, q: dbsqlc.New()}
}

// Event is one inbound event to store.
type Event struct {
	HumanID     uuid.UUID
	Source      string // dedup scope: "endpoint:<uuid>", "adapter:<uuid>" or "publish"
	EndpointID  *uuid.UUID
	AdapterID   *uuid.UUID
	PublishedBy *uuid.UUID
	Topic       string
	// DeliveryID is the sender's id for the delivery ("" = none); a second
	// event with the same id from the same source is a duplicate.
	DeliveryID string
	// BodySHA256, when set, also makes a second event with the same body
	// from the same source within the dedup window a duplicate: set it when
	// DeliveryID is missing or not covered by the signature.
	BodySHA256     []byte
	Headers        map[string]string
	ContentType    string
	Payload        []byte
	VerifiedScheme string
	SourceIP       *netip.Addr
}

// Target is where the event's todo goes; an empty Queue means no todo.
type Target struct {
	Queue   string
	AgentID *uuid.UUID
	Kind    string
	// Payload is the todo's payload (a JSON object); nil means a reference
	// to the event ({"event_id": …, "source": …}).
	Payload []byte
}

// Stored is the outcome of Ingest.
type Stored struct {
	// Duplicate: the event was stored before; nothing was written.
	Duplicate  bool
	EventID    int64 // 0 for a duplicate
	TodoID     int64 // 0 for a duplicate
	ReceivedAt time.Time
}

// Ingest stores e and its todo, or recognises a duplicate and writes
// nothing: one statement (IngestBatch of one), or, when e needs body-hash
// dedup, that statement in a transaction behind the body's advisory lock.
// The caller acknowledges the sender only after it returned without error.
func (s *Store) Ingest(ctx context.Context, e Event, t Target) (Stored, error) {
	if e.BodySHA256 == nil {
		res, err := s.IngestBatch(ctx, []Event{e}, t)
		if err != nil {
			return Stored{}, err
		}
		return res[0], nil
	}
	var out Stored
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		dup, err := s.recentBody(ctx, tx, e)
		if err != nil || dup {
			out.Duplicate = dup
			return err
		}
		res, err := s.ingestBatch(ctx, tx, []Event{e}, t)
		if err != nil {
			return err
		}
		out = res[0]
		return nil
	})
	if err != nil {
		return Stored{}, err
	}
	return out, nil
}

// recentBody takes the body's advisory lock (held to the end of tx) and
// reports whether the same body from the same source arrived within the
// dedup window.
func (s *Store) recentBody(ctx context.Context, tx pgx.Tx, e Event) (bool, error) {
	if err := s.q.LockBodyHash(ctx, tx, dbsqlc.LockBodyHashParams{Source: e.Source, BodySha256: e.BodySHA256}); err != nil {
		return false, fmt.Errorf("ingest: lock body hash: %w", err)
	}
	dedup, err := settings.Read(ctx, tx, settings.IngestDedup, settings.DefaultDedup)
	if err != nil {
		return false, fmt.Errorf("ingest: %w", err)
	}
	_, err = s.q.EventRecentByBody(ctx, tx, dbsqlc.EventRecentByBodyParams{
		HumanID: e.HumanID, Source: e.Source, BodySha256: e.BodySHA256, WindowSeconds: float64(dedup.WindowSeconds),
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("ingest: recent body: %w", err)
	}
	return true, nil
}

// Notify wakes other nodes' long-poll claims of queue (best effort, after
// the commit).
func (s *Store) Notify(ctx context.Context, human uuid.UUID, queue string) error {
	return s.q.QueueNotify(ctx, s.pool, human.String()+":"+queue)
}
