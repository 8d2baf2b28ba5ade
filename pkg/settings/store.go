package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/pkg/settings/internal/dbsqlc"
)

// DB is what the statements run on: a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Setting is a row of settings.
type Setting struct {
	Key         string
	Value       json.RawMessage
	Description string
	UpdatedAt   time.Time
}

// Patch names the fields an update changes; nil leaves a field as is.
type Patch struct {
	// Value, when non-nil, replaces the whole value.
	Value       json.RawMessage
	Description *string
}

var queries = dbsqlc.New()

// Read returns key's value decoded over def: a missing row, or a field
// missing from the stored object, keeps def's value.
func Read[T any](ctx context.Context, db DB, key string, def T) (T, error) {
	r, err := queries.SettingGet(ctx, db, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return def, nil
	}
	if err != nil {
		return def, fmt.Errorf("read setting %s: %w", key, err)
	}
	out := def
	if err := json.Unmarshal(r.Value, &out); err != nil {
		return def, fmt.Errorf("setting %s: %w", key, err)
	}
	return out, nil
}

// Get returns one setting; NOT_FOUND for an unknown key.
func Get(ctx context.Context, db DB, key string) (Setting, error) {
	r, err := queries.SettingGet(ctx, db, key)
	if err != nil {
		return Setting{}, apierr.FromPostgres(err, "get setting", "setting "+key, nil)
	}
	return Setting(r), nil
}

// List returns every setting ordered by key.
func List(ctx context.Context, db DB) ([]Setting, error) {
	rows, err := queries.SettingList(ctx, db)
	if err != nil {
		return nil, apierr.FromPostgres(err, "list settings", "setting", nil)
	}
	out := make([]Setting, len(rows))
	for i, r := range rows {
		out[i] = Setting(r)
	}
	return out, nil
}

// Update applies p to an existing setting. Only an administrator's call
// matches a row (anyone else gets NOT_FOUND, like for an unknown key); it
// never creates a setting. Validating the new value (Check) is the caller's.
func Update(ctx context.Context, db DB, administrator bool, key string, p Patch) (Setting, error) {
	arg := dbsqlc.SettingUpdateParams{Key: key, Administrator: administrator}
	if p.Value != nil {
		arg.SetValue, arg.Value = true, p.Value
	}
	if p.Description != nil {
		arg.SetDescription, arg.Description = true, *p.Description
	}
	r, err := queries.SettingUpdate(ctx, db, arg)
	if err != nil {
		return Setting{}, apierr.FromPostgres(err, "update setting", "setting "+key, nil)
	}
	return Setting(r), nil
}
