package store

import (
	"encoding/json"
	"strings"
)

// KeyPattern gives the concurrency keys that match Glob (* = any run of
// characters) their own limits; 0 keeps the queue's default.
type KeyPattern struct {
	Glob       string
	MaxRunning int32
	Rate       float64
	RateBurst  int32
}

// storedPattern is a KeyPattern as queue_controls.key_patterns holds it:
// with its glob translated into the LIKE pattern the SQL matches keys
// with, and 0 as absent (the SQL reads absent as NULL: the default).
type storedPattern struct {
	Like       string   `json:"like"`
	Glob       string   `json:"glob"`
	MaxRunning *int32   `json:"max_running,omitempty"`
	Rate       *float64 `json:"rate_per_second,omitempty"`
	RateBurst  *int32   `json:"rate_burst,omitempty"`
}

// likeEscaper makes a glob's literal characters literal in LIKE (whose
// default escape character is the backslash) and its * LIKE's %.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`, `*`, `%`)

// encodePatterns is key_patterns' JSON for ps.
func encodePatterns(ps []KeyPattern) []byte {
	out := make([]storedPattern, len(ps))
	for i, p := range ps {
		out[i] = storedPattern{
			Like: likeEscaper.Replace(p.Glob), Glob: p.Glob,
			MaxRunning: positive(p.MaxRunning), Rate: positive(p.Rate), RateBurst: positive(p.RateBurst),
		}
	}
	raw, _ := json.Marshal(out) // strings and numbers: cannot fail
	return raw
}

// decodePatterns reads key_patterns back; malformed JSON (never written
// by encodePatterns) reads as none.
func decodePatterns(raw []byte) []KeyPattern {
	var in []storedPattern
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	out := make([]KeyPattern, len(in))
	for i, p := range in {
		out[i] = KeyPattern{Glob: p.Glob, MaxRunning: deref(p.MaxRunning), Rate: deref(p.Rate), RateBurst: deref(p.RateBurst)}
	}
	return out
}
