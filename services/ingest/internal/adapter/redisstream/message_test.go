package redisstream

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/ingest/internal/adapter"
)

// noDial is the dialer of an empty allow list: it connects nowhere.
var noDial = adapter.NewAllowlist(nil, nil).DialContext

func TestToMessage(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Addr: "x:1", Dialer: noDial, Stream: "s", Group: "g", Consumer: "c"})
	require.NoError(t, err)

	m, err := a.toMessage(redis.XMessage{ID: "1-0", Values: map[string]any{"body": "hi", "content_type": "text/plain", "k": "v"}})
	require.NoError(t, err)
	assert.Equal(t, "1-0", m.SourceID)
	assert.Equal(t, "hi", string(m.Body))
	assert.Equal(t, "text/plain", m.ContentType)
	assert.Equal(t, map[string]string{"content_type": "text/plain", "k": "v", "stream": "s"}, m.Headers)

	m, err = a.toMessage(redis.XMessage{ID: "2-0", Values: map[string]any{"a": "1", "b": "2"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"1","b":"2"}`, string(m.Body))
	assert.Equal(t, "application/json", m.ContentType)
	assert.Equal(t, map[string]string{"a": "1", "b": "2", "stream": "s"}, m.Headers)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Stream: "s"})
	require.EqualError(t, err, "redisstream: missing config [Addr Consumer Dialer Group]")
	_, err = New(Config{Addr: "x:1", Stream: "s", Group: "g", Consumer: "c"})
	require.EqualError(t, err, "redisstream: missing config [Dialer]", "no connection without the allow list's dialer")
	_, err = New(Config{Addr: "x:1", Dialer: noDial, Stream: "s", Group: "g", Consumer: "c", StartID: "5-0"})
	require.Error(t, err)

	a, err := New(Config{Addr: "x:1", Dialer: noDial, Stream: "s", Group: "g", Consumer: "c"})
	require.NoError(t, err)
	assert.Equal(t, "s:dead", a.cfg.DeadLetterStream)
	assert.Equal(t, int64(DefaultBatchSize), a.cfg.BatchSize)
	assert.Equal(t, int64(DefaultMaxDeliveries), a.cfg.MaxDeliveries)
	assert.Equal(t, DefaultBlock, a.cfg.Block)
	assert.Equal(t, DefaultClaimIdle, a.cfg.ClaimIdle)
	assert.Equal(t, "$", a.cfg.StartID)
}

// TestEntryTime: a stream entry id starts with the milliseconds Redis added
// it at (the adapter's lag); anything else has no time.
func TestEntryTime(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.UnixMilli(1700000000123), entryTime("1700000000123-4"))
	for _, id := range []string{"", "x-1", "0-1", "-1", "1700000000123"} {
		require.True(t, entryTime(id).IsZero(), id)
	}
}
