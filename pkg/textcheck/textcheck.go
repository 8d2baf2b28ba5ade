// Package textcheck decides, in one place, what text a client may hand the
// service: valid UTF-8 without NUL (U+0000). Everything a request carries as
// text ends in a PostgreSQL text or jsonb column, and PostgreSQL refuses
// both: a NUL byte or a stray byte in text fails with SQLSTATE 22021, and
// \u0000 in jsonb with 22P05. Refused at the edge, such text is the
// caller's INVALID_ARGUMENT (or the webhook sender's 400) naming the field;
// let through, it was an INTERNAL error with a stack in the log, and after
// a partial write.
//
// An unpaired UTF-16 surrogate is invalid UTF-8 too: Go decodes a JSON
// "\ud800" to U+FFFD, but its UTF-8 form (ED A0 80) can still arrive in raw
// bytes, and utf8.ValidString refuses it.
//
// The gRPC request guard (pkg/grpcserver) applies Check to every string of
// every request message, and the webhook edge (services/ingest) to every
// header it stores.
//
// Label (label.go) is the stricter rule for the text a person reads to tell
// things apart (display names, kinds, topics): no control, format,
// separator, private-use or blank filler characters. Each service applies
// it to its own such fields, where it validates them; payloads and other
// free-form content are held to Check only.
package textcheck

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// The reasons Check gives; their texts complete "<field> …" in a client's
// error (apierr.FieldViolation.Description).
var (
	ErrNUL     = errors.New("contains a NUL character (U+0000), which cannot be stored")
	ErrNotUTF8 = errors.New("is not valid UTF-8 (a stray byte or an unpaired surrogate)")
)

// Check returns nil when s is acceptable text, else ErrNUL or ErrNotUTF8.
// It allocates nothing and reads s at most twice with the runtime's fast
// loops (IndexByte is vectorised; ValidString checks eight ASCII bytes at a
// time), so it is cheap enough for every string of every request.
func Check(s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return ErrNUL
	}
	if !utf8.ValidString(s) {
		return ErrNotUTF8
	}
	return nil
}
