package redisstream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// toMessage maps a stream entry to an adapter.Message: the entry id is the
// SourceID, BodyField the body (or, when absent, a JSON object of all fields so
// producers that do not follow the convention lose nothing), ContentTypeField
// the content type, and every other field a header, plus "stream".
func (a *Adapter) toMessage(e redis.XMessage) (adapter.Message, error) {
	fields := make(map[string]string, len(e.Values))
	for k, v := range e.Values {
		fields[k] = fieldString(v)
	}
	m := adapter.Message{SourceID: e.ID, Headers: make(map[string]string, len(fields)+1), At: entryTime(e.ID)}
	if body, ok := fields[a.cfg.BodyField]; ok {
		m.Body = []byte(body)
		m.ContentType = fields[a.cfg.ContentTypeField]
	} else {
		b, err := json.Marshal(fields)
		if err != nil {
			return m, fmt.Errorf("encode fields of entry %s: %w", e.ID, err)
		}
		m.Body = b
		m.ContentType = "application/json"
	}
	for k, v := range fields {
		if k != a.cfg.BodyField {
			m.Headers[k] = v
		}
	}
	// Set last: the source stream is authoritative over an entry field of the
	// same name.
	m.Headers["stream"] = a.cfg.Stream
	return m, nil
}

// fieldString renders a field value; go-redis returns strings for stream
// fields, the fallback only guards against protocol surprises.
func fieldString(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	default:
		return fmt.Sprint(s)
	}
}

// entryTime is when Redis added the entry: an entry id is
// "<milliseconds>-<sequence>". Zero for an id that is not.
func entryTime(id string) time.Time {
	ms, _, ok := strings.Cut(id, "-")
	if !ok {
		return time.Time{}
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
