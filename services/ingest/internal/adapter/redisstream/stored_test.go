package redisstream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/apierr"
	"github.com/switchboard/switchboard/services/ingest/internal/adapter/redisstream"
)

// TestParseStoredFillsDefaults: the minimal config stores every default,
// the same ones the runtime Config falls back to.
func TestParseStoredFillsDefaults(t *testing.T) {
	t.Parallel()
	c, violations := redisstream.ParseStored(map[string]any{"addr": "redis:6379", "stream": "in"})
	require.Empty(t, violations)
	require.Equal(t, redisstream.StoredConfig{
		Addr: "redis:6379", Stream: "in", Group: redisstream.DefaultGroup, Start: "$",
		BodyField: redisstream.DefaultBodyField, MaxDeliveries: redisstream.DefaultMaxDeliveries, BatchSize: redisstream.DefaultBatchSize,
	}, c)
	rc := c.Config("id-1", "node-a", nil)
	require.Equal(t, "node-a", rc.Consumer)
	require.Equal(t, "id-1", rc.ID)
	require.EqualValues(t, redisstream.DefaultBatchSize, rc.BatchSize)
}

// TestParseStoredNamesEveryViolation: each bad key is named, in key order.
func TestParseStoredNamesEveryViolation(t *testing.T) {
	t.Parallel()
	_, violations := redisstream.ParseStored(map[string]any{
		"addr": "no-port", "password": "x", "start": "5", "db": 99.0, "batch_size": 1.5, "zz": true,
	})
	require.Equal(t, []apierr.FieldViolation{
		{Field: "password", Description: "passwords are not supported yet: they would be stored in clear"},
		{Field: "zz", Description: "is not a known key; allowed: addr, stream, group, start, db, username, body_field, max_deliveries, batch_size"},
		{Field: "addr", Description: `must be "host:port"`},
		{Field: "stream", Description: "is required"},
		{Field: "start", Description: `must be "$" (new entries only) or "0" (the whole stream)`},
		{Field: "db", Description: "must be between 0 and 15"},
		{Field: "batch_size", Description: "must be an integer"},
	}, violations)
}
