package redisstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// replyError is a Redis server's error reply (go-redis's redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// TestReason: each failure reads as a short, useful line with no library
// internals (SQL, resolved addresses) and nothing after a reply's first line.
func TestReason(t *testing.T) {
	t.Parallel()
	refused := &adapter.DialError{Addr: "127.0.0.1:6379", Reason: "refused by SWITCHBOARD_ADAPTER_ALLOW (loopback)"}
	cases := map[string]struct {
		err  error
		want string
	}{
		"healthy":     {nil, ""},
		"allow list":  {stepFailed("read (XREADGROUP >)", fmt.Errorf("wrapped: %w", refused)), "dial 127.0.0.1:6379: refused by SWITCHBOARD_ADAPTER_ALLOW (loopback)"},
		"noauth":      {stepFailed("create consumer group", replyError("NOAUTH Authentication required.")), "create consumer group: NOAUTH Authentication required."},
		"nogroup":     {stepFailed("read (XREADGROUP >)", replyError("NOGROUP No such key 's' or consumer group 'g'")), "read (XREADGROUP >): NOGROUP No such key 's' or consumer group 'g'"},
		"second line": {stepFailed("read (XREADGROUP >)", replyError("ERR bad\r\nsecret")), "read (XREADGROUP >): ERR bad"},
		"conn reset":  {stepFailed("acknowledge (XACK)", &net.OpError{Op: "read", Err: syscall.ECONNRESET}), "acknowledge (XACK): connection reset"},
		"eof":         {stepFailed("read (XREADGROUP 0)", io.EOF), "read (XREADGROUP 0): connection closed"},
		"timeout":     {stepFailed("read (XREADGROUP 0)", context.DeadlineExceeded), "read (XREADGROUP 0): timed out"},
		"sink down": {stepFailed("store events", fmt.Errorf("%w: ERROR: relation \"events\" (SQLSTATE 57P01)", adapter.ErrSinkUnavailable)),
			"store events: the database is unavailable, retrying"},
		"sink refused": {stepFailed("store events", errors.New(`ERROR: value too long (SQLSTATE 22001)`)),
			"store events: the database refused the entries (after max_deliveries they move to the dead-letter stream)"},
		"unknown": {errors.New("postgres://u:hunter2@db/x failed"), "redis: failed (the node's log has the details)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := Reason(tc.err)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "SQLSTATE")
			require.NotContains(t, got, "hunter2")
		})
	}
}

func TestReasonIsBounded(t *testing.T) {
	t.Parallel()
	got := Reason(stepFailed("read", replyError("ERR "+strings.Repeat("é", 400)+"\x00")))
	require.LessOrEqual(t, len(got), maxReason+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
	require.NotContains(t, Reason(replyError("ERR a\x00b\x1bc")), "\x00")
}
