package apierr

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL SQLSTATEs that name a client's mistake rather than a fault.
const (
	pgUniqueViolation     = "23505"
	pgExclusionViolation  = "23P01" // an EXCLUDE constraint: "no two rows like this", a generalized unique
	pgCheckViolation      = "23514"
	pgForeignKeyViolation = "23503"
	// Text PostgreSQL cannot store: NUL or invalid UTF-8 in text (22021),
	// \u0000 in jsonb (22P05). The request guard refuses it first, naming
	// the field; this keeps a path that bypasses the guard from answering
	// INTERNAL.
	pgBadText        = "22021"
	pgUntranslatable = "22P05"
)

// Constraints is what one store knows about the constraints its statements
// can break: the request field a CHECK constraint guards, and the message
// for a unique constraint. Unlisted ones fall back to generic answers.
type Constraints struct {
	// Checks maps a CHECK constraint's name to the field to fix and why.
	Checks map[string]FieldViolation
	// Uniques maps a unique or exclusion constraint's (or unique index's)
	// name to the client-facing text of ALREADY_EXISTS.
	Uniques map[string]string
}

// FromPostgres turns an error from a store's statement into the domain
// error a client may see, and is the one place every store does so:
//
//   - no row (pgx.ErrNoRows) and a foreign-key violation are NOT_FOUND for
//     what ("todo 7", "human …"): a row referenced but deleted concurrently,
//     or out of the caller's reach, looks exactly like a missing one;
//   - a unique or exclusion violation is ALREADY_EXISTS with the
//     constraint's message (or "<what> already exists");
//   - a CHECK violation c knows is INVALID_ARGUMENT naming the field;
//   - anything else is wrapped with op for the server log and reaches the
//     client as INTERNAL "internal error" (ToStatus).
//
// c may be nil.
func FromPostgres(err error, op, what string, c *Constraints) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return NotFound("%s not found", what)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgUniqueViolation, pgExclusionViolation:
			if msg, ok := c.unique(pe.ConstraintName); ok {
				return AlreadyExists("%s", msg)
			}
			return AlreadyExists("%s already exists", what)
		case pgCheckViolation:
			if v, ok := c.check(pe.ConstraintName); ok {
				return Invalid(v)
			}
		case pgForeignKeyViolation:
			return NotFound("%s not found", what)
		case pgBadText, pgUntranslatable:
			return Invalid(FieldViolation{Field: "request", Description: "holds text the database cannot store (NUL or invalid UTF-8)"})
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Affected maps the result of a statement that must change one row (a
// delete, say): its error through FromPostgres, and no row changed as
// NOT_FOUND for what.
func Affected(n int64, err error, op, what string, c *Constraints) error {
	if err != nil {
		return FromPostgres(err, op, what, c)
	}
	if n == 0 {
		return NotFound("%s not found", what)
	}
	return nil
}

// IsUniqueViolation reports whether err is a unique violation of the named
// constraint (a store that retries with a fresh value, such as a random
// slug, tells its own collisions from the client's).
func IsUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgUniqueViolation && pe.ConstraintName == constraint
}

// IsDataError reports whether PostgreSQL refused the data itself (classes
// 22, data exception, and 23, integrity constraint violation): retrying the
// same input cannot help, unlike a fault of the database or the network.
func IsDataError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && len(pe.Code) == 5 && (pe.Code[:2] == "22" || pe.Code[:2] == "23")
}

func (c *Constraints) unique(name string) (string, bool) {
	if c == nil {
		return "", false
	}
	msg, ok := c.Uniques[name]
	return msg, ok
}

func (c *Constraints) check(name string) (FieldViolation, bool) {
	if c == nil {
		return FieldViolation{}, false
	}
	v, ok := c.Checks[name]
	return v, ok
}
