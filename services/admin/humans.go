package admin

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// humanFields are UpdateHumanRequest.update_mask's allowed paths.
var humanFields = []string{"email", "display_name", "is_admin", "disabled_at"}

// CreateHuman adds a human (a new tenant). Administrators only.
func (s *Server) CreateHuman(ctx context.Context, req *adminv1.CreateHumanRequest) (*adminv1.CreateHumanResponse, error) {
	p, _, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Administrator {
		return nil, denied("only administrators may create humans")
	}
	in := req.GetHuman()
	if in.GetEmail() == "" {
		return nil, invalid("human.email", "is required")
	}
	h, err := s.store.CreateHuman(ctx, store.NewHuman{
		Email: in.GetEmail(), DisplayName: in.GetDisplayName(), IsAdmin: in.GetIsAdmin(),
	})
	if err != nil {
		return nil, err
	}
	return &adminv1.CreateHumanResponse{Human: humanProto(h)}, nil
}

// GetHuman returns one human; a non-administrator may read only itself
// (any other id is NOT_FOUND, filtered in SQL).
func (s *Server) GetHuman(ctx context.Context, req *adminv1.GetHumanRequest) (*adminv1.GetHumanResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	h, err := s.store.GetHuman(ctx, t, id)
	if err != nil {
		return nil, err
	}
	return &adminv1.GetHumanResponse{Human: humanProto(h)}, nil
}

// ListHumans lists humans oldest first; a non-administrator sees only itself.
func (s *Server) ListHumans(ctx context.Context, req *adminv1.ListHumansRequest) (*adminv1.ListHumansResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	const scope = "humans"
	after, err := decodePageToken(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListHumans(ctx, t, after, limit+1)
	if err != nil {
		return nil, err
	}
	rows, next := page(rows, limit, scope, func(h store.Human) (time.Time, uuid.UUID) { return h.CreatedAt, h.ID })
	out := &adminv1.ListHumansResponse{Humans: make([]*adminv1.Human, len(rows)), NextPageToken: next}
	for i, h := range rows {
		out.Humans[i] = humanProto(h)
	}
	return out, nil
}

// UpdateHuman changes the fields named in update_mask. A non-administrator
// may change only its own email and display_name: naming is_admin or
// disabled_at is PERMISSION_DENIED (it concerns the caller's own role, so
// it reveals nothing), and any other human is NOT_FOUND.
func (s *Server) UpdateHuman(ctx context.Context, req *adminv1.UpdateHumanRequest) (*adminv1.UpdateHumanResponse, error) {
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	in := req.GetHuman()
	id, err := parseID("human.id", in.GetId())
	if err != nil {
		return nil, err
	}
	fields, err := updateFields(req.GetUpdateMask(), humanFields, nil, slices.Concat(
		presentIf(in.GetEmail() != "", "email"),
		presentIf(in.GetDisplayName() != "", "display_name"),
		presentIf(in.GetIsAdmin(), "is_admin"),
		presentIf(in.GetDisabledAt() != nil, "disabled_at"),
	))
	if err != nil {
		return nil, err
	}
	if !p.Administrator && (fields["is_admin"] || fields["disabled_at"]) {
		return nil, denied("only administrators may change is_admin or disabled_at")
	}
	var patch store.HumanPatch
	if fields["email"] {
		if in.GetEmail() == "" {
			return nil, invalid("human.email", "is required")
		}
		patch.Email = ptr(in.GetEmail())
	}
	if fields["display_name"] {
		patch.DisplayName = ptr(in.GetDisplayName())
	}
	if fields["is_admin"] {
		patch.IsAdmin = ptr(in.GetIsAdmin())
	}
	if fields["disabled_at"] {
		// Any value disables as of the database's now(); unset re-enables.
		patch.Disabled = ptr(in.GetDisabledAt() != nil)
	}
	var h store.Human
	if len(fields) == 0 {
		// Nothing to change: answer with the current row, still through the
		// tenancy filter.
		h, err = s.store.GetHuman(ctx, t, id)
	} else {
		h, err = s.store.UpdateHuman(ctx, t, id, patch)
	}
	if err != nil {
		return nil, err
	}
	return &adminv1.UpdateHumanResponse{Human: humanProto(h)}, nil
}

// DeleteHuman deletes a human and everything it owns, in one statement
// (ON DELETE CASCADE). Administrators only; the contract says delete, not
// disable (disabling is UpdateHuman's disabled_at).
func (s *Server) DeleteHuman(ctx context.Context, req *adminv1.DeleteHumanRequest) (*adminv1.DeleteHumanResponse, error) {
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Administrator {
		return nil, denied("only administrators may delete humans")
	}
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteHuman(ctx, t, id); err != nil {
		return nil, err
	}
	return &adminv1.DeleteHumanResponse{}, nil
}

func humanProto(h store.Human) *adminv1.Human {
	return &adminv1.Human{
		Id:          h.ID.String(),
		Email:       h.Email,
		DisplayName: h.DisplayName,
		IsAdmin:     h.IsAdmin,
		CreatedAt:   timestamp(&h.CreatedAt),
		UpdatedAt:   timestamp(&h.UpdatedAt),
		DisabledAt:  timestamp(h.DisabledAt),
	}
}
