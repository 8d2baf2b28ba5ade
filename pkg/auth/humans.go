package auth

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth/internal/dbsqlc"
	"github.com/switchboard/switchboard/pkg/keyset"
	"github.com/switchboard/switchboard/pkg/postgres"
)

// Human is a row of humans: a person and the unit of tenancy.
type Human struct {
	ID          uuid.UUID
	Email       string
	DisplayName string
	IsAdmin     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DisabledAt  *time.Time
}

// Position is the human's place in its lists (keyset.Row).
func (h Human) Position() keyset.Cursor { return keyset.Cursor{CreatedAt: h.CreatedAt, ID: h.ID} }

// NewHuman is what CreateHuman stores.
type NewHuman struct {
	Email       string
	DisplayName string
	IsAdmin     bool
}

// HumanPatch names the fields an update changes; nil leaves a field as is.
type HumanPatch struct {
	Email       *string
	DisplayName *string
	IsAdmin     *bool
	// Disabled true disables the human as of the database's now(); false
	// re-enables it.
	Disabled *bool
}

// CreateHuman inserts a human. Humans are not tenant-owned, so there is no
// row to filter: the caller must have checked that it is an administrator.
func (s *Store) CreateHuman(ctx context.Context, h NewHuman) (Human, error) {
	r, err := s.q.HumanInsert(ctx, s.pool, dbsqlc.HumanInsertParams{
		Email: h.Email, DisplayName: h.DisplayName, IsAdmin: h.IsAdmin,
	})
	if err != nil {
		return Human{}, dbErr(err, "insert human", "human")
	}
	return Human(r), nil
}

// GetHuman returns a human t may see: any for an administrator, else itself.
func (s *Store) GetHuman(ctx context.Context, t Tenant, id uuid.UUID) (Human, error) {
	r, err := s.q.HumanGet(ctx, s.pool, dbsqlc.HumanGetParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID})
	if err != nil {
		return Human{}, dbErr(err, "get human", "human "+id.String())
	}
	return Human(r), nil
}

// ListHumans returns up to limit humans t may see, oldest first, after the
// cursor (nil for the first page).
func (s *Store) ListHumans(ctx context.Context, t Tenant, after *keyset.Cursor, limit int32) ([]Human, error) {
	at, aid := after.Args()
	rows, err := s.q.HumanList(ctx, s.pool, dbsqlc.HumanListParams{
		Administrator: t.Administrator, CallerID: t.HumanID, AfterCreatedAt: at, AfterID: aid, MaxRows: limit,
	})
	if err != nil {
		return nil, dbErr(err, "list humans", "human")
	}
	return postgres.Convert(rows, func(r dbsqlc.Human) Human { return Human(r) }), nil
}

// UpdateHuman applies p to a human t may see. A non-administrator's patch
// of IsAdmin or Disabled matches no row (the SQL repeats that rule).
func (s *Store) UpdateHuman(ctx context.Context, t Tenant, id uuid.UUID, p HumanPatch) (Human, error) {
	arg := dbsqlc.HumanUpdateParams{ID: id, Administrator: t.Administrator, CallerID: t.HumanID}
	if p.Email != nil {
		arg.SetEmail, arg.Email = true, *p.Email
	}
	if p.DisplayName != nil {
		arg.SetDisplayName, arg.DisplayName = true, *p.DisplayName
	}
	if p.IsAdmin != nil {
		arg.SetIsAdmin, arg.IsAdmin = true, *p.IsAdmin
	}
	if p.Disabled != nil {
		arg.SetDisabled, arg.Disabled = true, *p.Disabled
	}
	r, err := s.q.HumanUpdate(ctx, s.pool, arg)
	if err != nil {
		return Human{}, dbErr(err, "update human", "human "+id.String())
	}
	return Human(r), nil
}

// DeleteHuman deletes a human and, through ON DELETE CASCADE in the same
// statement, everything it owns. Only an administrator's call matches. The
// credentials its own credentials minted in other tenants (an administrator
// mints tenants' first ones) are revoked in the same transaction first: a
// tree never outlives its root, deleted or revoked.
func (s *Store) DeleteHuman(ctx context.Context, t Tenant, id uuid.UUID) error {
	if !t.Administrator {
		return apierr.NotFound("human %s not found", id)
	}
	var n int64
	err := postgres.RetryConflicts(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := untilSettled(func() ([]uuid.UUID, error) { return s.q.CredentialRevokeMintedByHuman(ctx, tx, id) }); err != nil {
				return err
			}
			var err error
			n, err = s.q.HumanDelete(ctx, tx, dbsqlc.HumanDeleteParams{ID: id, Administrator: t.Administrator})
			return err
		})
	})
	return apierr.Affected(n, err, "delete human", "human "+id.String(), constraints)
}
