package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	adminv1 "github.com/switchboard/switchboard/gen/switchboard/admin/v1"
	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// settingFields are UpdateSettingRequest.update_mask's allowed paths.
var settingFields = []string{"value", "description"}

// intRange is an inclusive bound for one integer field of a setting value.
type intRange struct{ min, max float64 }

// settingShape is the exact object a known setting's value must be: these
// fields and no others, each an integer within its range. The upper bounds
// keep every value inside a PostgreSQL integer, which is how the queue and
// the pruner pass them to SQL (make_interval(secs => …::integer), LIMIT).
type settingShape map[string]intRange

var (
	retentionShape = settingShape{
		"max_age_seconds": {1, math.MaxInt32},
		"max_rows":        {1, math.MaxInt32},
	}
	queueDefaultsShape = settingShape{
		"max_attempts":  {1, 1000},
		"lease_seconds": {1, 3600},
	}
)

// shapeFor returns the shape of a key's value, or nil for a key this server
// has no rule for. Every retention.* key is pruned with the same pair of
// limits, so the prefix decides.
func shapeFor(key string) settingShape {
	switch {
	case strings.HasPrefix(key, "retention."):
		return retentionShape
	case key == "queue.defaults":
		return queueDefaultsShape
	}
	return nil
}

// GetSetting returns one setting. Settings are deployment-wide, so any
// caller with the admin scope may read them.
func (s *Server) GetSetting(ctx context.Context, req *adminv1.GetSettingRequest) (*adminv1.GetSettingResponse, error) {
	if _, _, err := caller(ctx); err != nil {
		return nil, err
	}
	if req.GetKey() == "" {
		return nil, invalid("key", "is required")
	}
	st, err := s.store.GetSetting(ctx, req.GetKey())
	if err != nil {
		return nil, err
	}
	ps, err := settingProto(st)
	if err != nil {
		return nil, err
	}
	return &adminv1.GetSettingResponse{Setting: ps}, nil
}

// ListSettings returns every setting, ordered by key (not paginated).
func (s *Server) ListSettings(ctx context.Context, _ *adminv1.ListSettingsRequest) (*adminv1.ListSettingsResponse, error) {
	if _, _, err := caller(ctx); err != nil {
		return nil, err
	}
	rows, err := s.store.ListSettings(ctx)
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
	p, t, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Administrator {
		return nil, denied("only administrators may change settings")
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
	var patch store.SettingPatch
	if fields["value"] {
		if patch.Value, err = settingValueJSON(key, in.GetValue()); err != nil {
			return nil, err
		}
	}
	if fields["description"] {
		patch.Description = ptr(in.GetDescription())
	}
	var st store.Setting
	if len(fields) == 0 {
		st, err = s.store.GetSetting(ctx, key)
	} else {
		st, err = s.store.UpdateSetting(ctx, t, key, patch)
	}
	if err != nil {
		return nil, err
	}
	ps, err := settingProto(st)
	if err != nil {
		return nil, err
	}
	return &adminv1.UpdateSettingResponse{Setting: ps}, nil
}

// settingValueJSON validates a new value against its key's shape and
// serializes it. A key without a known shape (one a later migration adds
// before this server learns it) takes any JSON value except null; whether
// that key exists at all is the UPDATE's business (NOT_FOUND).
func settingValueJSON(key string, v *structpb.Value) (json.RawMessage, error) {
	const field = "setting.value"
	if v == nil || v.GetKind() == nil {
		return nil, invalid(field, "is required")
	}
	if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull {
		return nil, invalid(field, "must not be null")
	}
	if shape := shapeFor(key); shape != nil {
		if err := shape.check(v); err != nil {
			return nil, invalid(field, fmt.Sprintf("%s for %s", err, key))
		}
	}
	raw, err := json.Marshal(v.AsInterface())
	if err != nil {
		return nil, invalid(field, "must be representable as JSON (no NaN or infinite numbers)")
	}
	return raw, nil
}

// check reports how v differs from the shape, or nil when it matches.
func (sh settingShape) check(v *structpb.Value) error {
	obj := v.GetStructValue()
	if obj == nil {
		return fmt.Errorf("must be an object with fields %s", sh.names())
	}
	for name := range obj.GetFields() {
		if _, ok := sh[name]; !ok {
			return fmt.Errorf("has unknown field %q (allowed: %s)", name, sh.names())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sh)) {
		r := sh[name]
		f, ok := obj.GetFields()[name]
		if !ok {
			return fmt.Errorf("is missing field %q", name)
		}
		n, isNum := f.GetKind().(*structpb.Value_NumberValue)
		if !isNum || n.NumberValue != math.Trunc(n.NumberValue) || n.NumberValue < r.min || n.NumberValue > r.max {
			return fmt.Errorf("field %q must be an integer from %.0f to %.0f", name, r.min, r.max)
		}
	}
	return nil
}

// names lists the shape's fields, sorted, for messages.
func (sh settingShape) names() string {
	return strings.Join(slices.Sorted(maps.Keys(sh)), ", ")
}

// settingProto renders a setting; the error is only for a corrupt row (the
// column is jsonb, so it always holds valid JSON).
func settingProto(st store.Setting) (*adminv1.Setting, error) {
	v := &structpb.Value{}
	if err := protojson.Unmarshal(st.Value, v); err != nil {
		return nil, fmt.Errorf("setting %s value: %w", st.Key, err)
	}
	return &adminv1.Setting{
		Key:         st.Key,
		Value:       v,
		Description: st.Description,
		UpdatedAt:   timestamp(&st.UpdatedAt),
	}, nil
}
