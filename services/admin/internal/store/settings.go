package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard/switchboard/services/admin/internal/store/dbsqlc"
)

// Setting is a row of settings: one deployment-wide default. Settings are
// not tenant-owned; reading them needs no tenant.
type Setting struct {
	Key         string
	Value       json.RawMessage
	Description string
	UpdatedAt   time.Time
}

// SettingPatch names the fields an update changes; nil leaves a field as is.
type SettingPatch struct {
	// Value, when non-nil, replaces the whole value.
	Value       json.RawMessage
	Description *string
}

// GetSetting returns one setting.
func (s *Store) GetSetting(ctx context.Context, key string) (Setting, error) {
	r, err := s.q.SettingGet(ctx, s.pool, key)
	if err != nil {
		return Setting{}, mapErr(err, "get setting", "setting "+key)
	}
	return Setting(r), nil
}

// ListSettings returns every setting ordered by key.
func (s *Store) ListSettings(ctx context.Context) ([]Setting, error) {
	rows, err := s.q.SettingList(ctx, s.pool)
	if err != nil {
		return nil, mapErr(err, "list settings", "setting")
	}
	out := make([]Setting, len(rows))
	for i, r := range rows {
		out[i] = Setting(r)
	}
	return out, nil
}

// UpdateSetting applies p to an existing setting; only an administrator's
// call matches a row. It never creates a setting.
func (s *Store) UpdateSetting(ctx context.Context, t Tenant, key string, p SettingPatch) (Setting, error) {
	arg := dbsqlc.SettingUpdateParams{Key: key, Administrator: t.Administrator}
	if p.Value != nil {
		arg.SetValue, arg.Value = true, p.Value
	}
	if p.Description != nil {
		arg.SetDescription, arg.Description = true, *p.Description
	}
	r, err := s.q.SettingUpdate(ctx, s.pool, arg)
	if err != nil {
		return Setting{}, mapErr(err, "update setting", "setting "+key)
	}
	return Setting(r), nil
}
