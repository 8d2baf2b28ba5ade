package structjson_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchboard/switchboard/pkg/structjson"
)

// FuzzAppendStructProto: AppendStructProto accepts what FromJSON accepts and
// its bytes decode to the Struct FromJSON gives, after proto.Marshal; what
// FromJSON refuses it refuses too, leaving b as it was, and valid JSON too
// deep is ErrTooDeep for both.
func FuzzAppendStructProto(f *testing.F) {
	for _, seed := range []string{
		flatPayload, nestedPayload, `{}`, ` { "a" : [ 1 , { } , [ ] ] } `, `{"a":1,"a":{"b":2}}`,
		`{"n":[-0,1.5e-3,1E+300,1e400,123456789012345678901]}`, `{"s":"\ud83d\ude00\ud800\udc00\u0041\n\\\""}`,
		"{\"k\xff\":\"\xed\xa0\x80\"}", `{"a":tru}`, `{"a":01}`, `[1]`, `null`, `"s"`, `{"a":"` + string(make([]byte, 130)) + `"}`,
		deep(structjson.MaxReadDepth, `1`), deep(structjson.MaxReadDepth+1, `1`),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		t.Parallel()
		want, wantErr := structjson.FromJSON(raw)
		got, err := structjson.AppendStructProto([]byte("p"), raw)
		if wantErr != nil {
			require.Error(t, err, "FromJSON: %v", wantErr)
			require.Equal(t, "p", string(got))
			if json.Valid(raw) {
				require.Equal(t, errors.Is(wantErr, structjson.ErrTooDeep), errors.Is(err, structjson.ErrTooDeep), "%v / %v", wantErr, err)
			}
			return
		}
		require.NoError(t, err)
		require.Equal(t, "p", string(got[:1]))
		wire, err := proto.Marshal(want)
		require.NoError(t, err)
		var w, g structpb.Struct
		require.NoError(t, proto.Unmarshal(wire, &w))
		require.NoError(t, proto.Unmarshal(got[1:], &g))
		require.True(t, proto.Equal(&w, &g), "got %v, want %v", &g, &w)
	})
}
