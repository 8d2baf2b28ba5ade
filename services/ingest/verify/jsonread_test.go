package verify

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decoderMembers is what eachMember did with encoding/json's Decoder before
// it walked the bytes itself: the reference the fuzz target holds it to.
func decoderMembers(raw []byte, fn func(key string, value json.RawMessage) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if !fn(key, v) {
			return true
		}
	}
	return true
}

// decoderElement is element's Decoder-based reference.
func decoderElement(raw []byte, i int) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	for n := 0; dec.More(); n++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if n == i {
			return v
		}
	}
	return nil
}

type member struct {
	Key   string
	Value string
}

// members collects what walk hands fn, stopping after stop members (all
// when stop is negative).
func members(walk func([]byte, func(string, json.RawMessage) bool) bool, raw []byte, stop int) ([]member, bool) {
	var got []member
	ok := walk(raw, func(k string, v json.RawMessage) bool {
		got = append(got, member{k, string(v)})
		return stop < 0 || len(got) < stop
	})
	return got, ok
}

var jsonSeeds = []string{
	`{"type":"invoice.paid","data":{"object":{"id":"in_1","lines":[1,2,{"a":"}"}]}}}`,
	` { "a" : 1 , "b" : [ true , false , null ] , "c" : "x\"y\\" } `,
	`{"\u0074ype":"escaped key","type":"plain"}`,
	`{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":tru}`, `{"a":"\x01"}`, `{}`, `[]`, `[1,[2,3],{"k":"v"}]`,
	`{"a":{"b":[}]}}`, `{"a":"unterminated`, "{\"\xff\":1}", `{"a":-0.5e+3,"b":1e}`, `[1,]`, `[,1]`, `"s"`, ``,
}

// FuzzJSONWalk: on valid JSON, eachMember and element see exactly what
// the Decoder-based versions saw (members, values, where they stop). On
// anything else they may give up earlier, never later: the Decoder could
// hand over the start of a bad number ("0" of 01) before failing.
func FuzzJSONWalk(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		valid := json.Valid(raw)
		for _, stop := range []int{-1, n % 8} {
			want, wantOK := members(decoderMembers, raw, stop)
			got, gotOK := members(eachMember, raw, stop)
			if valid {
				require.Equal(t, wantOK, gotOK, "object ok for %q (stop %d)", raw, stop)
				require.Equal(t, want, got, "members of %q (stop %d)", raw, stop)
				continue
			}
			require.False(t, gotOK && !wantOK, "%q: accepted what the Decoder refused (stop %d)", raw, stop)
			require.LessOrEqual(t, len(got), len(want), "%q: more members than the Decoder saw", raw)
			require.Equal(t, append([]member{}, want[:len(got)]...), append([]member{}, got...), "members of %q (stop %d)", raw, stop)
		}
		i := n % 8
		want, got := decoderElement(raw, i), element(raw, i)
		if valid || got != nil {
			require.Equal(t, string(want), string(got), "element %d of %q", i, raw)
		}
	})
}

func TestJSONWalkSeeds(t *testing.T) {
	t.Parallel()
	got, ok := members(eachMember, []byte(jsonSeeds[2]), -1)
	require.True(t, ok)
	require.Equal(t, []member{{"type", `"escaped key"`}, {"type", `"plain"`}}, got)
	require.Equal(t, map[string]json.RawMessage{"type": json.RawMessage(`"plain"`)}, topLevel([]byte(jsonSeeds[2]), "type"))
	elem := element([]byte(jsonSeeds[10]), 2)
	require.JSONEq(t, `{"k":"v"}`, string(elem))
	require.Len(t, elem, len(`{"k":"v"}`), "the element's own bytes, nothing after it")
}

func BenchmarkTopLevel(b *testing.B) {
	body := []byte(`{"type":"invoice.paid","timestamp":"2026-12-04T20:00:00Z","data":{"id":"in_1","lines":[1,2,{"a":"}"}],"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if topLevel(body, "type") == nil {
			b.Fatal("no object")
		}
	}
}
