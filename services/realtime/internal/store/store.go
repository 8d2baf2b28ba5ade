// Package store is the realtime service's data access: durable events (insert,
// the node reader's scan, a subscriber's replay, retention) and presence rows.
// Notifications are pkg/pgnotify's.
package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboard/switchboard/pkg/settings"
	"github.com/switchboard/switchboard/services/realtime/internal/store/dbsqlc"
)

// Store runs the realtime queries over a pool.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	// pruner applies retention.realtime_events; it remembers what it learned
	// of each tenant between passes.
	pruner *settings.Pruner
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store {
	s := &Store{pool: pool, q: dbsqlc.New()}
	s.pruner = settings.NewPruner(settings.RetentionRealtimeEvents, settings.DefaultRetentionRealtimeEvents, retention{s})
	return s
}

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

// Stored is where a durable event went: its id and commit-time stamp.
type Stored struct {
	ID        int64
	CreatedAt time.Time
}

// Insert stores durable events in one statement (all or none) and returns
// where each went, in events' order. Ids ascend in events' order.
func (s *Store) Insert(ctx context.Context, events []Event) ([]Stored, error) {
	p := dbsqlc.EventInsertParams{
		HumanIds: make([]uuid.UUID, len(events)), Channels: make([]string, len(events)), Kinds: make([]string, len(events)),
		Payloads: make([]json.RawMessage, len(events)), PublishedBys: make([]string, len(events)),
	}
	for i, e := range events {
		p.HumanIds[i], p.Channels[i], p.Kinds[i], p.Payloads[i], p.PublishedBys[i] = e.HumanID, e.Channel, e.Kind, e.Payload, e.PublishedBy
	}
	rows, err := s.q.EventInsert(ctx, s.pool, p)
	if err != nil {
		return nil, fmt.Errorf("insert realtime events: %w", err)
	}
	if len(rows) != len(events) {
		return nil, fmt.Errorf("insert realtime events: %d rows for %d events", len(rows), len(events))
	}
	// RETURNING's order is not promised; the ids' is (the statement draws
	// them in events' order), so the i-th smallest id is events[i]'s.
	slices.SortFunc(rows, func(a, b dbsqlc.EventInsertRow) int { return cmp.Compare(a.ID, b.ID) })
	out := make([]Stored, len(rows))
	for i, r := range rows {
		out[i] = Stored{ID: r.ID, CreatedAt: r.CreatedAt}
	}
	return out, nil
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
