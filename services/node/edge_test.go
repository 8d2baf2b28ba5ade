//go:build integration

package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
)

// edgeWait bounds a request the edge must answer: far longer than an answer
// takes on a loaded machine, so running out of it means the server was
// waiting for the rest of a body it should not have wanted. The slowest
// answer is the JSON body that is over the gRPC limit only as protobuf
// (400,000 values to convert): 9 s alone under -race with both cores busy,
// past 20 s beside the rest of the suite on such a machine, and past 60 s
// once in make test's lanes next to yes x2 and 40 held connections. The
// bound only decides how soon a server that waits for a held body fails.
const edgeWait = 3 * time.Minute

// hugeBody is 200 MB: what grew a node from 33 MB to 912 MB before the edge
// was bounded.
const hugeBody = 200 << 20

// gatedBody is a request body of size bytes (prefix, then filler) of which
// the client lets through only the first allow until release: a server that
// answers while the client is held there has read at most allow bytes of it.
// sent counts what the client's transport took.
type gatedBody struct {
	prefix      string
	size, allow int64
	sent        atomic.Int64
	release     chan struct{}
	once        sync.Once
}

var errReleased = errors.New("released")

func newGatedBody(t *testing.T, prefix string, size, allow int64) *gatedBody {
	t.Helper()
	b := &gatedBody{prefix: prefix, size: size, allow: allow, release: make(chan struct{})}
	t.Cleanup(b.open) // the client's writer must not outlive the test
	return b
}

func (b *gatedBody) open() { b.once.Do(func() { close(b.release) }) }

func (b *gatedBody) Read(p []byte) (int, error) {
	sent := b.sent.Load()
	switch {
	case sent >= b.size:
		return 0, io.EOF
	case sent >= b.allow:
		<-b.release
		return 0, errReleased
	}
	n := int(min(int64(len(p)), b.allow-sent, b.size-sent))
	for i := range n {
		if off := sent + int64(i); off < int64(len(b.prefix)) {
			p[i] = b.prefix[off]
		} else {
			p[i] = 'a'
		}
	}
	b.sent.Add(int64(n))
	return n, nil
}

