package structjson_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchboard/switchboard/pkg/structjson"
)

const (
	flatPayload   = `{"run": "abc123", "pub": 3, "seq": 1234, "sent": "1764900000000000000", "pad": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`
	nestedPayload = `{"user": {"id": 42, "name": "Zoë", "tags": ["a", "b", "c"], "active": true}, "items": [{"sku": "x-1", "qty": 2, "price": 9.99}, {"sku": "y-2", "qty": 1, "price": 0.5, "note": null}], "ts": 1764900000.123}`
)

// decodeAppended appends raw's Struct after a prefix, checks the prefix is
// kept and decodes the rest.
func decodeAppended(t *testing.T, raw string) *structpb.Struct {
	t.Helper()
	got, err := structjson.AppendStructProto([]byte("prefix"), []byte(raw))
	require.NoError(t, err, "%.200s", raw)
	require.Equal(t, "prefix", string(got[:6]))
	var s structpb.Struct
	require.NoError(t, proto.Unmarshal(got[6:], &s), "%.200s", raw)
	return &s
}

// fromJSONWire is FromJSON's Struct after a proto.Marshal round trip: what
// a client decodes today.
func fromJSONWire(t *testing.T, raw string) *structpb.Struct {
	t.Helper()
	want, err := structjson.FromJSON([]byte(raw))
	require.NoError(t, err, "%.200s", raw)
	wire, err := proto.Marshal(want)
	require.NoError(t, err)
	var s structpb.Struct
	require.NoError(t, proto.Unmarshal(wire, &s))
	return &s
}

// deep is {"a": [[…[inner]…]]} with levels levels of nesting in all.
func deep(levels int, inner string) string {
	return `{"a":` + strings.Repeat(`[`, levels-1) + inner + strings.Repeat(`]`, levels-1) + `}`
}

// TestAppendStructProtoMatchesFromJSON: every kind of value, whitespace
// wherever JSON allows it, escapes, numbers and lengths that need 1 to 3
// varint bytes at every level decode to what FromJSON gives. Where keys
// are unique and sorted at every level, the bytes are those of a
// deterministic proto.Marshal too.
func TestAppendStructProtoMatchesFromJSON(t *testing.T) {
	t.Parallel()
	long, huge := strings.Repeat("x", 200), strings.Repeat("y", 20000)
	cases := map[string]bool{ // raw: keys unique and sorted
		`{}`: true, " \t\r\n{ \t\r\n} \t\r\n": true, flatPayload: false, nestedPayload: false,
		`{"a":null,"b":true,"c":false,"d":"","e":0,"f":{},"g":[]}`:                          true,
		` { "a" : [ 1 , "x" , { "k" : [ ] } , null , true ] , "b" : { "c" : { } } } `:       true,
		`{"n":[-0,0,1,-1,1.5,1e3,1E+3,2e-3,0.1e1,123456789012345678901234567890,1e-400]}`:   true,
		`{"max":1.7976931348623157e308,"min":5e-324,"third":0.3333333333333333333333}`:      true,
		`{"e":"\"\\\/\b\f\n\r\t\u0000\u001f\u00e9\u20AC\ud83d\ude00"}`:                      true,
		`{"half":"\ud800\u0041","lone":"\ud800","low":"\udc00x","rev":"\udc00\ud800"}`:      true,
		"{\"bad\":\"a\xffb\xc3\",\"over\":\"\xc0\xaf\",\"surr\":\"\xed\xa0\x80\"}":          true,
		"{\"k\xff\\n\":1,\"ok\":\"é✓😀\"}":                                                   false,
		`{"a":"` + long + `","b":["` + long + `",{"c":"` + huge + `"}],"d":"` + huge + `"}`: true,
		`{"esc":"` + strings.Repeat(`\n`, 150) + `"}`:                                       true,
		deep(structjson.MaxReadDepth, `"`+long+`"`):                                         true,
		deep(structjson.MaxReadDepth-1, `{"k":"`+huge+`"}`):                                 true,
		deep(50, strings.Repeat(`{"k":"`+long+`"},`, 30)+`1`):                               true,
	}
	for raw, sorted := range cases {
		got := decodeAppended(t, raw)
		want := fromJSONWire(t, raw)
		require.True(t, proto.Equal(want, got), "%.200s:\ngot  %.300v\nwant %.300v", raw, got, want)
		if sorted {
			s, err := structjson.FromJSON([]byte(raw))
			require.NoError(t, err)
			wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
			require.NoError(t, err)
			mine, err := structjson.AppendStructProto(nil, []byte(raw))
			require.NoError(t, err)
			require.Equal(t, string(wire), string(mine), "%.200s", raw)
		}
	}
}

