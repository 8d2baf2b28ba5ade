package admin

import (
	"context"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/keyset"
)

// humanFields are UpdateHumanRequest.update_mask's allowed paths.
var humanFields = []string{"email", "display_name", "is_admin", "disabled_at"}

// CreateHuman adds a human (a new tenant). Administrators only.
func (s *Server) CreateHuman(ctx context.Context, req *adminv1.CreateHumanRequest) (*adminv1.CreateHumanResponse, error) {
	if _, err := administrator(ctx, "create humans"); err != nil {
		return nil, err
	}
	in := req.GetHuman()
	if in.GetEmail() == "" {
		return nil, invalid("human.email", "is required")
	}
	if err := label("human.email", in.GetEmail()); err != nil {
		return nil, err
	}
	if err := label("human.display_name", in.GetDisplayName()); err != nil {
		return nil, err
	}
	h, err := s.identity.CreateHuman(ctx, auth.NewHuman{Email: in.GetEmail(), DisplayName: in.GetDisplayName(), IsAdmin: in.GetIsAdmin()})
	return apierr.Reply(&adminv1.CreateHumanResponse{Human: humanProto(h)}, err)
}

// GetHuman returns one human; a non-administrator may read only itself
// (any other id is NOT_FOUND, filtered in SQL).
func (s *Server) GetHuman(ctx context.Context, req *adminv1.GetHumanRequest) (*adminv1.GetHumanResponse, error) {
	h, err := got(ctx, req.GetId(), s.identity.GetHuman, infallible(humanProto))
	return apierr.Reply(&adminv1.GetHumanResponse{Human: h}, err)
}

// ListHumans lists humans oldest first; a non-administrator sees only itself.
func (s *Server) ListHumans(ctx context.Context, req *adminv1.ListHumansRequest) (*adminv1.ListHumansResponse, error) {
	_, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	humans, next, err := page(ctx, req, "humans", func(ctx context.Context, after *keyset.Cursor, limit int32) ([]auth.Human, error) {
		return s.identity.ListHumans(ctx, t, after, limit)
	}, infallible(humanProto))
	return apierr.Reply(&adminv1.ListHumansResponse{Humans: humans, NextPageToken: next}, err)
}

// UpdateHuman changes the fields named in update_mask. A non-administrator
// may change only its own email and display_name: naming is_admin or
// disabled_at is PERMISSION_DENIED (it concerns the caller's own role, so
// it reveals nothing), and any other human is NOT_FOUND.
func (s *Server) UpdateHuman(ctx context.Context, req *adminv1.UpdateHumanRequest) (*adminv1.UpdateHumanResponse, error) {
	in := req.GetHuman()
	u, err := updating(ctx, "human.id", in.GetId(), req.GetUpdateMask(), humanFields, nil,
		presentIf(in.GetEmail() != "", "email"),
		presentIf(in.GetDisplayName() != "", "display_name"),
		presentIf(in.GetIsAdmin(), "is_admin"),
		presentIf(in.GetDisabledAt() != nil, "disabled_at"),
	)
	if err != nil {
		return nil, err
	}
	t, id, fields := u.t, u.id, u.fields
	if !u.p.Administrator && (fields["is_admin"] || fields["disabled_at"]) {
		return nil, denied("only administrators may change is_admin or disabled_at")
	}
	var patch auth.HumanPatch
	if fields["email"] {
		if in.GetEmail() == "" {
			return nil, invalid("human.email", "is required")
		}
		if err := label("human.email", in.GetEmail()); err != nil {
			return nil, err
		}
		patch.Email = ptr(in.GetEmail())
	}
	if fields["display_name"] {
		if err := label("human.display_name", in.GetDisplayName()); err != nil {
			return nil, err
		}
		patch.DisplayName = ptr(in.GetDisplayName())
	}
	if fields["is_admin"] {
		patch.IsAdmin = ptr(in.GetIsAdmin())
	}
	if fields["disabled_at"] {
		// Any value disables as of the database's now(); unset re-enables.
		patch.Disabled = ptr(in.GetDisabledAt() != nil)
	}
	h, err := unlessEmpty(ctx, t, id, fields, s.identity.GetHuman, func() (auth.Human, error) {
		return s.identity.UpdateHuman(ctx, t, id, patch)
	})
	return apierr.Reply(&adminv1.UpdateHumanResponse{Human: humanProto(h)}, err)
}

// DeleteHuman deletes a human and everything it owns, in one statement
// (ON DELETE CASCADE). Administrators only; the contract says delete, not
// disable (disabling is UpdateHuman's disabled_at).
func (s *Server) DeleteHuman(ctx context.Context, req *adminv1.DeleteHumanRequest) (*adminv1.DeleteHumanResponse, error) {
	if _, err := administrator(ctx, "delete humans"); err != nil {
		return nil, err
	}
	return apierr.Reply(&adminv1.DeleteHumanResponse{}, removed(ctx, req.GetId(), s.identity.DeleteHuman))
}

func humanProto(h auth.Human) *adminv1.Human {
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