// edgeResponse is an answer's status, headers and decoded JSON error body.
type edgeResponse struct {
	status int
	header http.Header
	raw    string
	body   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// call sends a request to the node's HTTP edge; contentLength -1 sends the
// body chunked. It fails the test if no answer comes within edgeWait.
//
// It speaks HTTP/1.1 on a connection of its own, the body written by one
// goroutine and the answer read by another: a node that refuses a request
// without reading its body answers and closes, and the client's next write
// then fails (broken pipe) while the answer is already in its socket.
// net/http's client reports whichever of the two it notices first, which on
// a loaded machine is the write error; reading the answer regardless is what
// a client that sends large bodies should do (curl does).
func (b *testBundle) call(t *testing.T, method, path, token string, body io.Reader, contentLength int64) edgeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), edgeWait)
	defer cancel()
	g, gated := body.(*gatedBody)
	if gated {
		// Out of time, the client stops holding the body back.
		defer context.AfterFunc(ctx, g.open)()
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+b.node.HTTPAddr()+path, body)
	require.NoError(t, err)
	req.Close = true
	if body != nil {
		req.ContentLength = contentLength
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", b.node.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(edgeWait)))
	written := make(chan struct{})
	go func() {
		defer close(written)
		_ = req.Write(conn) // a write the node refused to read fails: expected
	}()
	defer func() {
		if gated {
			g.open()
		}
		_ = conn.Close()
		<-written
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err, "%s %s: no answer while the client still held part of the body", method, path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := edgeResponse{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	require.NoError(t, json.Unmarshal(raw, &out.body), "the gateway's JSON error shape: %s", raw)
	return out
}

// An anonymous caller is refused before the node reads its body: a 200 MB
// body (chunked or declared) and 5 MB of JSON get their 401 while the client
// is still holding all but the first 64 KiB, so the node neither stores nor
// parses them. Open routes stay open.
func TestRESTEdgeRefusesAnonymousBodiesUnread(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	const allow = 64 << 10
	for name, tc := range map[string]struct {
		size, contentLength int64
	}{
		"200 MB chunked":  {hugeBody, -1},
		"200 MB declared": {hugeBody, hugeBody},
		"5 MB of JSON":    {5 << 20, 5 << 20},
	} {
		body := newGatedBody(t, `{"kind":"k","payload":{"x":"`, tc.size, allow)
		resp := b.call(t, http.MethodPost, "/api/queues/v/todos", "", body, tc.contentLength)
		body.open()
		require.Equal(t, http.StatusUnauthorized, resp.status, name)
		require.Equal(t, 16, resp.body.Code, name)
		require.Equal(t, "missing or invalid credentials", resp.body.Message, name)
		require.LessOrEqual(t, body.sent.Load(), int64(allow), name)
	}
	health := b.call(t, http.MethodGet, "/health", "", nil, 0)
	require.Equal(t, http.StatusOK, health.status, "GET /health stays open")
}

// A caller with a valid credential gets 413 for a body over the cap: at
// once when it declares the length, and after at most the cap (plus what
// the sockets buffer) when it streams it.
func TestRESTEdgeCapsBodies(t *testing.T) {
	t.Parallel()
	const maxBody = 64 << 10
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.HTTPLimits.MaxBody = maxBody })
	for name, tc := range map[string]struct {
		contentLength, allow int64
	}{
		"200 MB chunked":  {-1, maxBody + 1<<20},
		"200 MB declared": {hugeBody, 0},
	} {
		body := newGatedBody(t, `{"kind":"k","payload":{"x":"`, hugeBody, tc.allow)
		resp := b.call(t, http.MethodPost, "/api/queues/v/todos", b.token, body, tc.contentLength)
		body.open()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.status, name)
		require.Equal(t, "the request body is larger than 65536 bytes", resp.body.Message, name)
		require.LessOrEqual(t, body.sent.Load(), tc.allow, name)
	}
}

// A body sent a byte at a time is cut off at the read timeout: 408, and the
// connection closed.
func TestRESTEdgeCutsOffSlowBodies(t *testing.T) {
	t.Parallel()
	b := setupWith(t, "all", func(cfg *config.Config) { cfg.HTTPLimits.ReadTimeout = 300 * time.Millisecond })
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", b.node.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(edgeWait)))
	_, err = io.WriteString(conn, "POST /api/queues/v/todos HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+b.token+
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered while the body is still incomplete")
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), "the request body did not arrive in time")
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the node closed the connection")
}

