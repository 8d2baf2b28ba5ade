package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/settings"
)

// settingFields are UpdateSettingRequest.update_mask's allowed paths.
var settingFields = []string{"value", "description"}

// GetSetting returns one setting. Settings are deployment-wide, so any
// caller with the admin scope may read them.
func (s *Server) GetSetting(ctx context.Context, req *adminv1.GetSettingRequest) (*adminv1.GetSettingResponse, error) {
	if _, _, err := caller(ctx); err != nil {
		return nil, err
	}
	if req.GetKey() == "" {
		return nil, invalid("key", "is required")
	}
	st, err := settings.Get(ctx, s.settings, req.GetKey())
	ps, err := render(st, err, settingProto)
	return apierr.Reply(&adminv1.GetSettingResponse{Setting: ps}, err)
}

// ListSettings returns every setting, ordered by key (not paginated).
func (s *Server) ListSettings(ctx context.Context, _ *adminv1.ListSettingsRequest) (*adminv1.ListSettingsResponse, error) {
	if _, _, err := caller(ctx); err != nil {
		return nil, err
	}
	rows, err := settings.List(ctx, s.settings)
	if err != nil {
		return nil, err
	}
	out := &adminv1.ListSettingsResponse{Settings: make([]*adminv1.Setting, len(rows))}
	for i, st := range rows {
		if out.Settings[i], err = settingProto(st); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpdateSetting changes the value or description of an existing setting.
// Administrators only; it never creates a setting (unknown key: NOT_FOUND).
func (s *Server) UpdateSetting(ctx context.Context, req *adminv1.UpdateSettingRequest) (*adminv1.UpdateSettingResponse, error) {
	t, err := administrator(ctx, "change settings")
	if err != nil {
		return nil, err
	}
	in := req.GetSetting()
	key := in.GetKey()
	if key == "" {
		return nil, invalid("setting.key", "is required")
	}
	fields, err := updateFields(req.GetUpdateMask(), settingFields, []string{"value"}, slices.Concat(
		presentIf(in.GetValue() != nil, "value"),
		presentIf(in.GetDescription() != "", "description"),
	))
	if err != nil {
		return nil, err
	}
	var patch settings.Patch
	if fields["value"] {
		if patch.Value, err = settingValueJSON(key, in.GetValue()); err != nil {
			return nil, err
		}
	}
	if fields["description"] {
		patch.Description = ptr(in.GetDescription())
	}
	var st settings.Setting
	if len(fields) == 0 {
		st, err = settings.Get(ctx, s.settings, key)
	} else {
		st, err = settings.Update(ctx, s.settings, t.Administrator, key, patch)
	}
	ps, err := render(st, err, settingProto)
	return apierr.Reply(&adminv1.UpdateSettingResponse{Setting: ps}, err)
}

// settingValueJSON validates a new value against its key's shape
// (settings.Check) and serializes it. Whether the key exists at all is the
// UPDATE's business (NOT_FOUND).
func settingValueJSON(key string, v *structpb.Value) (json.RawMessage, error) {
	const field = "setting.value"
	if v == nil || v.GetKind() == nil {
		return nil, invalid(field, "is required")
	}
	if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull {
		return nil, invalid(field, "must not be null")
	}
	if err := settings.Check(key, v.AsInterface()); err != nil {
		return nil, invalid(field, fmt.Sprintf("%s for %s", err, key))
	}
	raw, err := json.Marshal(v.AsInterface())
	if err != nil {
		return nil, invalid(field, "must be representable as JSON (no NaN or infinite numbers)")
	}
	return raw, nil
}

// settingProto renders a setting; the error is only for a corrupt row (the
// column is jsonb, so it always holds valid JSON).
func settingProto(st settings.Setting) (*adminv1.Setting, error) {
	v := &structpb.Value{}
	if err := protojson.Unmarshal(st.Value, v); err != nil {
		return nil, fmt.Errorf("setting %s value: %w", st.Key, err)
	}
	return &adminv1.Setting{Key: st.Key, Value: v, Description: st.Description, UpdatedAt: timestamp(&st.UpdatedAt)}, nil
}
