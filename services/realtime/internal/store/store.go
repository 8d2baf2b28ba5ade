// Package store is the realtime service's data access: durable events (insert,
// the node reader's scan, a subscriber's replay, retention) and presence rows.
// Notifications are pkg/pgnotify's.
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/services/realtime/internal/store/dbsqlc"
)

// Store runs the realtime queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: dbsqlc.New()} }

// Event is a durable event row.
type Event struct {
	ID          int64
	HumanID     uuid.UUID
	Channel     string
	Kind        string
	Payload     json.RawMessage
	PublishedBy string
	CreatedAt   time.Time
}

// Insert stores a durable event and returns its id and time (committed).
func (s *Store) Insert(ctx context.Context, e Event) (int64, time.Time, error) {
	r, err := s.q.EventInsert(ctx, s.pool, dbsqlc.EventInsertParams{
		HumanID: e.HumanID, Channel: e.Channel, Kind: e.Kind, Payload: e.Payload, PublishedBy: e.PublishedBy,
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("insert realtime event: %w", err)
	}
	return r.ID, r.CreatedAt, nil
}

// After returns up to max durable events of every tenant with id > after.
func (s *Store) After(ctx context.Context, after int64, max int) ([]Event, error) {
	rows, err := s.q.EventsAfter(ctx, s.pool, dbsqlc.EventsAfterParams{AfterID: after, MaxRows: int32(max)})
	if err != nil {
		return nil, fmt.Errorf("read realtime events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, HumanID: r.HumanID, Channel: r.Channel, Kind: r.Kind, Payload: r.Payload, PublishedBy: r.PublishedBy, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// MaxID is the newest durable id (0 when none).
func (s *Store) MaxID(ctx context.Context) (int64, error) {
	id, err := s.q.MaxEventID(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("newest realtime event: %w", err)
	}
	return id, nil
}

// publishersInProgress is hand-written because sqlc's catalog has no
// pg_locks view. The key is the one EventInsert takes (queries.sql).
const publishersInProgress = `SELECT l.virtualtransaction::text
FROM pg_locks AS l
WHERE l.locktype = 'advisory'
  AND l.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())
  AND l.classid = 21314 AND l.objid = 21076 AND l.objsubid = 2
  AND l.granted`

// PublishersInProgress returns the virtual transaction ids of the durable
// publishes in progress right now (EventInsert holds the lock from before
// its id is allocated until it ends).
func (s *Store) PublishersInProgress(ctx context.Context) (map[string]struct{}, error) {
	rows, err := s.pool.Query(ctx, publishersInProgress)
	if err != nil {
		return nil, fmt.Errorf("publishers in progress: %w", err)
	}
	vxids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("publishers in progress: %w", err)
	}
	out := make(map[string]struct{}, len(vxids))
	for _, v := range vxids {
		out[v] = struct{}{}
	}
	return out, nil
}

// Replay returns up to max of human's events on channels with after < id <= upto.
func (s *Store) Replay(ctx context.Context, human uuid.UUID, channels []string, after, upto int64, max int) ([]Event, error) {
	rows, err := s.q.EventsReplay(ctx, s.pool, dbsqlc.EventsReplayParams{
		HumanID: human, Channels: channels, AfterID: after, Upto: upto, MaxRows: int32(max),
	})
	if err != nil {
		return nil, fmt.Errorf("replay realtime events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, HumanID: human, Channel: r.Channel, Kind: r.Kind, Payload: r.Payload, PublishedBy: r.PublishedBy, CreatedAt: r.CreatedAt}
	}
	return out, nil
}