// Every way a REST request can be malformed gets its own status and a
// message in our words, naming the parameter or field, never a library's.
func TestRESTErrorsNameTheProblemWithoutLibraryText(t *testing.T) {
	t.Parallel()
	b := setup(t, "all")
	// Under the body cap as JSON, over the gRPC limit as protobuf: each 0
	// is 2 bytes of JSON and 11 of google.protobuf.Value.
	numbers := `{"kind":"k","payload":{"x":[` + strings.Repeat("0,", 400_000) + `0]}}`
	// Bodies over the cap are held at a gate just past it, so the client is
	// not still writing when the node answers and closes.
	const maxBody = 4 << 20
	overCap := func(prefix string) io.Reader { return newGatedBody(t, prefix, 5<<20, maxBody+64<<10) }
	for name, tc := range map[string]struct {
		method, path  string
		body          io.Reader
		contentLength int64
		status, code  int
		message       string
		allow         string
	}{
		"bad int query parameter": {method: http.MethodGet, path: "/api/todos?page_size=abc",
			status: http.StatusBadRequest, code: 3, message: `query parameter "page_size" is not valid`},
		"bad enum query parameter": {method: http.MethodGet, path: "/api/todos?state=NOPE",
			status: http.StatusBadRequest, code: 3, message: `query parameter "state" is not valid`},
		"bad int path parameter": {method: http.MethodGet, path: "/api/events/abc",
			status: http.StatusBadRequest, code: 3, message: `path parameter "id" is not valid`},
		"bad field in the body": {method: http.MethodPost, path: "/api/queues/v/todos", body: strings.NewReader(`{"event_id":"abc"}`),
			status: http.StatusBadRequest, code: 3, message: `request body: field "event_id" has an invalid value`},
		"unknown field in the body": {method: http.MethodPost, path: "/api/queues/v/todos", body: strings.NewReader(`{"nope":1}`),
			status: http.StatusBadRequest, code: 3, message: `request body: unknown field "nope"`},
		"body not JSON": {method: http.MethodPost, path: "/api/queues/v/todos", body: strings.NewReader(`{"kind":`),
			status: http.StatusBadRequest, code: 3, message: "the request body is not valid JSON for this call"},
		"body over the cap": {method: http.MethodPost, path: "/api/queues/v/todos", body: newGatedBody(t, "", 5<<20, 0), contentLength: 5 << 20,
			status: http.StatusRequestEntityTooLarge, code: 8, message: "the request body is larger than 4194304 bytes"},
		"body over the cap, chunked": {method: http.MethodPost, path: "/api/queues/v/todos", body: overCap(`{"kind":"`), contentLength: -1,
			status: http.StatusRequestEntityTooLarge, code: 8, message: "the request body is larger than 4194304 bytes"},
		"a JSON value, then past the cap, chunked": {method: http.MethodPost, path: "/api/queues/v/todos", body: overCap(`{"kind":"k"}`), contentLength: -1,
			status: http.StatusRequestEntityTooLarge, code: 8, message: "the request body is larger than 4194304 bytes"},
		"message over the gRPC limit": {method: http.MethodPost, path: "/api/queues/v/todos", body: strings.NewReader(numbers),
			status: http.StatusRequestEntityTooLarge, code: 8, message: "the request is larger than 4194304 bytes as protobuf; send less"},
		"wrong method": {method: http.MethodGet, path: "/api/queues/v/todos",
			status: http.StatusMethodNotAllowed, code: 12, message: "this method is not allowed here; allowed: POST", allow: "POST"},
		"wrong method, three allowed": {method: http.MethodPut, path: "/api/admin/humans/x",
			status: http.StatusMethodNotAllowed, code: 12, message: "this method is not allowed here; allowed: DELETE, GET, PATCH", allow: "DELETE, GET, PATCH"},
		"unknown path": {method: http.MethodGet, path: "/api/nope",
			status: http.StatusNotFound, code: 5, message: "no such route"},
	} {
		if sr, ok := tc.body.(*strings.Reader); ok && tc.contentLength == 0 {
			tc.contentLength = sr.Size()
		}
		resp := b.call(t, tc.method, tc.path, b.token, tc.body, tc.contentLength)
		if g, ok := tc.body.(*gatedBody); ok {
			g.open()
		}
		require.Equal(t, tc.status, resp.status, "%s: %s", name, resp.raw)
		require.Equal(t, tc.code, resp.body.Code, name)
		require.Equal(t, tc.message, resp.body.Message, name)
		require.Equal(t, tc.allow, resp.header.Get("Allow"), name)
		for _, library := range []string{"strconv", "proto:", "grpc:", "syntax", "line 1", "larger than max", "unexpected"} {
			require.NotContains(t, resp.raw, library, name)
		}
	}
	// Control: the same route answers a good request, and it is the only
	// todo: no refused request was passed on.
	ok := b.call(t, http.MethodPost, "/api/queues/v/todos", b.token, strings.NewReader(`{"kind":"k"}`), int64(len(`{"kind":"k"}`)))
	require.Equal(t, http.StatusOK, ok.status, ok.raw)
	list := b.call(t, http.MethodGet, "/api/todos?queue=v", b.token, nil, 0)
	require.Equal(t, 1, strings.Count(list.raw, `"kind":"k"`), list.raw)
}
