package apierr

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Why the database failed decides what a client may do about it. A fault of
// the database or of the path to it (refused or reset connections, a server
// shutting down or restarting, too many connections, a standby that became
// read-only after a failover, a pool with no connection to give) is not the
// request's fault and may well pass: UNAVAILABLE, which clients retry. A
// deadlock or serialization failure aborted the transaction, and running the
// same request again is correct: ABORTED. INTERNAL is left for real bugs.

// SQLSTATE classes and codes that are faults of the database, not of the
// request.
var (
	transientClasses = map[string]bool{
		"08": true, // connection exception
		"53": true, // insufficient resources (too many connections, out of memory or disk)
		"57": true, // operator intervention (admin/crash shutdown, cannot connect now, canceled by the server)
		"58": true, // system error (I/O error)
	}
	transientCodes = map[string]bool{
		"25006": true, // read_only_sql_transaction: the primary is now a standby
		"55P03": true, // lock_not_available (lock_timeout)
		"40003": true, // statement_completion_unknown
	}
	conflictCodes = map[string]bool{
		"40001": true, // serialization_failure
		"40P01": true, // deadlock_detected
	}
)

// IsConflict reports whether err is a deadlock or serialization failure:
// the transaction was rolled back and running it again is correct.
func IsConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && conflictCodes[pe.Code]
}

// IsTransient reports whether err is a fault of the database or of the path
// to it, which a retry may get past (see the comment above).
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	// A connection that could not be opened is never the request's fault,
	// whatever the server said while refusing it: "the database is not
	// accepting connections" (55000) and "does not exist" (3D000) come as a
	// PgError inside the ConnectError, in classes that mean a bug elsewhere.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return transientCodes[pe.Code] || (len(pe.Code) == 5 && transientClasses[pe.Code[:2]])
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.As(err, &ne):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, puddle.ErrClosedPool):
		return true
	}
	// pgx marks errors it raised before anything reached the server (a dead
	// connection found on send, say), and a connection lost mid-statement.
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}
