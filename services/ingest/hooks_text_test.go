//go:build integration

package ingest_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHookRefusesTextItCannotStore: a header the event would store with a
// NUL or invalid UTF-8 (the Content-Type, a delivery id, any other) is the
// sender's 400 naming it, not the 503 of a database that refused it (which
// the sender would retry forever); nothing is stored. Valid non-ASCII text
// is stored as sent.
func TestHookRefusesTextItCannotStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"n":1}`)
	signed := func(id string, extra ...string) http.Header {
		h := standardHeaders(t, id, time.Now(), body)
		for i := 0; i < len(extra); i += 2 {
			h[extra[i]] = []string{extra[i+1]}
		}
		return h
	}

	for name, c := range map[string]struct {
		header http.Header
		says   []string
	}{
		"non-UTF-8 Content-Type": {signed("m1", "Content-Type", "application/json; charset=\xff"), []string{"Content-Type", "UTF-8"}},
		"Latin-1 header value":   {signed("m2", "X-Note", "caf\xe9"), []string{"x-note", "UTF-8"}},
		"non-UTF-8 delivery id":  {signed("m3\xfe"), []string{"UTF-8"}},
	} {
		code, resp := e.post(t, slug, body, c.header)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", name, resp)
		for _, s := range c.says {
			require.Contains(t, resp, s, name)
		}
	}

	// A NUL in a header: Go's HTTP server refuses it itself (400; Go's
	// client will not even send it)…
	conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", strings.TrimPrefix(e.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /hooks/"+slug+" HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\x00\r\nContent-Length: 0\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	// …and the edge does too when one reaches it all the same.
	for name, h := range map[string]http.Header{
		"NUL in Content-Type": signed("m5", "Content-Type", "text/plain\x00"),
		"NUL in a header":     signed("m6", "X-Note", "a\x00b"),
	} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hooks/"+slug, bytes.NewReader(body))
		req.SetPathValue("slug", slug)
		req.Header = h
		rec := httptest.NewRecorder()
		e.hook.ServeHTTP(rec, req)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", name, rec.Body.String())
		require.Contains(t, rec.Body.String(), "NUL", name)
	}
	require.Zero(t, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1`), "nothing stored for a refusal")
	require.Zero(t, e.count(t, `SELECT count(*) FROM todos WHERE human_id = $1`))

	code, answer := e.post(t, slug, body, signed("m7", "X-Note", "café ✓"))
	require.Equal(t, http.StatusOK, code, answer)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND headers->>'x-note' = 'café ✓'`))
}

// TestHookCutsALongDeliveryIDOnACharacter: delivery ids are cut to 255
// bytes; a cut inside a multi-byte character would be invalid UTF-8 (and
// a 503 from the database).
func TestHookCutsALongDeliveryIDOnACharacter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slug := e.endpoint(t, "standard_webhooks", []byte(whsec), "")
	body := []byte(`{"n":2}`)
	id := strings.Repeat("a", 254) + "日本"
	code, resp := e.post(t, slug, body, standardHeaders(t, id, time.Now(), body))
	require.Equal(t, http.StatusOK, code, resp)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE human_id = $1 AND delivery_id = repeat('a', 254)`))
}
