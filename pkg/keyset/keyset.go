// Package keyset is the keyset pagination every list ordered by
// (created_at, id) shares: the cursor a store continues after, the page
// size rule of the contracts, and the opaque page token that carries the
// cursor between calls.
//
// A token is base64url JSON: opaque to clients but not secret or signed,
// because it only positions the scan; the tenancy filter is applied in SQL
// on every page, so a forged token never reaches another tenant's rows. It
// names the list and filters it was issued for ("must be used with the same
// filters"), so a token from one list is refused by another.
package keyset

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// Page sizes: every list in the contracts says "0–1000; 0 means 100".
const (
	DefaultSize = 100
	MaxSize     = 1000
)

// Cursor is a position in a list ordered by (created_at, id): a page holds
// the rows strictly after it (or before it, for newest-first lists).
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// Args splits an optional cursor into the nullable query arguments (nil
// means "from the start").
func (c *Cursor) Args() (*time.Time, *uuid.UUID) {
	if c == nil {
		return nil, nil
	}
	return &c.CreatedAt, &c.ID
}

// Size resolves a requested page size (0 = the default); out of range is
// INVALID_ARGUMENT on page_size.
func Size(n int32) (int32, error) {
	switch {
	case n == 0:
		return DefaultSize, nil
	case n < 0 || n > MaxSize:
		return 0, apierr.Invalid(apierr.FieldViolation{Field: "page_size", Description: "must be between 0 and 1000"})
	}
	return n, nil
}

// token is what a page token encodes.
type token struct {
	// CreatedAt is the last row's created_at in Unix microseconds, the
	// database's own precision, so the keyset compares exactly.
	CreatedAt int64     `json:"c"`
	ID        uuid.UUID `json:"i"`
	// Scope names the list and its filters.
	Scope string `json:"s"`
}

// Decode returns the cursor a page token stands for; nil for the first page
// (an empty token). scope must equal the one the token was issued with.
func Decode(tok, scope string) (*Cursor, error) {
	if tok == "" {
		return nil, nil
	}
	bad := apierr.Invalid(apierr.FieldViolation{Field: "page_token", Description: "is not a token returned by this list"})
	if len(tok) > 1024 {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var t token
	if err != nil || json.Unmarshal(raw, &t) != nil || t.ID == uuid.Nil {
		return nil, bad
	}
	if t.Scope != scope {
		return nil, apierr.Invalid(apierr.FieldViolation{Field: "page_token", Description: "was issued for a different list or different filters"})
	}
	return &Cursor{CreatedAt: time.UnixMicro(t.CreatedAt), ID: t.ID}, nil
}

// Encode returns the token that continues after (created, id) in scope.
func Encode(created time.Time, id uuid.UUID, scope string) string {
	raw, _ := json.Marshal(token{CreatedAt: created.UnixMicro(), ID: id, Scope: scope}) // plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Row is a row of a keyset list: it knows its position.
type Row interface {
	Position() Cursor
}

// Trim cuts rows fetched with limit+1 to limit and returns the next page's
// token (empty on the last page), keyed on the last row kept.
func Trim[T Row](rows []T, limit int32, scope string) ([]T, string) {
	if int32(len(rows)) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	last := rows[len(rows)-1].Position()
	return rows, Encode(last.CreatedAt, last.ID, scope)
}
