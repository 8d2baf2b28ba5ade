package mcp

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"
)

// boundedJSON writes what encoding/json writes for the same map, byte for
// byte, and cut at any limit it is the start of that, past the limit.
func TestBoundedJSONIsEncodingJSONCut(t *testing.T) {
	t.Parallel()
	s, err := structpb.NewStruct(map[string]any{
		"html":    "<a href='x'>&</a>",
		"unicode": "é中😀\u2028",
		"numbers": []any{0, -1.5, 1e21, 0.1, 12345678901234567, math.Copysign(0, -1)},
		"nested":  map[string]any{"b": []any{true, false, nil, map[string]any{}}, "a": []any{}},
		"":        "empty key",
		"z":       strings.Repeat("long ", 40),
	})
	require.NoError(t, err)
	want, err := json.Marshal(s.AsMap())
	require.NoError(t, err)

	got, over, err := boundedJSON(s, len(want))
	require.NoError(t, err)
	require.False(t, over)
	require.Equal(t, string(want), string(got))
	for limit := 0; limit < len(want); limit++ {
		got, over, err := boundedJSON(s, limit)
		require.NoError(t, err)
		require.True(t, over, "limit %d", limit)
		require.Greater(t, len(got), limit, "limit %d", limit)
		require.Equal(t, string(want[:len(got)]), string(got), "limit %d: a start of the whole", limit)
	}
}

// A long string is not escaped whole when only its start can show.
func TestBoundedJSONCutsALongStringEarly(t *testing.T) {
	t.Parallel()
	s, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("<", 1<<20)})
	require.NoError(t, err)
	got, over, err := boundedJSON(s, 100)
	require.NoError(t, err)
	require.True(t, over)
	require.Less(t, len(got), 7*100, "at most six times the limit (one escape per byte), not the 6 MiB of the whole")
	require.True(t, bytes.HasPrefix(got, []byte(`{"blob":"\u003c\u003c`)), string(got[:30]))
}
