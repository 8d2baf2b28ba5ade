package redisstream

import (
	"errors"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// maxReason bounds a reason: it is stored in the adapter's row.
const maxReason = 300

// stepError names the step of Run that failed, for Reason.
type stepError struct {
	op  string
	err error
}

func (e *stepError) Error() string { return e.op + ": " + e.err.Error() }

func (e *stepError) Unwrap() error { return e.err }

func stepFailed(op string, err error) error { return &stepError{op: op, err: err} }

// Reason turns a failed step's error into what the adapter's owner reads in
// its last_error: which step failed and why, in a few words. It never holds
// a library's internal text, the database's errors or what a name resolved
// to; a Redis server's own reply (NOAUTH, NOGROUP, WRONGTYPE…) is kept,
// first line only and clipped, since it is the owner's server talking.
// Passwords cannot appear: the config holds none and no reply echoes one.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var dial *adapter.DialError
	if errors.As(err, &dial) {
		return clip(dial.Error())
	}
	if errors.Is(err, adapter.ErrSourceTaken) {
		return "refused: " + adapter.ErrSourceTaken.Error() + "; this adapter reads nothing from it"
	}
	op := "redis"
	if step := innermostStep(err); step != nil {
		op = step.op
	}
	var reply redis.Error
	switch {
	case errors.Is(err, errRunID):
		return op + ": " + errRunID.Error()
	case errors.Is(err, adapter.ErrSinkUnavailable):
		return op + ": the database is unavailable, retrying"
	case op == "store events":
		return op + ": the database refused the entries (after max_deliveries they move to the dead-letter stream)"
	case errors.As(err, &reply):
		return clip(op + ": " + reply.Error())
	case errors.Is(err, redis.ErrPoolTimeout):
		return op + ": timed out waiting for a connection"
	case errors.Is(err, redis.ErrClosed):
		return op + ": connection closed"
	}
	if r, ok := adapter.NetReason(err); ok {
		return op + ": " + r
	}
	return op + ": failed (the node's log has the details)"
}

// innermostStep is the step that failed: a new connection's check fails
// inside the step whose command wanted the connection, and is the cause.
func innermostStep(err error) *stepError {
	var last *stepError
	for {
		var step *stepError
		if !errors.As(err, &step) {
			return last
		}
		last, err = step, step.err
	}
}

// clip keeps the first line of s, printable, at most maxReason bytes on a
// rune boundary.
func clip(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utfStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utfStart(b byte) bool { return b&0xC0 != 0x80 }
