package admin

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard/switchboard/services/admin/internal/store"
)

// Page sizes: every list in the contract says "0–1000; 0 means 100".
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageToken is the keyset position a list continues from, plus the list and
// filters it was issued for ("Must be used with the same filters"). It is
// base64url JSON: opaque to clients but not secret or signed, because it
// only positions the scan; the tenancy filter is applied in SQL on every
// page, so a forged token can never reach another tenant's rows.
type pageToken struct {
	// CreatedAt is the last row's created_at in Unix microseconds, the
	// database's own precision, so the keyset compares exactly.
	CreatedAt int64     `json:"c"`
	ID        uuid.UUID `json:"i"`
	// Scope names the list and its filters.
	Scope string `json:"s"`
}

// pageSize resolves a requested page size (0 = the default).
func pageSize(n int32) (int32, error) {
	switch {
	case n == 0:
		return defaultPageSize, nil
	case n < 0 || n > maxPageSize:
		return 0, invalid("page_size", "must be between 0 and 1000")
	}
	return n, nil
}

// decodePageToken returns the cursor a page token stands for; nil for the
// first page. scope must equal the one the token was issued with.
func decodePageToken(tok, scope string) (*store.Cursor, error) {
	if tok == "" {
		return nil, nil
	}
	bad := invalid("page_token", "is not a token returned by this list")
	if len(tok) > 1024 {
		return nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	if err != nil || json.Unmarshal(raw, &pt) != nil || pt.ID == uuid.Nil {
		return nil, bad
	}
	if pt.Scope != scope {
		return nil, invalid("page_token", "was issued for a different list or different filters")
	}
	return &store.Cursor{CreatedAt: time.UnixMicro(pt.CreatedAt), ID: pt.ID}, nil
}

// encodePageToken returns the token that continues after (created, id).
func encodePageToken(created time.Time, id uuid.UUID, scope string) string {
	raw, _ := json.Marshal(pageToken{CreatedAt: created.UnixMicro(), ID: id, Scope: scope}) // cannot fail: plain fields
	return base64.RawURLEncoding.EncodeToString(raw)
}

// page trims a result fetched with limit+1 rows to limit and returns the
// next page token (empty on the last page), keyed on the last row kept.
func page[T any](rows []T, limit int32, scope string, key func(T) (time.Time, uuid.UUID)) ([]T, string) {
	if int32(len(rows)) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	created, id := key(rows[len(rows)-1])
	return rows, encodePageToken(created, id, scope)
}
