//go:build integration

package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/config"
	sbmcp "github.com/switchboard/switchboard/services/mcp"
)

// The settings the refusals name are pkg/config's.
func TestRefusalsNameTheSettings(t *testing.T) {
	t.Parallel()
	require.Equal(t, config.EnvMCPMaxCallsPerTenant, sbmcp.CallsPerTenantSetting)
	require.Equal(t, config.EnvMCPMaxWaitsPerTenant, sbmcp.WaitsPerTenantSetting)
	require.Equal(t, config.EnvHTTPMaxBody, sbmcp.BodySetting)
}

// holdWaits keeps n claim_todo waits of token on queue in progress, each
// on its own session and started again whenever it returns, until stop is
// called (or the test ends); stop returns once they have. Each waits 2 s,
// so a wait the node still runs after its client left ends well within the
// node's shutdown grace.
func (l *liveNode) holdWaits(t *testing.T, token, queue string, n int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range n {
		s := l.overHTTP(t, token)
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = s.CallTool(ctx, &mcp.CallToolParams{Name: "claim_todo",
					Arguments: map[string]any{"queue": queue, "wait_seconds": 2}})
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// waitRefusal is the refusal of a short claim_todo wait on queue, or ""
// when it was admitted (it then waited 50 ms).
func waitRefusal(t *testing.T, s *mcp.ClientSession, queue string) string {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "claim_todo",
		Arguments: map[string]any{"queue": queue, "wait_seconds": 0.05}})
	require.NoError(t, err)
	if !res.IsError {
		return ""
	}
	return text(res)
}

// Issue 31: claim_todo's waits are bounded per credential and per tenant on
// a node, and past either a wait is refused at once with
// RESOURCE_EXHAUSTED, never queued. A call that does not wait is still
// served (a heartbeat's room), another tenant waits as before, and once
// the waits end, waiting is admitted again.
func TestWaitsAreCappedPerCredentialAndTenant(t *testing.T) {
	t.Parallel()
	l := startNodeWith(t, func(c *config.Config) { c.MCP.MaxWaitsPerTenant = sbmcp.MaxWaitsPerCredential })
	const queue = "waits-q"
	stop := l.holdWaits(t, l.agent, queue, sbmcp.MaxWaitsPerCredential)
	s := l.overHTTP(t, l.agent)
	var refusal string
	require.Eventually(t, func() bool { refusal = waitRefusal(t, s, queue); return refusal != "" },
		20*time.Second, 20*time.Millisecond, "the credential's waits never filled")
	require.Equal(t, fmt.Sprintf("RESOURCE_EXHAUSTED: this credential already has %d waiting calls "+
		"(claim_todo with wait_seconds, subscriptions/listen) on this node, and may have at most %d; "+
		"retry when one returns, or claim with wait_seconds 0", sbmcp.MaxWaitsPerCredential, sbmcp.MaxWaitsPerCredential), refusal)
	require.Empty(t, call(t, s, "claim_todo", map[string]any{"queue": queue})["todos"], "a claim without a wait is served")

	other := l.overHTTP(t, l.newAgent(t, "second"))
	require.Eventually(t, func() bool { refusal = waitRefusal(t, other, queue); return refusal != "" },
		20*time.Second, 20*time.Millisecond, "the tenant's waits never filled")
	require.Equal(t, fmt.Sprintf("RESOURCE_EXHAUSTED: this tenant's credentials already have %d waiting calls "+
		"(claim_todo with wait_seconds, subscriptions/listen) on this node, and may have at most %d "+
		"(SWITCHBOARD_MCP_MAX_WAITS_PER_TENANT); retry when one returns, or claim with wait_seconds 0",
		sbmcp.MaxWaitsPerCredential, sbmcp.MaxWaitsPerCredential), refusal)
	require.Empty(t, waitRefusal(t, l.overHTTP(t, l.stranger), queue), "another tenant waits as before")

	stop()
	require.Eventually(t, func() bool { return waitRefusal(t, other, queue) == "" },
		20*time.Second, 20*time.Millisecond, "waiting is admitted again once the waits ended")
}

// holdRequests keeps n /mcp requests of token in progress: each sends its
// headers and part of its body, and never the rest, so an admitted one
// holds its place until its connection closes; a refused one (a request
// the test sends may have taken the place for a moment) is sent again 10
// ms later. release (or the test's end) closes them all.
func (l *liveNode) holdRequests(t *testing.T, token string, n int) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	hold := func() {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", l.node.HTTPAddr())
		if err != nil {
			return
		}
		mu.Lock()
		conns[conn] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(conns, conn)
			mu.Unlock()
			_ = conn.Close()
		}()
		_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
			l.node.HTTPAddr(), token)
		if err == nil {
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil { // once refused, or closed
				_ = resp.Body.Close()
			}
		}
	}
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				hold()
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			cancel()
			mu.Lock()
			for c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(release)
	return release
}

var listTodos = []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_todos","arguments":{}}}`)

