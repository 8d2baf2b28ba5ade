package mcp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	ingestv1 "github.com/switchboard/switchboard/gen/switchboard/ingest/v1"
	queuev1 "github.com/switchboard/switchboard/gen/switchboard/queue/v1"
)

// An event's payload is text when it is UTF-8, base64 otherwise, and cut
// at the limit with a flag; a cut never splits a character.
func TestEventPayloadIsBounded(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		payload []byte
		field   string
		want    string
		cut     bool
	}{
		"text":             {[]byte(`{"ok":true}`), "payload", `{"ok":true}`, false},
		"long text":        {[]byte(strings.Repeat("a", 20)), "payload", strings.Repeat("a", 16), true},
		"cut in a rune":    {[]byte(strings.Repeat("a", 15) + "é"), "payload", strings.Repeat("a", 15), true}, // é: bytes 16-17
		"binary":           {[]byte{0xff, 0xfe, 0x00}, "payload_base64", "//4A", false},
		"binary, too long": {append([]byte{0xff, 0xfe}, make([]byte, 16)...), "payload_base64", "//4AAAAAAAAAAAAAAAAAAA==", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := &ingestv1.Event{Id: 7, Topic: "t", Payload: tc.payload}
			out, err := eventJSON(e, 16)
			require.NoError(t, err)
			require.Equal(t, tc.want, out[tc.field])
			require.Equal(t, "7", out["id"], "64-bit ids are decimal strings")
			if tc.cut {
				require.Equal(t, true, out["payload_truncated"])
			} else {
				require.NotContains(t, out, "payload_truncated")
			}
			require.Equal(t, tc.payload, e.GetPayload(), "the event itself is left alone")
		})
	}
}

// A todo's payload, result and progress over the limit become the start of
// their JSON, flagged; fields within it are left as objects.
func TestTodoFieldsAreBounded(t *testing.T) {
	t.Parallel()
	big, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("x", 100)})
	require.NoError(t, err)
	small, err := structpb.NewStruct(map[string]any{"n": 1})
	require.NoError(t, err)
	out, err := todoJSON(&queuev1.Todo{Id: 3, Payload: big, Result: small}, 32)
	require.NoError(t, err)
	require.Equal(t, `{"blob":"`+strings.Repeat("x", 23), out["payload"])
	require.Equal(t, true, out["payload_truncated"])
	require.Equal(t, map[string]any{"n": float64(1)}, out["result"])
	require.NotContains(t, out, "result_truncated")
	require.NotContains(t, out, "progress")
}

func TestPageSizeIsCapped(t *testing.T) {
	t.Parallel()
	require.Equal(t, int32(DefaultPageSize), pageSize(0))
	require.Equal(t, int32(7), pageSize(7))
	require.Equal(t, int32(MaxPageSize), pageSize(1000))
}

// The tool errors carry the canonical code name, and ids must be positive
// decimal integers.
func TestErrorsAndIDs(t *testing.T) {
	t.Parallel()
	_, err := parseID("id", "0")
	require.EqualError(t, err, `INVALID_ARGUMENT: id must be a positive decimal integer, got "0"`)
	id, err := parseID("lease_token", "9223372036854775807")
	require.NoError(t, err)
	require.Equal(t, int64(9223372036854775807), id, "a 63-bit lease token survives")
}
