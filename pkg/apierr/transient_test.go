package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/puddle/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/switchboard/switchboard/pkg/apierr"
)

// TestDatabaseFaultsAreRetryable: every fault of the database or of the path
// to it reaches the client as UNAVAILABLE, a deadlock or serialization
// failure as ABORTED, and neither leaks its cause; INTERNAL is left for what
// is neither (a bug).
func TestDatabaseFaultsAreRetryable(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return fmt.Errorf("claim: %w", &pgconn.PgError{Code: code, Message: "secret SQL detail"})
	}
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: errno}}
	}
	cases := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"deadlock", pg("40P01"), codes.Aborted},
		{"serialization failure", pg("40001"), codes.Aborted},
		{"admin shutdown", pg("57P01"), codes.Unavailable},
		{"crash shutdown", pg("57P02"), codes.Unavailable},
		{"cannot connect now (starting up)", pg("57P03"), codes.Unavailable},
		{"statement timeout", pg("57014"), codes.Unavailable},
		{"too many connections", pg("53300"), codes.Unavailable},
		{"disk full", pg("53100"), codes.Unavailable},
		{"connection failure", pg("08006"), codes.Unavailable},
		{"read-only standby after failover", pg("25006"), codes.Unavailable},
		{"lock timeout", pg("55P03"), codes.Unavailable},
		{"I/O error", pg("58030"), codes.Unavailable},
		{"connection refused", fmt.Errorf("acquire: %w", opErr(syscall.ECONNREFUSED)), codes.Unavailable},
		{"connection reset", fmt.Errorf("query: %w", opErr(syscall.ECONNRESET)), codes.Unavailable},
		{"bare errno", fmt.Errorf("write: %w", syscall.EPIPE), codes.Unavailable},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), codes.Unavailable},
		{"closed network connection", fmt.Errorf("read: %w", net.ErrClosed), codes.Unavailable},
		{"closed pool", fmt.Errorf("acquire: %w", puddle.ErrClosedPool), codes.Unavailable},
		{"pgx connect error (refused)", refusedConnect(t), codes.Unavailable},
		{"pgx connect error (database not accepting connections)", rejectedConnect(t, "55000"), codes.Unavailable},
		{"pgx connect error (database does not exist)", rejectedConnect(t, "3D000"), codes.Unavailable},
		{"syntax error is a bug", pg("42601"), codes.Internal},
		{"undefined table is a bug", pg("42P01"), codes.Internal},
		{"plain error is a bug", errors.New("nil map"), codes.Internal},
		{"caller's deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, logged := apierr.ToStatus(tc.err)
			require.Equal(t, tc.code, st.Code(), "%v", tc.err)
			require.NotContains(t, st.Message(), "secret")
			require.NotContains(t, st.Message(), "SQLSTATE")
			require.Equal(t, tc.code != codes.DeadlineExceeded, logged, "the cause must be logged server-side")
		})
	}
}

// TestDeliberateStatusesPassThrough: a domain error that names a condition
// keeps its own code even when it wraps a database fault.
func TestDeliberateStatusesPassThrough(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("%w: %w", apierr.FailedPrecondition("stale lease"), &pgconn.PgError{Code: "57P01"})
	st, logged := apierr.ToStatus(err)
	require.Equal(t, codes.FailedPrecondition, st.Code())
	require.False(t, logged)
}

// refusedConnect is what pgx returns when nothing listens at the address: a
// real connection attempt to a port just closed.
func refusedConnect(t *testing.T) error {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = pgconn.Connect(context.Background(), "postgres://nobody@"+addr+"/none?connect_timeout=5&sslmode=disable")
	require.Error(t, err)
	var ce *pgconn.ConnectError
	require.ErrorAs(t, err, &ce)
	return err
}

// rejectedConnect is what pgx returns when the server answers the startup
// message with an error of the given SQLSTATE, as Postgres does for a
// database with ALLOW_CONNECTIONS false (55000): a real connection attempt
// to a listener that speaks the protocol's first exchange.
func rejectedConnect(t *testing.T, code string) error {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		b := pgproto3.NewBackend(c, c)
		if _, err := b.ReceiveStartupMessage(); err != nil {
			served <- err
			return
		}
		b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: code, Message: "secret refusal"})
		served <- b.Flush()
	}()
	_, err = pgconn.Connect(context.Background(), "postgres://nobody@"+l.Addr().String()+"/none?connect_timeout=5&sslmode=disable")
	require.NoError(t, <-served)
	var ce *pgconn.ConnectError
	require.ErrorAs(t, err, &ce)
	var pe *pgconn.PgError
	require.ErrorAs(t, err, &pe, "the server's refusal is inside the connect error")
	require.Equal(t, code, pe.Code)
	return err
}
