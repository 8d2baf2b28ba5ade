package httpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/pkg/httpserver"
)

// waitFor bounds every wait on a condition: long, so a loaded machine does
// not fail a test that would pass.
const waitFor = 20 * time.Second

// serve runs h on a fresh server with o.
func serve(t *testing.T, h http.Handler, o httpserver.Options) string {
	t.Helper()
	s, err := httpserver.New(t.Context(), zap.NewNop(), "127.0.0.1:0", h, o)
	require.NoError(t, err)
	require.NoError(t, s.Start(t.Context()))
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s.Addr()
}

// dial opens a raw connection that fails any read or write after waitFor.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitFor)))
	return conn
}

// readBodyOr408 answers 408 when the body does not arrive in time, as the
// gateway and the webhook route do.
var readBodyOr408 = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, err := io.ReadAll(r.Body)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		w.WriteHeader(http.StatusRequestTimeout)
		return
	}
	_, _ = io.WriteString(w, "read")
})

// A client that sends its body a byte at a time (or not at all) is cut off
// at the body deadline: answered 408, and its connection closed.
func TestSlowBodyIsCutOffAndTheConnectionClosed(t *testing.T) {
	t.Parallel()
	addr := serve(t, readBodyOr408, httpserver.Options{BodyReadTimeout: 200 * time.Millisecond})
	conn := dial(t, addr)
	_, err := io.WriteString(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered while the body is still incomplete")
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")
}

// The body deadline ends with the body: a handler that answers long after
// reading it (a long poll), and a request without a body (a streaming
// subscription), keep their context past it.
func TestBodyDeadlineDoesNotCutLongResponses(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		select {
		case <-r.Context().Done():
			w.WriteHeader(http.StatusTeapot) // cancelled by the lapsed deadline
		case <-time.After(5 * timeout):
			_, _ = io.WriteString(w, "ok")
		}
	}), httpserver.Options{BodyReadTimeout: timeout})
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		conn := dial(t, addr)
		req := "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"
		if method == http.MethodPost {
			req = "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
		}
		_, err := io.WriteString(conn, req)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, method)
	}
}

// Connections beyond the cap are not served until one of those being
// served closes.
func TestConnectionsBeyondTheCapWait(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), httpserver.Options{MaxConns: 2})
	get := func(conn net.Conn) error {
		if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return resp.Body.Close()
	}
	// Two kept-alive connections, each served once, hold the two places.
	held := []net.Conn{dial(t, addr), dial(t, addr)}
	for _, c := range held {
		require.NoError(t, get(c))
	}
	third, conn := make(chan error, 1), dial(t, addr)
	go func() { third <- get(conn) }()
	require.Never(t, func() bool { return len(third) > 0 }, 500*time.Millisecond, 10*time.Millisecond,
		"a third connection is not served while two are open")
	require.NoError(t, held[0].Close())
	select {
	case err := <-third:
		require.NoError(t, err, "served once a place is free")
	case <-time.After(waitFor):
		t.Fatal("the third connection was never served")
	}
}

// A request answered without its body being read (a 401 or 413 before the
// body) is half-closed after the answer under the connection cap too, so a
// client still sending reads the answer and then EOF, not a reset that can
// take the unread answer with it.
func TestUnreadBodyIsAnsweredThenHalfClosed(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	}), httpserver.Options{MaxConns: 4, BodyReadTimeout: waitFor})
	conn := dial(t, addr)
	_, err := io.WriteString(conn, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n")
	require.NoError(t, err)
	go func() { _, _ = conn.Write(make([]byte, 1<<20)) }() // fails once the test closes conn
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "half-closed, not reset")
}
