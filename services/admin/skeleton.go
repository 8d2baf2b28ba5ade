package admin

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/keyset"
)

// The shared skeleton of the resource RPCs: the caller check, ids, keyset
// pages and renderings. Each resource's file supplies only its owner's
// method and its proto rendering.

// byID runs a Get, Delete or Revoke: the caller, the id in field, then do.
func byID[T any](ctx context.Context, field, raw string, do func(context.Context, auth.Tenant, uuid.UUID) (T, error)) (T, error) {
	var zero T
	_, t, err := caller(ctx)
	if err != nil {
		return zero, err
	}
	id, err := parseID(field, raw)
	if err != nil {
		return zero, err
	}
	return do(ctx, t, id)
}

// got runs a Get of the row the request's id names, rendered.
func got[T, P any](ctx context.Context, id string, get func(context.Context, auth.Tenant, uuid.UUID) (T, error), render func(T) (P, error)) (P, error) {
	row, err := byID(ctx, "id", id, get)
	if err != nil {
		var zero P
		return zero, err
	}
	return render(row)
}

// removed runs a Delete of the row the request's id names.
func removed(ctx context.Context, id string, del func(context.Context, auth.Tenant, uuid.UUID) error) error {
	_, err := byID(ctx, "id", id, func(ctx context.Context, t auth.Tenant, id uuid.UUID) (struct{}, error) {
		return struct{}{}, del(ctx, t, id)
	})
	return err
}

// pageRequest is every List request of the contract.
type pageRequest interface {
	GetPageSize() int32
	GetPageToken() string
}

// ownedRequest is a List of tenant-owned rows with the optional human_id
// filter.
type ownedRequest interface {
	pageRequest
	GetHumanId() string
}

// page runs a List after its filters: the page size, the page token (issued
// for scope, which names the list and its filters), one row more than the
// page to tell whether another follows, and the rendering.
func page[T keyset.Row, P any](ctx context.Context, req pageRequest, scope string,
	fetch func(ctx context.Context, after *keyset.Cursor, limit int32) ([]T, error), render func(T) (P, error),
) ([]P, string, error) {
	limit, err := keyset.Size(req.GetPageSize())
	if err != nil {
		return nil, "", err
	}
	after, err := keyset.Decode(req.GetPageToken(), scope)
	if err != nil {
		return nil, "", err
	}
	rows, err := fetch(ctx, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	rows, next := keyset.Trim(rows, limit, scope)
	out := make([]P, len(rows))
	for i, r := range rows {
		if out[i], err = render(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// listOwned runs a List of tenant-owned rows of kind: an empty human_id
// means the caller's own human, or every human for an administrator; a
// non-administrator naming another human gets an empty page, as for an
// unknown one.
func listOwned[T keyset.Row, P any](ctx context.Context, req ownedRequest, kind string,
	list func(context.Context, auth.Tenant, *uuid.UUID, *keyset.Cursor, int32) ([]T, error), render func(T) (P, error),
) ([]P, string, error) {
	t, humanID, err := ownerFilter(ctx, req.GetHumanId())
	if err != nil {
		return nil, "", err
	}
	return page(ctx, req, kind+"|"+idString(humanID), func(ctx context.Context, after *keyset.Cursor, limit int32) ([]T, error) {
		return list(ctx, t, humanID, after, limit)
	}, render)
}

// infallible adapts a rendering that cannot fail.
func infallible[T, P any](f func(T) P) func(T) (P, error) {
	return func(v T) (P, error) { return f(v), nil }
}

// parseID parses a required uuid request field.
func parseID(field, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, invalid(field, "must be a valid UUID")
	}
	return id, nil
}

// parseOptionalID parses a uuid request field where empty means "none".
func parseOptionalID(field, s string) (*uuid.UUID, error) {
	if s == "" {
		return nil, nil
	}
	id, err := parseID(field, s)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// idString renders an optional uuid the way the contract does: empty for none.
func idString(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// timestamp renders an optional time; nil stays unset.
func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// ptr returns a pointer to a copy of v, for optional patch fields.
func ptr[T any](v T) *T { return &v }

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// unlessEmpty runs an Update once its mask is resolved: with nothing to
// change it answers the current row (still through the tenancy filter),
// else it applies the change.
func unlessEmpty[T any](ctx context.Context, t auth.Tenant, id uuid.UUID, fields map[string]bool,
	get func(context.Context, auth.Tenant, uuid.UUID) (T, error), apply func() (T, error),
) (T, error) {
	if len(fields) == 0 {
		return get(ctx, t, id)
	}
	return apply()
}

// creator is a Create's caller and the human the row is for: the caller's
// own when raw is empty, else the one named in field (whether the caller may
// act for it is the owner's SQL's to decide: NOT_FOUND when not).
func creator(ctx context.Context, field, raw string) (auth.Tenant, uuid.UUID, error) {
	p, t, err := caller(ctx)
	if err != nil || raw == "" {
		return t, p.HumanID, err
	}
	id, err := parseID(field, raw)
	return t, id, err
}

// update is an Update's preamble resolved: who asks, which row, and the
// top-level fields to change.
type update struct {
	p      auth.Principal
	t      auth.Tenant
	id     uuid.UUID
	fields map[string]bool
}

// updating runs an Update's preamble: the caller, the row's id (named
// idField in errors), and its mask through updateFields, where present
// lists the fields the message sets (the meaning of an empty mask).
func updating(ctx context.Context, idField, id string, mask *fieldmaskpb.FieldMask, allowed, wholes []string, present ...[]string) (update, error) {
	var u update
	var err error
	if u.p, u.t, err = caller(ctx); err != nil {
		return u, err
	}
	if u.id, err = parseID(idField, id); err != nil {
		return u, err
	}
	u.fields, err = updateFields(mask, allowed, wholes, slices.Concat(present...))
	return u, err
}

// ownerFilter is a List's caller and its optional human_id filter.
func ownerFilter(ctx context.Context, humanID string) (auth.Tenant, *uuid.UUID, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return t, nil, err
	}
	id, err := parseOptionalID("human_id", humanID)
	return t, id, err
}

// render renders row, unless err says there is none.
func render[T, P any](row T, err error, f func(T) (P, error)) (P, error) {
	if err != nil {
		var zero P
		return zero, err
	}
	return f(row)
}
