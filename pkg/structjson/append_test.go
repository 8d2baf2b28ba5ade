package structjson_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchboard/switchboard/pkg/structjson"
)

// TestAppendJSONMatchesProtojson: the same JSON value as protojson for
// every kind of Value, escapes, numbers at the exponent boundaries and
// nesting; valid JSON whatever the strings hold.
func TestAppendJSONMatchesProtojson(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]map[string]any{
		"empty":   {},
		"scalars": {"s": "x", "n": 1.5, "i": 42.0, "neg": -3.0, "t": true, "f": false, "z": nil},
		"escapes": {"q": "a\"b\\c", "ctl": "\x00\x01\n\r\t\x1f", "uni": "héllo ✓ 😀", "html": "<a&b>", "k\"ey": 1.0},
		"numbers": {"tiny": 1e-7, "small": 1e-6, "big": 1e20, "huge": 1e21, "max": math.MaxFloat64, "neg0": math.Copysign(0, -1), "third": 1.0 / 3},
		"nested":  {"a": map[string]any{"b": []any{1.0, "two", map[string]any{"c": []any{}}, nil, true}}, "l": []any{}},
	} {
		s, err := structpb.NewStruct(v)
		require.NoError(t, err, name)
		got, err := structjson.AppendJSON(nil, s)
		require.NoError(t, err, name)
		want, err := protojson.Marshal(s)
		require.NoError(t, err, name)
		var g, w any
		require.NoError(t, json.Unmarshal(got, &g), "%s: %s", name, got)
		require.NoError(t, json.Unmarshal(want, &w), name)
		require.Equal(t, w, g, name)
	}
	got, err := structjson.AppendJSON([]byte("prefix:"), &structpb.Struct{Fields: map[string]*structpb.Value{"b": structpb.NewNumberValue(2), "a": structpb.NewStringValue("1")}})
	require.NoError(t, err)
	require.JSONEq(t, `{"a":"1","b":2}`, string(got[len("prefix:"):]))
	require.Equal(t, `prefix:{"a":"1","b":2}`, string(got), "appends, keys sorted")
}

// TestAppendJSONRefusesNonFiniteAndRepairsBadUTF8: NaN, infinities and
// kindless values are errors (as for protojson); invalid UTF-8 never yields
// invalid JSON.
func TestAppendJSONRefusesNonFiniteAndRepairsBadUTF8(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		s := &structpb.Struct{Fields: map[string]*structpb.Value{"deep": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(f)}})}}
		_, err := structjson.AppendJSON(nil, s)
		require.ErrorIs(t, err, structjson.ErrNotFinite)
	}
	_, err := structjson.AppendJSON(nil, &structpb.Struct{Fields: map[string]*structpb.Value{"unset": {}}})
	require.ErrorIs(t, err, structjson.ErrNoKind)
	_, err = structjson.AppendJSON(nil, &structpb.Struct{Fields: map[string]*structpb.Value{"nil": nil}})
	require.ErrorIs(t, err, structjson.ErrNoKind)
	s := &structpb.Struct{Fields: map[string]*structpb.Value{"bad": structpb.NewStringValue("a\xffb")}}
	got, err := structjson.AppendJSON(nil, s)
	require.NoError(t, err)
	require.True(t, json.Valid(got), "%q", got)
	require.JSONEq(t, `{"bad":"a\ufffdb"}`, string(got))
}