// TestAppendStructProtoDecodesStrings pins the values of escapes, surrogates
// and invalid UTF-8 (U+FFFD per bad byte, as encoding/json).
func TestAppendStructProtoDecodesStrings(t *testing.T) {
	t.Parallel()
	got := decodeAppended(t, "{\"s\":\"\\ud83d\\ude00|\\ud800|\\udc00\\ud800|\\ud800\\u0041|a\xffb|\\/\\b\",\"k\xfe\":1}")
	require.Equal(t, "😀|\ufffd|\ufffd\ufffd|\ufffdA|a\ufffdb|/\b", got.GetFields()["s"].GetStringValue())
	require.Contains(t, got.GetFields(), "k\ufffd")
}

// TestAppendStructProtoDuplicateKeys: encoding/json keeps the last value of
// a repeated key (replacing, not merging, an object) and so does a protobuf
// decoder with the repeated map entry.
func TestAppendStructProtoDuplicateKeys(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]map[string]any{
		`{"a":1,"a":"x"}`:                          {"a": "x"},
		`{"a":{"b":1},"b":2,"a":{"c":[true]}}`:     {"a": map[string]any{"c": []any{true}}, "b": 2.0},
		`{"l":[1,2],"l":[3]}`:                      {"l": []any{3.0}},
		`{"o":{"x":1,"x":null},"o":{"y":1,"y":2}}`: {"o": map[string]any{"y": 2.0}},
	} {
		w, err := structpb.NewStruct(want)
		require.NoError(t, err)
		got := decodeAppended(t, raw)
		require.True(t, proto.Equal(w, got), "%s: got %v", raw, got)
		require.True(t, proto.Equal(fromJSONWire(t, raw), got), raw)
	}
}

// TestAppendStructProtoRefusesWhatFromJSONRefuses: the same sentinels, a
// syntax error for everything encoding/json rejects, a number beyond a
// double refused, and b returned as it was.
func TestAppendStructProtoRefusesWhatFromJSONRefuses(t *testing.T) {
	t.Parallel()
	check := func(raw string) error {
		t.Helper()
		_, fromErr := structjson.FromJSON([]byte(raw))
		require.Error(t, fromErr, "FromJSON accepts %.100q", raw)
		got, err := structjson.AppendStructProto([]byte("keep"), []byte(raw))
		require.Error(t, err, "%.100q", raw)
		require.Equal(t, "keep", string(got), "%.100q", raw)
		return err
	}
	for _, raw := range []string{`null`, `[1]`, ` [] `, `"s"`, `1`, `-0.5`, `true`, `false`} {
		require.ErrorIs(t, check(raw), structjson.ErrNotObject, raw)
	}
	for _, raw := range []string{
		deep(structjson.MaxReadDepth+1, `1`), deep(structjson.MaxReadDepth, `{}`),
		strings.Repeat(`[`, structjson.MaxReadDepth+1) + strings.Repeat(`]`, structjson.MaxReadDepth+1),
	} {
		require.ErrorIs(t, check(raw), structjson.ErrTooDeep)
	}
	for _, raw := range []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`, `{'a':1}`, `{a:1}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`, `{"a":0x1}`,
		`{"a":NaN}`, `{"a":Infinity}`, `{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":[1 2]}`, `{"a":[1,]}`,
		`{"a":[}`, `{"a":"x}`, `{"a":"x`, "{\"a\":\"\x01\"}", "{\"a\x1f\":1}", `{"a":"\q"}`, `{"a":"\u12"}`,
		`{"a":"\u12g4"}`, `{"a":"\`, `{"a":"\u`, `{} x`, `{}}`, `{}{}`, "\xef\xbb\xbf{}", "{}\x00", "\v{}",
	} {
		require.ErrorIs(t, check(raw), structjson.ErrSyntax, "%q", raw)
	}
	for _, raw := range []string{`{"a":1e400}`, `{"a":[-1e309]}`, `{"a":1e400,"a":1}`} {
		require.ErrorIs(t, check(raw), strconv.ErrRange, raw)
	}
}

//nolint:paralleltest // AllocsPerRun counts the allocations of every goroutine
func TestAppendStructProtoAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 64<<10)
	// A long string three levels down: 9 lengths of 2 bytes.
	big := `{"a":[{"b":{"k":"` + strings.Repeat("z", 300) + `"}}]}`
	for _, raw := range []string{flatPayload, nestedPayload, big} {
		in := []byte(raw)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			_, _ = structjson.AppendStructProto(buf[:0], in)
		}), raw)
	}
}

func BenchmarkStructProto(b *testing.B) {
	for name, raw := range map[string][]byte{"flat": []byte(flatPayload), "nested": []byte(nestedPayload)} {
		b.Run(name+"/FromJSON+Marshal", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				s, err := structjson.FromJSON(raw)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/AppendStructProto", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = structjson.AppendStructProto(buf[:0], raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
