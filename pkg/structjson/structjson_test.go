package structjson_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchboard/switchboard/pkg/structjson"
)

func TestFromJSONMatchesProtojson(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"s":"é","n":1.5,"i":12345678901,"b":true,"z":null,"a":[1,"x",{"k":[]}],"o":{"p":{}}}`)
	got, err := structjson.FromJSON(raw)
	require.NoError(t, err)
	var want structpb.Struct
	require.NoError(t, protojson.Unmarshal(raw, &want))
	require.True(t, proto.Equal(&want, got), "got %v, want %v", got, &want)
}

func TestFromJSONRefusesWhatIsNotAnObject(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`null`, `[1]`, `"s"`, `{`, ``} {
		_, err := structjson.FromJSON([]byte(raw))
		require.Error(t, err, raw)
	}
}

func TestDepth(t *testing.T) {
	t.Parallel()
	cases := map[string]int{
		`1`: 0, `"[{"`: 0, `{}`: 1, `{"a":[1]}`: 2, `[[],[[]]]`: 3, `{"k":"\"}{["}`: 1, `{"a":{"b":{}},"c":[]}`: 3,
	}
	for raw, want := range cases {
		require.Equal(t, want, structjson.Depth([]byte(raw)), raw)
	}
}

func TestFromJSONRefusesWhatCannotBeDelivered(t *testing.T) {
	t.Parallel()
	nested := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat(`[`, n-1) + strings.Repeat(`]`, n-1) + `}`)
	}
	_, err := structjson.FromJSON(nested(structjson.MaxReadDepth))
	require.NoError(t, err)
	_, err = structjson.FromJSON(nested(structjson.MaxReadDepth + 1))
	require.ErrorIs(t, err, structjson.ErrTooDeep)
}
