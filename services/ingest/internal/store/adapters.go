package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// AdapterRow is an enabled pull adapter to run.
type AdapterRow = dbsqlc.AdaptersToRunRow

// AdaptersToRun lists the enabled Redis Streams adapters.
func (s *Store) AdaptersToRun(ctx context.Context) ([]AdapterRow, error) {
	rows, err := s.q.AdaptersToRun(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("ingest: adapters to run: %w", err)
	}
	return rows, nil
}

// AdapterReport records an adapter's last run: lastError "" means healthy.
func (s *Store) AdapterReport(ctx context.Context, id uuid.UUID, lastError string) error {
	if err := s.q.AdapterReport(ctx, s.pool, dbsqlc.AdapterReportParams{ID: id, LastError: lastError}); err != nil {
		return fmt.Errorf("ingest: adapter report: %w", err)
	}
	return nil
}