// Issue 31: a credential's and a tenant's /mcp requests in progress on a
// node are capped; past either the request is answered 429 with a
// JSON-RPC error naming the cap before its body is read, and the
// connection closed. Another tenant is served, and so is the caller once
// its requests end.
func TestRequestsInProgressAreCapped(t *testing.T) {
	t.Parallel()
	l := startNodeWith(t, func(c *config.Config) { c.MCP.MaxCallsPerTenant = sbmcp.MaxCallsPerCredential + 2 })
	release := l.holdRequests(t, l.reader, sbmcp.MaxCallsPerCredential)
	var a rawAnswer
	require.Eventually(t, func() bool { a = l.post(t, l.reader, listTodos); return a.status == http.StatusTooManyRequests },
		10*time.Second, 20*time.Millisecond, "the credential's requests never filled")
	e := a.rpcError(t)
	require.EqualValues(t, sbmcp.CodeResourceExhausted, e.Error.Code)
	require.Equal(t, fmt.Sprintf("RESOURCE_EXHAUSTED: this credential already has %d requests in progress on this node, "+
		"and may have at most %d; retry when one returns", sbmcp.MaxCallsPerCredential, sbmcp.MaxCallsPerCredential), e.Error.Message)
	require.Equal(t, "1", a.header.Get("Retry-After"))
	require.True(t, a.closed, "the connection is closed, the body unread")

	second := l.newReader(t)
	l.holdRequests(t, second, 2)
	require.Eventually(t, func() bool { a = l.post(t, second, listTodos); return a.status == http.StatusTooManyRequests },
		10*time.Second, 20*time.Millisecond, "the tenant's requests never filled")
	require.Contains(t, a.rpcError(t).Error.Message, "this tenant's credentials already have 10 requests in progress "+
		"on this node, and may have at most 10 (SWITCHBOARD_MCP_MAX_CALLS_PER_TENANT)")
	require.Equal(t, http.StatusOK, l.post(t, l.stranger, listTodos).status, "another tenant is served")

	release()
	require.Eventually(t, func() bool { return l.post(t, l.reader, listTodos).status == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "served again once its requests ended")
}

// The 429 comes before the body is read: a request over the cap that
// announces a body it never sends is answered anyway.
func TestRequestsOverTheCapAreRefusedUnread(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	l.holdRequests(t, l.reader, sbmcp.MaxCallsPerCredential)
	require.Eventually(t, func() bool { return l.post(t, l.reader, listTodos).status == http.StatusTooManyRequests },
		10*time.Second, 20*time.Millisecond)
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", l.node.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer %s\r\nContent-Length: 100000\r\n\r\n",
		l.node.HTTPAddr(), l.reader)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.True(t, resp.Close)
}

// The bytes of a credential's bodies in progress are capped too: two
// waiting claims padded to 3 MiB each hold 6 MiB, and a third request of 3
// MiB is refused 429 though the credential is far from its count of
// requests.
func TestBodiesInProgressAreCapped(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	pad := strings.Repeat(" ", 3<<20)
	claim := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim_todo",` +
		`"arguments":{"queue":"bodies-q","wait_seconds":1}}` + pad + `}`)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range 2 {
		wg.Go(func() { // a claim in progress, sent again whenever it returns
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+l.node.HTTPAddr()+"/mcp", bytes.NewReader(claim))
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+l.agent)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if resp, err := l.client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}
		})
	}
	list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_todos","arguments":{}}` + pad + `}`)
	var a rawAnswer
	// The two claims must both be in flight when the list arrives; on a
	// saturated machine (make test's two lanes next to other load) that
	// overlap took longer than 20 s to happen once.
	require.Eventually(t, func() bool { a = l.post(t, l.agent, list); return a.status == http.StatusTooManyRequests },
		time.Minute, 20*time.Millisecond, "the credential's bodies never filled")
	msg := a.rpcError(t).Error.Message
	require.Contains(t, msg, "RESOURCE_EXHAUSTED: this credential already has 6291")
	require.Contains(t, msg, "bytes of request bodies in progress on this node, and may have at most 8388608")
	require.Equal(t, http.StatusOK, l.post(t, l.agent, listTodos).status, "a small request still fits")
}

// listenBody is a subscriptions/listen of the 2026-07-28 revision, as its
// clients send it: the notification stream a client opens when it handles
// list changes, which stays open until the client leaves.
const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":` +
	`{"name":"listener","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// listen opens a subscriptions/listen as token and returns its first event
// (the acknowledgement, or a refusal); the stream stays open until ctx
// ends.
func (l *liveNode) listen(ctx context.Context, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+l.node.HTTPAddr()+"/mcp", strings.NewReader(listenBody))
	if err != nil {
		return "", err
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := l.client.Do(req) //nolint:bodyclose // closed once ctx ends, below: the stream stays open till then
	if err != nil {
		return "", err
	}
	go func() { <-ctx.Done(); _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return data, nil
		}
	}
	return "", fmt.Errorf("no event (HTTP %d): %w", resp.StatusCode, sc.Err())
}

// A subscriptions/listen is a waiting call too: it holds its stream until
// the client leaves (or the 30 s every request is given). A credential
// holding MaxWaitsPerCredential of them may open no more, nor wait in a
// claim.
func TestListensCountAsWaits(t *testing.T) {
	t.Parallel()
	l := startNode(t)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	for range sbmcp.MaxWaitsPerCredential {
		ack, err := l.listen(ctx, l.agent)
		require.NoError(t, err)
		require.Contains(t, ack, "notifications/subscriptions/acknowledged")
	}
	refusal, err := l.listen(ctx, l.agent)
	require.NoError(t, err)
	var e jsonrpcError
	require.NoError(t, json.Unmarshal([]byte(refusal), &e), refusal)
	require.EqualValues(t, sbmcp.CodeResourceExhausted, e.Error.Code)
	require.Contains(t, e.Error.Message, "RESOURCE_EXHAUSTED: this credential already has 4 waiting calls")
	require.Contains(t, waitRefusal(t, l.overHTTP(t, l.agent), "listen-q"), "this credential already has 4 waiting calls")
}
