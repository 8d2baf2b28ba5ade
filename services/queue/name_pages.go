package queue

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/switchboard/switchboard/pkg/textcheck"
	"github.com/switchboard/switchboard/services/queue/internal/store"
)

// Name-ordered pages (ListQueues, ListSchedules): "page_size 0–100; 0
// means 100".
const maxNamePageSize = 100

// namePageToken is the name a page continues after, base64url JSON like
// ListTodos' token: it only positions the scan, and tenancy is applied in
// SQL on every page.
type namePageToken struct {
	After string `json:"a"`
}

// namePageSize resolves a request's page_size.
func namePageSize(n int32) (int32, error) {
	switch {
	case n == 0:
		return maxNamePageSize, nil
	case n < 0 || n > maxNamePageSize:
		return 0, invalid("page_size", "must be between 0 and 100")
	}
	return n, nil
}

// encodeNamePageToken is the token of the page after the one ending at name.
func encodeNamePageToken(name string) string {
	raw, _ := json.Marshal(namePageToken{After: name}) // a plain field: cannot fail
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeNamePageToken returns the name a token of rpc continues after; ""
// for the first page. Queue and schedule names share one shape.
func decodeNamePageToken(tok, rpc string) (string, error) {
	if tok == "" {
		return "", nil
	}
	bad := invalid("page_token", "is not a token returned by "+rpc)
	if len(tok) > 1024 {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var pt namePageToken
	if err != nil || json.Unmarshal(raw, &pt) != nil || !textcheck.QueueName(pt.After) {
		return "", bad
	}
	return pt.After, nil
}

// namePageRequest is a name-ordered list request.
type namePageRequest interface {
	GetPageSize() int32
	GetPageToken() string
}

// namePageArgs resolves the caller and the page a list request of rpc
// asks for: how many names, after which.
func namePageArgs(ctx context.Context, req namePageRequest, rpc string) (c store.Caller, limit int32, after string, err error) {
	if c, err = caller(ctx); err != nil {
		return c, 0, "", err
	}
	if limit, err = namePageSize(req.GetPageSize()); err != nil {
		return c, 0, "", err
	}
	after, err = decodeNamePageToken(req.GetPageToken(), rpc)
	return c, limit, after, err
}

// cutNamePage cuts rows, read with one extra row past limit (which says
// whether another page exists), to the page, and returns the next page's
// token ("" for the last page).
func cutNamePage[T any](rows []T, limit int32, name func(T) string) ([]T, string) {
	if int32(len(rows)) <= limit { //nolint:gosec // len ≤ maxNamePageSize + 1
		return rows, ""
	}
	rows = rows[:limit]
	return rows, encodeNamePageToken(name(rows[len(rows)-1]))
}
