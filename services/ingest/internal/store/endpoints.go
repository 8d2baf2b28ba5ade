package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/services/ingest/internal/store/dbsqlc"
)

// ErrNoEndpoint means no endpoint has the slug.
var ErrNoEndpoint = errors.New("ingest: no such endpoint")

// Endpoint is a row of endpoints.
type Endpoint = dbsqlc.Endpoint

// Secret is one secret that verifies now: sealed (Key ID, Sealed) or
// hashed (Hash).
type Secret = dbsqlc.EndpointActiveSecretsRow

// EndpointBySlug returns the endpoint of slug (enabled or not), its
// unexpired secrets and its tenant's requests-per-second limit, or
// ErrNoEndpoint.
func (s *Store) EndpointBySlug(ctx context.Context, slug string) (Endpoint, []Secret, int, error) {
	row, err := s.q.EndpointBySlug(ctx, s.pool, slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return Endpoint{}, nil, 0, ErrNoEndpoint
	}
	if err != nil {
		return Endpoint{}, nil, 0, fmt.Errorf("ingest: endpoint by slug: %w", err)
	}
	secrets, err := s.q.EndpointActiveSecrets(ctx, s.pool, row.Endpoint.ID)
	if err != nil {
		return Endpoint{}, nil, 0, fmt.Errorf("ingest: endpoint secrets: %w", err)
	}
	return row.Endpoint, secrets, int(row.TenantRequestsPerSecond), nil
}
