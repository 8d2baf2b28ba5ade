package sources

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/services/ingest/sources/internal/dbsqlc"
)

func (s *Store) insertSecret(ctx context.Context, db dbsqlc.DBTX, endpointID uuid.UUID, ns newSecret) error {
	err := s.q.EndpointSecretInsert(ctx, db, dbsqlc.EndpointSecretInsertParams{
		ID: ns.id, EndpointID: endpointID, Kind: ns.kind, KeyID: ns.keyID, Sealed: ns.sealed, Hash: ns.hash, Hint: ns.hint,
	})
	if err != nil {
		return fmt.Errorf("insert endpoint secret: %w", err)
	}
	return nil
}

// touched moves the endpoint's updated_at (its secrets changed) and returns
// it as it now is.
func (s *Store) touched(ctx context.Context, tx pgx.Tx, t auth.Tenant, id uuid.UUID) (Endpoint, error) {
	if err := s.q.EndpointTouch(ctx, tx, id); err != nil {
		return Endpoint{}, fmt.Errorf("touch endpoint: %w", err)
	}
	r, err := s.q.EndpointGet(ctx, tx, dbsqlc.EndpointGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Endpoint{}, dbErr(err, "get endpoint", "endpoint "+id.String())
	}
	return s.withSecrets(ctx, tx, r)
}

// withSecrets is r with its secrets and routes.
func (s *Store) withSecrets(ctx context.Context, db dbsqlc.DBTX, r dbsqlc.Endpoint) (Endpoint, error) {
	secrets, err := s.secretsOf(ctx, db, []uuid.UUID{r.ID})
	if err != nil {
		return Endpoint{}, err
	}
	routes, err := s.routesOf(ctx, db, []uuid.UUID{r.ID})
	if err != nil {
		return Endpoint{}, err
	}
	e := endpointFrom(r)
	e.Secrets, e.Routes = secrets[r.ID], routes[r.ID]
	return e, nil
}

// secretsOf returns the secrets of the endpoints ids (which the caller has
// already reached), by endpoint, oldest first.
func (s *Store) secretsOf(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID) (map[uuid.UUID][]EndpointSecret, error) {
	out := make(map[uuid.UUID][]EndpointSecret, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.EndpointSecretList(ctx, db, ids)
	if err != nil {
		return nil, fmt.Errorf("list endpoint secrets: %w", err)
	}
	for _, r := range rows {
		out[r.EndpointID] = append(out[r.EndpointID], EndpointSecret{
			ID: r.ID, KeyID: r.KeyID, Hint: r.Hint, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Active: r.Active,
		})
	}
	return out, nil
}
